// execute_code for agents (docs/execute-code.md): policy, quota, the thread's sandbox,
// the redactor's readiness, the run, and exactly one sandbox_invocations row, in that
// order. Every call is checked and recorded on its own, also when several share a turn.
import { createHash, randomUUID } from 'node:crypto';
import { SbxError, type ExecuteCodeLanguage, type ExecuteCodeResult, type Scope } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { ExecuteCodeQuotaRepository, NewInvocation, TenantPolicyRecord } from '../../store/index.js';
import type { AuditContext } from '../audit/audit-trail.js';
import { hasCallerScope } from '../auth/principal.js';
import type { SessionService } from '../sessions/session-service.js';
import type { SessionWithToken } from '../sessions/session-core.js';
import { AgentUnreachable, type CodeRunner } from './code-runner.js';
import { CodeSessions, codeSessionOf, type CodeSession } from './code-sessions.js';
import { InvocationDraft, type CallOutcome } from './invocation-draft.js';
import { QuotaReservations } from './quota-reservations.js';
import { quotaWindows, resetsAtOf } from './quota-windows.js';
import { RedactorReadiness } from './redactor-readiness.js';

export type ExecuteTarget =
  | { readonly kind: 'scope'; readonly scope: Scope }
  | { readonly kind: 'session'; readonly sessionId: string };

export interface ExecuteCodeCall {
  readonly code: string;
  readonly language: ExecuteCodeLanguage;
  readonly timeout_ms: number;
}

export interface ExecutedCall {
  readonly result: ExecuteCodeResult;
  readonly recorded: Promise<void>;
}

export interface ExecuteCodeDeps {
  readonly sessions: SessionService;
  readonly policies: { getTenantPolicy(tenantId: string): Promise<TenantPolicyRecord> };
  readonly quota: Pick<ExecuteCodeQuotaRepository, 'take' | 'giveBack'>;
  /** How long a unit taken ahead for an agent's next call is held before it goes back. */
  readonly quotaHoldMs?: number;
  /** Where the row goes as the answer leaves: the journal (`recordInvocation`). */
  readonly invocations: { record(row: NewInvocation): Promise<void> };
  readonly runner: CodeRunner;
  readonly logger: Logger;
  readonly now: () => number;
  /** Address-space limit of one run, within the tenant's sandbox memory. */
  readonly memoryLimitMb?: number;
}

const DEFAULT_MEMORY_LIMIT_MB = 512;

export class ExecuteCodeService {
  readonly #readiness: RedactorReadiness;
  readonly #quota: QuotaReservations;
  readonly #sessions = new CodeSessions();

  constructor(private readonly deps: ExecuteCodeDeps) {
    this.#readiness = new RedactorReadiness(deps.runner);
    this.#quota = new QuotaReservations(deps.quota, deps.logger, deps.quotaHoldMs);
  }

  /**
   * The call's result, and its sandbox_invocations row on its way: the caller answers first
   * and then awaits `recorded`, so the row's commit is not part of the call's latency.
   * `recorded` never rejects (a row that could not be written is logged as an error); the
   * journal's drain waits for the rows still being written.
   */
  async execute(context: AuditContext, target: ExecuteTarget, call: ExecuteCodeCall): Promise<ExecutedCall> {
    const { principal } = context;
    if (!hasCallerScope(principal, 'exec:sandbox'))
      throw new SbxError('FORBIDDEN', 'execute_code needs the caller scope exec:sandbox');
    // A session that is not the caller's is a 404 before anything is counted.
    if (target.kind === 'session')
      await this.deps.sessions.get(context, { kind: 'id', id: target.sessionId });
    const draft = new InvocationDraft({
      id: randomUUID(),
      startedAt: this.deps.now(),
      tenantId: principal.tenantId,
      agentId: principal.id,
      language: call.language,
      codeHash: createHash('sha256').update(call.code).digest('hex'),
      ...(target.kind === 'scope' ? { scope: target.scope } : { sessionId: target.sessionId }),
    });
    const policy = await this.deps.policies.getTenantPolicy(principal.tenantId);
    const outcome = await this.#run(context, target, call, policy, draft);
    const result = draft.finish(outcome, this.deps.now());
    const row = draft.row(outcome, result, policy.invocationRetentionDays);
    const recorded = this.deps.invocations.record(row).catch((err: unknown) => {
      this.deps.logger.error({ err, invocation_id: row.id }, 'execute_code invocation row not written');
    });
    return { result, recorded };
  }

  /** Gives back every quota unit taken ahead (shutdown; the journal drains the rows). */
  drain(): Promise<void> {
    return this.#quota.drain();
  }

  async #run(
    context: AuditContext,
    target: ExecuteTarget,
    call: ExecuteCodeCall,
    policy: TenantPolicyRecord,
    draft: InvocationDraft,
  ): Promise<CallOutcome> {
    if (!policy.sandboxEnabled)
      return refused('SandboxDisabled', 'sandboxes are disabled for this tenant', false);
    const windows = quotaWindows(
      context.principal.tenantId,
      context.principal.id,
      { tenantDaily: policy.executeCodeDailyCap, agentHourly: policy.executeCodeAgentHourlyCap },
      this.deps.now(),
    );
    const take = await this.#quota.take(windows);
    if (!take.taken)
      return { kind: 'cap', dimension: take.dimension, resetsAt: resetsAtOf(windows, take.dimension) };
    const key = sessionKey(context, target);
    const kept = this.#sessions.get(key, this.deps.now());
    if (kept !== undefined) {
      draft.useSession(kept);
      const outcome = await this.#runIn(kept, call, policy, false);
      if (outcome !== 'unreachable') return outcome;
      // The kept session went stale (suspended, replaced, revoked): negotiate it again.
      this.#sessions.drop(key);
    }
    let session: CodeSession;
    try {
      session = codeSessionOf(await this.#negotiate(context, target), this.deps.now());
    } catch (err) {
      if (!(err instanceof SbxError)) throw err;
      return refused('SandboxProvisioning', err.message, err.retryable);
    }
    draft.useSession(session);
    const outcome = await this.#runIn(session, call, policy, true);
    if (outcome === 'unreachable')
      return refused('SandboxProvisioning', 'the sandbox agent did not answer; try again shortly', true);
    if (outcome.kind === 'ran') this.#sessions.keep(key, session);
    return outcome;
  }

  #negotiate(context: AuditContext, target: ExecuteTarget): Promise<SessionWithToken> {
    if (target.kind === 'session')
      return this.deps.sessions.refresh(
        context,
        { kind: 'id', id: target.sessionId },
        { capabilities: ['process'] },
      );
    return this.deps.sessions.negotiate(context, {
      scope: target.scope,
      // Creating a sandbox takes write:sandbox, as on every route; with exec:sandbox alone
      // the code runs in the scope's sandbox only when it exists already.
      mode: hasCallerScope(context.principal, 'write:sandbox') ? 'ensure' : 'attach_only',
      requested_capabilities: ['process'],
      provider_preference: 'auto',
      mvp: false,
    });
  }

  /** 'unreachable': the agent did not answer (or refused the token); the caller decides what that means. */
  async #runIn(
    session: CodeSession,
    call: ExecuteCodeCall,
    policy: TenantPolicyRecord,
    fresh: boolean,
  ): Promise<CallOutcome | 'unreachable'> {
    if (session.environment === 'default_public' && policy.environment === 'internal_only')
      return refused(
        'SandboxProvisioning',
        "this sandbox has network access but the tenant is now internal-only; release the thread's sandbox to get one without",
        false,
      );
    const url = session.httpBaseUrl;
    if (url === null) return refused('SandboxProvisioning', 'the sandbox has no dataplane address yet', true);
    try {
      const readiness = await this.#readiness.check(session.sandboxId, url, session.token);
      if (!readiness.ready) {
        this.deps.logger.error(
          { sandbox_id: session.sandboxId, reason: readiness.reason },
          'execute_code readiness failed',
        );
        return refused('SandboxProvisioning', `${readiness.reason}; no user code ran`, false);
      }
      const memoryLimitMb = Math.min(this.deps.memoryLimitMb ?? DEFAULT_MEMORY_LIMIT_MB, policy.maxMemoryMb);
      const run = await this.deps.runner.run(url, session.token, {
        ...call,
        timeoutMs: call.timeout_ms,
        memoryLimitMb,
      });
      return { kind: 'ran', run };
    } catch (err) {
      if (!(err instanceof AgentUnreachable)) throw err;
      if (fresh)
        this.deps.logger.warn(
          { sandbox_id: session.sandboxId, err },
          'execute_code could not reach the agent',
        );
      return 'unreachable';
    }
  }
}

/** One kept session per caller and target: a thread's, or a session id's. */
function sessionKey(context: AuditContext, target: ExecuteTarget): string {
  const { principal } = context;
  const named =
    target.kind === 'session' ? `session\n${target.sessionId}` : `${target.scope.type}\n${target.scope.id}`;
  return `${principal.tenantId}\n${principal.id}\n${named}`;
}

function refused(
  error: 'SandboxDisabled' | 'SandboxProvisioning',
  message: string,
  retryable: boolean,
): CallOutcome {
  return { kind: 'refused', error, message, retryable };
}
