// The audit trail of negotiation: one row per negotiation, refresh, heartbeat,
// release, sandbox state change and token issuance, refusals included (their
// outcome is the error code). Writing is awaited but never fails the request:
// by the time most rows are written the side effect (a sandbox, a token) has
// happened, and answering 500 would hide it from the caller. A row that cannot
// be written is logged instead, with the same fields.
import { SbxError } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { NewAuditEvent } from '../../store/index.js';
import type { Principal } from '../auth/principal.js';
import type { BrokerMetrics } from '../metrics/broker-metrics.js';

export const AUDIT_ACTIONS = [
  'session.negotiate',
  'session.get',
  'session.refresh',
  'session.heartbeat',
  'session.release',
  'token.issue',
  'token.revoke',
  'sandbox.provisioning',
  'sandbox.active',
  'sandbox.claimed',
  'sandbox.resumed',
  'sandbox.failed',
  'sandbox.terminated',
  'sandbox.destroy',
  'execute_code',
  'sandbox.relay',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Who asked, in which request. */
export interface AuditContext {
  readonly requestId: string;
  readonly principal: Principal;
}

/** What the row is about; every field optional because refusals know little. */
export interface AuditSubject {
  readonly actor?: { readonly type: string; readonly id: string } | undefined;
  readonly scope?: { readonly type: string; readonly id: string } | undefined;
  readonly sessionId?: string | undefined;
  readonly sandboxId?: string | undefined;
  readonly jti?: string | undefined;
  readonly scopes?: readonly string[] | undefined;
  /** Small, secret-free facts (a failure reason, a TTL). */
  readonly detail?: Record<string, string | number | boolean> | undefined;
}

export interface AuditSink {
  append(event: NewAuditEvent): Promise<unknown>;
  /** A row of a call already answered, which may wait a moment to share a commit. */
  appendSoon?(event: NewAuditEvent): Promise<unknown>;
}

export const OUTCOME_OK = 'ok';

/** The outcome recorded for a failure: its protocol error code. */
export function outcomeOf(err: unknown): string {
  return SbxError.from(err).code;
}

export class AuditTrail {
  constructor(
    private readonly sink: AuditSink,
    private readonly logger: Logger,
    private readonly metrics?: Pick<BrokerMetrics, 'audited'>,
  ) {}

  async record(
    action: AuditAction,
    outcome: string,
    context: AuditContext | undefined,
    subject: AuditSubject = {},
  ): Promise<void> {
    await this.#write(toEvent(action, outcome, context, subject), false);
  }

  /** The row of a call whose answer has left: it may share a commit with the next ones. */
  async recordAnswered(
    action: AuditAction,
    outcome: string,
    context: AuditContext | undefined,
    subject: AuditSubject = {},
  ): Promise<void> {
    await this.#write(toEvent(action, outcome, context, subject), true);
  }

  async #write(event: NewAuditEvent, answered: boolean): Promise<void> {
    this.metrics?.audited(event.action, event.outcome);
    try {
      await (answered && this.sink.appendSoon !== undefined
        ? this.sink.appendSoon(event)
        : this.sink.append(event));
    } catch (err) {
      this.logger.error({ err, audit: event }, 'audit row could not be written');
    }
  }
}

function toEvent(
  action: AuditAction,
  outcome: string,
  context: AuditContext | undefined,
  subject: AuditSubject,
): NewAuditEvent {
  const principal = context?.principal;
  return {
    action,
    outcome,
    requestId: context?.requestId ?? null,
    tenantId: principal?.tenantId ?? null,
    callerId: principal?.id ?? null,
    callerType: principal?.type ?? null,
    clientId: principal?.clientId ?? null,
    actorType: subject.actor?.type ?? null,
    actorId: subject.actor?.id ?? null,
    scopeType: subject.scope?.type ?? null,
    scopeId: subject.scope?.id ?? null,
    sessionId: subject.sessionId ?? null,
    sandboxId: subject.sandboxId ?? null,
    jti: subject.jti ?? null,
    scopes: subject.scopes ?? [],
    detail: subject.detail ?? null,
  };
}
