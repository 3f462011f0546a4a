import { randomUUID } from 'node:crypto';
import {
  BaseSandbox,
  type DeleteResult,
  type ExecuteResponse,
  type FileDownloadResponse,
  type FileUploadResponse,
  type GlobResult,
  type GrepResult,
  type LsResult,
  type ReadResult,
} from 'deepagents';
import { SbxSandboxError } from './errors.js';
import { runCommand, type ExecuteLimits } from './execute.js';
import {
  downloadFiles,
  isTextPath,
  listDirectory,
  readTextLines,
  removePath,
  uploadFiles,
} from './file-ops.js';
import { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS, type SbxSandboxOptions } from './options.js';
import { SandboxTargets } from './targets.js';

/**
 * A deepagents sandbox backend on the sbx platform: each LangGraph thread gets its own
 * sandbox from the broker (actor `agent`), shared with the humans of that thread. Follows
 * deepagents' providers: the constructor provisions nothing, `initialize()` (or `create`)
 * does. `execute`, uploads/downloads and `ls`/`read`/`delete` use the sandbox's file and exec
 * APIs; `grep`/`glob` keep BaseSandbox's shell versions (find, stat, grep in the sandbox).
 * Paths are the sandbox's own: relative to the workspace, or absolute anywhere in it (`/tmp`).
 */
export class SbxSandbox extends BaseSandbox {
  readonly #targets: SandboxTargets;
  readonly #limits: ExecuteLimits;
  readonly #placeholderId = `sbx-${randomUUID()}`;
  #attachOnly = false;

  constructor(options: SbxSandboxOptions = {}) {
    super();
    this.#targets = new SandboxTargets(options);
    this.#limits = {
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    };
  }

  /** A running backend; with `initialFiles`, it resolves once every file is written. */
  static async create(options: SbxSandboxOptions = {}): Promise<SbxSandbox> {
    const sandbox = new SbxSandbox(options);
    await sandbox.initialize();
    return sandbox;
  }

  /** Reattaches to the existing sandbox of thread `threadId` (never creates one). */
  static async fromId(
    threadId: string,
    options: Omit<SbxSandboxOptions, 'threadId' | 'perThread'> = {},
  ): Promise<SbxSandbox> {
    const sandbox = new SbxSandbox({ ...options, threadId });
    sandbox.#attachOnly = true;
    await sandbox.initialize();
    return sandbox;
  }

  /** The sandbox's id once running in single-sandbox mode; a stable placeholder otherwise. */
  get id(): string {
    return this.#targets.single?.sandboxId ?? this.#placeholderId;
  }

  get isRunning(): boolean {
    return this.#targets.running;
  }

  /** The fixed thread: single-sandbox mode's, or a per-thread backend's default. */
  get threadId(): string | undefined {
    return this.#targets.threadId;
  }

  /** The broker session this backend holds (single-sandbox mode, once running). */
  get sessionId(): string | undefined {
    return this.#targets.single?.sessionId;
  }

  /** Where the sandbox's processes see the workspace (single-sandbox mode, once running). */
  get workspacePath(): string {
    const single = this.#targets.single;
    if (single === undefined) {
      throw new SbxSandboxError('workspacePath needs a running single-sandbox SbxSandbox', 'NOT_INITIALIZED');
    }
    return single.workspacePath;
  }

  /** Opens the sandbox (single-sandbox mode) or readies the backend (per-thread). Once only. */
  async initialize(): Promise<void> {
    await this.#targets.open(this.#attachOnly);
  }

  /** Releases every session this backend opened; the last binding of a sandbox ends it. */
  async close(): Promise<void> {
    await this.#targets.close();
  }

  /** The workspace of a thread's sandbox (opening it), for the agent's system prompt. */
  async workspacePathFor(threadId?: string): Promise<string> {
    return (await this.#targets.resolve(threadId)).workspacePath;
  }

  async execute(command: string): Promise<ExecuteResponse> {
    const target = await this.#targets.reachable();
    if ('failure' in target) return { output: target.failure, exitCode: 1, truncated: false };
    return runCommand(target, command, this.#limits);
  }

  async uploadFiles(files: Array<[string, Uint8Array]>): Promise<FileUploadResponse[]> {
    return uploadFiles(await this.#targets.resolve(), files);
  }

  async downloadFiles(paths: string[]): Promise<FileDownloadResponse[]> {
    return downloadFiles(await this.#targets.resolve(), paths);
  }

  override async ls(path: string): Promise<LsResult> {
    const target = await this.#targets.reachable();
    return 'failure' in target ? { error: target.failure } : listDirectory(target, path);
  }

  override async read(filePath: string, offset = 0, limit = 500): Promise<ReadResult> {
    const target = await this.#targets.reachable();
    if ('failure' in target) return { error: target.failure };
    if (!isTextPath(filePath)) return super.read(filePath, offset, limit);
    const from = Number.isFinite(offset) ? Math.max(0, Math.floor(offset)) : 0;
    const count = Number.isFinite(limit) ? Math.max(0, Math.floor(limit)) : 0;
    return readTextLines(target, filePath, from, count);
  }

  override async delete(filePath: string): Promise<DeleteResult> {
    const target = await this.#targets.reachable();
    return 'failure' in target ? { error: target.failure } : removePath(target, filePath);
  }

  /**
   * A path of `/` (deepagents' default when the model gives none) searches the workspace, not
   * the whole sandbox root: the root is readable, but a search of every system file is slow
   * and buries the work in noise. Any other path, `/tmp` too, is searched as given.
   */
  override async grep(
    pattern: string,
    path?: string | null,
    glob?: string | null,
    maxCount?: number | null,
  ): Promise<GrepResult> {
    const base = await this.#searchBase(path);
    return 'error' in base ? base : super.grep(pattern, base.path, glob ?? null, maxCount ?? null);
  }

  override async glob(pattern: string, path?: string): Promise<GlobResult> {
    const base = await this.#searchBase(path);
    return 'error' in base ? base : super.glob(pattern, base.path);
  }

  async #searchBase(path: string | null | undefined): Promise<{ path: string } | { error: string }> {
    if (path !== undefined && path !== null && path !== '/' && path !== '') return { path };
    const target = await this.#targets.reachable();
    return 'failure' in target ? { error: target.failure } : { path: target.workspacePath };
  }
}
