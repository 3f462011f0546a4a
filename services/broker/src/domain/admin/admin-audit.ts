// Every admin request leaves an audit row: who (the caller), what (`admin.<op>`),
// the target, the outcome (`ok` or the error code, refusals included) and the
// client address. Written directly, not batched, so an operator querying the
// audit sees their own previous action; a failed write is logged, never answered.
import type { Logger } from '@sbx/service-kit';
import type { AuditRepository } from '../../store/audit-repository.js';
import type { Principal } from '../auth/principal.js';

export interface AdminTarget {
  /** `sandbox`, `tenant`, `client`, `api_key`; absent for listings. */
  readonly kind?: string | undefined;
  readonly id?: string | undefined;
}

export interface AdminActionRecord {
  readonly action: string;
  readonly outcome: string;
  readonly requestId: string;
  readonly principal: Principal;
  readonly target: AdminTarget;
  readonly clientAddress: string | undefined;
  /** Filters of a listing, a note: small and secret-free. */
  readonly detail?: Record<string, string | number | boolean | null> | undefined;
}

export class AdminAudit {
  constructor(
    private readonly sink: Pick<AuditRepository, 'append'>,
    private readonly logger: Logger,
  ) {}

  async record(entry: AdminActionRecord): Promise<void> {
    const { principal, target } = entry;
    const event = {
      action: entry.action,
      outcome: entry.outcome,
      requestId: entry.requestId,
      tenantId: principal.tenantId,
      callerId: principal.id,
      callerType: principal.type,
      clientId: principal.clientId ?? null,
      sandboxId: target.kind === 'sandbox' ? (target.id ?? null) : null,
      scopes: [...principal.scopes],
      detail: {
        ...entry.detail,
        target_kind: target.kind ?? null,
        target_id: target.id ?? null,
        client_address: entry.clientAddress ?? null,
        via: principal.via,
        key_id: principal.keyId ?? null,
      },
    };
    try {
      await this.sink.append(event);
    } catch (err) {
      this.logger.error({ err, audit: event }, 'admin audit row could not be written');
    }
  }
}
