// One execute_code call on its way to its sandbox_invocations row and its answer:
// what is known from the start (who, what code), what the session adds (sandbox),
// and how it ended.
import type { CapDimension, ExecuteCodeError, ExecuteCodeResult, Scope } from '@sbx/protocol';
import { toTimestamp } from '@sbx/protocol';
import type { NewInvocation } from '../../store/index.js';
import type { CodeSession } from './code-sessions.js';
import type { CodeRunOutcome } from './code-runner.js';

export type CallOutcome =
  | { readonly kind: 'ran'; readonly run: CodeRunOutcome }
  | { readonly kind: 'cap'; readonly dimension: CapDimension; readonly resetsAt: Date }
  | {
      readonly kind: 'refused';
      readonly error: Exclude<ExecuteCodeError, 'SandboxCapExceeded'>;
      readonly message: string;
      readonly retryable: boolean;
    };

export interface DraftStart {
  readonly id: string;
  readonly startedAt: number;
  readonly tenantId: string;
  readonly agentId: string;
  readonly language: string;
  readonly codeHash: string;
  readonly scope?: Scope;
  readonly sessionId?: string;
}

const DAY_MS = 86_400_000;

export class InvocationDraft {
  #sessionId: string | null;
  #sandboxId: string | null = null;
  #scope: Scope | null;

  constructor(private readonly start: DraftStart) {
    this.#sessionId = start.sessionId ?? null;
    this.#scope = start.scope ?? null;
  }

  useSession(session: CodeSession): void {
    this.#sessionId = session.bindingId;
    this.#sandboxId = session.sandboxId;
    this.#scope = session.scope;
  }

  finish(outcome: CallOutcome, endedAt: number): ExecuteCodeResult {
    const common = {
      invocation_id: this.start.id,
      sandbox_id: this.#sandboxId,
      duration_ms: Math.max(0, Math.round(endedAt - this.start.startedAt)),
    };
    switch (outcome.kind) {
      case 'ran': {
        const { run } = outcome;
        return {
          ...common,
          ok: run.exit_status === 'ok',
          exit_status: run.exit_status,
          stdout: run.stdout,
          stderr: run.stderr,
          stdout_truncated: run.stdout_truncated,
          stderr_truncated: run.stderr_truncated,
          exit_code: run.exit_code,
          duration_ms: run.duration_ms,
        };
      }
      case 'cap':
        return {
          ...common,
          ...noOutput,
          exit_status: 'cap_exceeded',
          error: 'SandboxCapExceeded',
          error_message: `the ${outcome.dimension} cap of execute_code is reached; it resets at ${toTimestamp(outcome.resetsAt)}`,
          dimension: outcome.dimension,
          resets_at: toTimestamp(outcome.resetsAt),
          retryable: true,
        };
      case 'refused':
        return {
          ...common,
          ...noOutput,
          exit_status: 'provisioning',
          error: outcome.error,
          error_message: outcome.message,
          retryable: outcome.retryable,
        };
      default:
        return unreachable(outcome);
    }
  }

  row(outcome: CallOutcome, result: ExecuteCodeResult, retentionDays: number): NewInvocation {
    const run = outcome.kind === 'ran' ? outcome.run : undefined;
    const createdAt = new Date(this.start.startedAt);
    return {
      id: this.start.id,
      createdAt,
      tenantId: this.start.tenantId,
      agentId: this.start.agentId,
      sessionId: this.#sessionId,
      sandboxId: this.#sandboxId,
      scopeType: this.#scope?.type ?? null,
      scopeId: this.#scope?.id ?? null,
      language: this.start.language,
      executedCodeHash: this.start.codeHash,
      stdoutBytes: run?.stdout_bytes ?? 0,
      stderrBytes: run?.stderr_bytes ?? 0,
      stdoutTruncated: result.stdout_truncated,
      stderrTruncated: result.stderr_truncated,
      exitStatus: result.exit_status,
      failureReason: result.ok ? null : failureReason(result),
      durationMs: result.duration_ms,
      purgeAfter: new Date(createdAt.getTime() + retentionDays * DAY_MS),
    };
  }
}

const noOutput = {
  ok: false,
  stdout: '',
  stderr: '',
  stdout_truncated: false,
  stderr_truncated: false,
  exit_code: null,
} as const;

function failureReason(result: ExecuteCodeResult): string {
  if (result.error !== undefined) return `${result.error}: ${result.error_message ?? ''}`.slice(0, 1000);
  if (result.exit_status === 'timeout') return 'the code ran past its timeout and was killed';
  if (result.exit_status === 'oom') return 'the code ran out of memory';
  return `the code exited with ${result.exit_code === null ? 'a signal' : `status ${result.exit_code}`}`;
}

function unreachable(value: never): never {
  throw new Error(`unexpected call outcome ${JSON.stringify(value)}`);
}
