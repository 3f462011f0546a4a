// The inventory and the forced actions behind `/admin/sandboxes` and `/admin/sessions`.
import {
  SbxError,
  toTimestamp,
  type AdminActionResponse,
  type AdminSandboxDetail,
  type AdminSandboxQuery,
  type AdminSessionQuery,
} from '@sbx/protocol';
import type { SandboxProvider } from '../../providers/provider.js';
import type { AdminInventoryQueries } from '../../store/admin-inventory-queries.js';
import type { AuditContext } from '../audit/audit-trail.js';
import { decodePosition, encodePosition } from './admin-cursor.js';
import {
  stateHistory,
  toAdminSandbox,
  toAdminSession,
  toAdminAgent,
  toAuditEvent,
  toTokenIssuance,
} from './admin-presenter.js';
import { forceMove, type SandboxActionDeps } from './sandbox-actions.js';
import { deadlineOf, TERMINATE } from './state-deadlines.js';

export interface AdminSandboxesDeps extends SandboxActionDeps {
  readonly queries: AdminInventoryQueries;
  /** `inspect`: what the agent of a running sandbox reports, for the detail. */
  readonly provider: Pick<SandboxProvider, 'stop' | 'destroy' | 'inspect'>;
}

type ActionContext = AuditContext & { readonly note?: string | undefined };

const date = (value: string | undefined): Date | undefined =>
  value === undefined ? undefined : new Date(value);
const notFound = (id: string) => new SbxError('SANDBOX_NOT_FOUND', `sandbox ${id} does not exist`);

export class AdminSandboxes {
  constructor(private readonly deps: AdminSandboxesDeps) {}

  async list(query: AdminSandboxQuery) {
    const page = await this.deps.queries.listSandboxes(
      {
        tenantId: query.tenant_id,
        ownerId: query.owner_id,
        state: query.state,
        provider: query.provider,
        threadId: query.thread_id,
        createdAfter: date(query.created_after),
        createdBefore: date(query.created_before),
      },
      { after: decodePosition('sandboxes', query.cursor), limit: query.limit },
    );
    return {
      items: page.items.map((row) => toAdminSandbox(row, this.deps.timers)),
      next_cursor: encodePosition('sandboxes', page.next),
    };
  }

  async listSessions(query: AdminSessionQuery) {
    const page = await this.deps.queries.listBindings(
      {
        tenantId: query.tenant_id,
        ownerId: query.owner_id,
        live: query.state === undefined ? undefined : query.state === 'live',
        sandboxId: query.sandbox_id,
        threadId: query.thread_id,
        actorId: query.actor_id,
        createdAfter: date(query.created_after),
        createdBefore: date(query.created_before),
      },
      { after: decodePosition('sessions', query.cursor), limit: query.limit },
    );
    return { items: page.items.map(toAdminSession), next_cursor: encodePosition('sessions', page.next) };
  }

  async get(id: string): Promise<AdminSandboxDetail> {
    const detail = await this.deps.queries.sandboxDetail(id);
    if (detail === null) throw notFound(id);
    // Only an agent that should be up is asked; a silent one costs the detail at most ~2 s.
    const running = detail.sandbox.state === 'active' || detail.sandbox.state === 'idle';
    const report = running ? await this.deps.provider.inspect(id) : undefined;
    return {
      ...toAdminSandbox(detail.sandbox, this.deps.timers),
      bindings: detail.bindings.map(toAdminSession),
      state_history: stateHistory(detail.sandbox),
      tokens: detail.tokens.map(toTokenIssuance),
      recent_audit: detail.audit.map(toAuditEvent),
      agent: report === undefined ? null : toAdminAgent(report, new Date(this.deps.clock())),
    };
  }

  async terminate(id: string, context: ActionContext): Promise<AdminActionResponse> {
    const sandbox = await this.find(id);
    if (sandbox.state === 'terminated') throw new SbxError('CONFLICT', `sandbox ${id} is already terminated`);
    return this.answer(id, await forceMove(this.deps, sandbox, TERMINATE, context));
  }

  /** 409 before the state's deadline: recover pushes stuck sandboxes, it does not end healthy ones early. */
  async recover(id: string, context: ActionContext): Promise<AdminActionResponse> {
    const sandbox = await this.find(id);
    const deadline = deadlineOf(sandbox, this.deps.timers);
    if (deadline === null)
      throw new SbxError('CONFLICT', `sandbox ${id} is ${sandbox.state}: nothing to recover`);
    if (deadline.at.getTime() > this.deps.clock()) {
      throw new SbxError(
        'CONFLICT',
        `sandbox ${id} is ${sandbox.state} until ${toTimestamp(deadline.at)}, its deadline; terminate it to end it now`,
        { details: { state: sandbox.state, deadline: toTimestamp(deadline.at) } },
      );
    }
    const move = { ...deadline.move, reason: `admin_recover:${deadline.move.reason}` };
    return this.answer(id, await forceMove(this.deps, sandbox, move, context));
  }

  private async find(id: string) {
    const sandbox = await this.deps.queries.findSandbox(id);
    if (sandbox === null) throw notFound(id);
    return sandbox;
  }

  private async answer(
    id: string,
    moved: { from: AdminActionResponse['from']; to: AdminActionResponse['to'] },
  ) {
    return { ...moved, sandbox: toAdminSandbox(await this.find(id), this.deps.timers) };
  }
}
