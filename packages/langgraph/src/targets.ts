import { randomUUID } from 'node:crypto';
import { SbxSandboxError } from './errors.js';
import { encodeInitialFiles, lazyBroker, DEFAULT_ACTOR_ID, type SbxSandboxOptions } from './options.js';
import { uploadFiles } from './file-ops.js';
import { currentRunTarget } from './run-config.js';
import { SessionPool, type ThreadSandbox } from './sessions.js';

/**
 * Which sandbox a backend call is for, and the backend's lifecycle: `new` (nothing
 * provisioned), `running`, `closed`. Single-sandbox mode holds one open sandbox; per-thread
 * mode resolves each call from its LangGraph run (pre-negotiated session, else thread_id,
 * else the default thread).
 */
export class SandboxTargets {
  readonly #pool: SessionPool;
  readonly #perThread: boolean;
  #threadId: string | undefined;
  #single: ThreadSandbox | undefined;
  #singleMode: 'ensure' | 'get' = 'ensure';
  #state: 'new' | 'running' | 'closed' = 'new';

  constructor(options: SbxSandboxOptions) {
    this.#perThread = options.perThread === true;
    this.#threadId = options.threadId;
    const files = encodeInitialFiles(options.initialFiles);
    this.#pool = new SessionPool({
      broker: lazyBroker(options.broker),
      actorId: options.actorId ?? DEFAULT_ACTOR_ID,
      ...(options.heartbeatIntervalMs === undefined
        ? {}
        : { heartbeatIntervalMs: options.heartbeatIntervalMs }),
      onOpen: async (sandbox) => seed(sandbox, files),
    });
  }

  get running(): boolean {
    return this.#state === 'running';
  }

  get threadId(): string | undefined {
    return this.#threadId;
  }

  get single(): ThreadSandbox | undefined {
    return this.#single;
  }

  /** Once only. Single-sandbox mode opens its sandbox now (`attachOnly`: it must exist). */
  async open(attachOnly: boolean): Promise<void> {
    if (this.#state !== 'new') {
      throw new SbxSandboxError('SbxSandbox is already initialized; make a new one', 'ALREADY_INITIALIZED');
    }
    this.#state = 'running';
    if (this.#perThread) return;
    this.#threadId ??= `thr_${randomUUID().replaceAll('-', '')}`;
    this.#singleMode = attachOnly ? 'get' : 'ensure';
    try {
      this.#single = await this.#pool.forThread(this.#threadId, this.#singleMode);
    } catch (err) {
      this.#state = 'closed';
      throw err;
    }
  }

  async close(): Promise<void> {
    if (this.#state === 'running') this.#state = 'closed';
    this.#single = undefined;
    await this.#pool.closeAll();
  }

  /** The sandbox of this call (or of `threadId`); throws for misuse and an unavailable sandbox. */
  async resolve(threadId?: string): Promise<ThreadSandbox> {
    if (this.#state !== 'running') {
      throw new SbxSandboxError(
        'SbxSandbox is not running: call initialize() first, or use SbxSandbox.create()',
        'NOT_INITIALIZED',
      );
    }
    if (this.#single !== undefined && threadId === undefined) {
      // Through the pool each time: a lost binding is renegotiated there, and may be a new sandbox.
      this.#single = await this.#pool.forThread(this.#single.threadId, this.#singleMode);
      return this.#single;
    }
    const run = currentRunTarget();
    if (threadId === undefined && run.session !== undefined) return this.#pool.forSession(run.session);
    const thread = threadId ?? run.threadId ?? this.#threadId;
    if (thread === undefined) {
      throw new SbxSandboxError(
        'no thread: call inside a LangGraph run with configurable.thread_id, or set threadId',
        'NO_THREAD',
      );
    }
    return this.#pool.forThread(thread);
  }

  /** As `resolve`, but an unavailable sandbox is a value (a throw would abort the agent run). */
  async reachable(): Promise<ThreadSandbox | { failure: string }> {
    try {
      return await this.resolve();
    } catch (err) {
      if (err instanceof SbxSandboxError && err.code === 'SANDBOX_UNAVAILABLE') {
        return { failure: `Error: ${err.message}` };
      }
      throw err;
    }
  }
}

async function seed(sandbox: ThreadSandbox, files: Array<[string, Uint8Array]>): Promise<void> {
  if (files.length === 0) return;
  const failed = (await uploadFiles(sandbox, files)).filter((r) => r.error !== null);
  if (failed.length > 0) {
    const list = failed.map((r) => `${r.path} (${String(r.error)})`).join(', ');
    throw new SbxSandboxError(`initial files not written: ${list}`, 'FILE_OPERATION_FAILED');
  }
}
