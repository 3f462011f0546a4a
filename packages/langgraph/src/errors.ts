import { SandboxError } from 'deepagents';

/**
 * Codes of `SbxSandboxError`: deepagents' common ones (NOT_INITIALIZED, ALREADY_INITIALIZED, …)
 * plus ours. `NO_THREAD`: a per-thread backend was called outside a LangGraph run and has no
 * default thread. `SANDBOX_UNAVAILABLE`: the broker could not give the thread a sandbox.
 */
export type SbxSandboxErrorCode =
  'NOT_INITIALIZED' | 'ALREADY_INITIALIZED' | 'NO_THREAD' | 'SANDBOX_UNAVAILABLE' | 'FILE_OPERATION_FAILED';

/**
 * The package's one error type. It extends deepagents' `SandboxError` so code written for
 * its providers (`SandboxError.isInstance(err)`, `err.code`) handles ours unchanged. It is
 * thrown only for misuse and lifecycle failures: a command's failure or timeout, and a file
 * operation's failure, are values, never throws (a throw aborts the whole agent run).
 */
export class SbxSandboxError extends SandboxError {
  override readonly name = 'SbxSandboxError';

  constructor(message: string, code: SbxSandboxErrorCode, cause?: unknown) {
    super(message, code, cause instanceof Error ? cause : undefined);
    // SandboxError's constructor pins its own prototype, which would hide this subclass.
    Object.setPrototypeOf(this, new.target.prototype);
  }
}
