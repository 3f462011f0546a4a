import { DirectoryListing, PathInfo } from '@sbx/protocol';
import { FileWatch, type WatchOptions } from './file-watch.js';
import { httpCall, httpJson, type CallOptions, type HttpEndpoint } from './http-client.js';
import { answerCutOff } from './http-errors.js';
import { abortReason } from './retry.js';
import type { SocketContext } from './ws-channel.js';

export interface WriteOptions extends CallOptions {
  /** Write only if the file's ETag still matches (optimistic concurrency). */
  readonly ifMatch?: string;
}

/**
 * The sandbox's files, by sandbox path: the same path means the same file to the files
 * API, exec and shells. A relative path (`a/b.txt`, `.` for the workspace itself) is
 * relative to the workspace; an absolute one is what the sandbox's processes see, anywhere
 * in the sandbox (`/workspace/a/b.txt` under bubblewrap, the host path with
 * `LOCAL_ISOLATION=none`; `/tmp/x`; `/etc/os-release`). The sandbox user's permissions
 * decide, as for its processes: a write to a read-only place is a `ForbiddenError` with the
 * sandbox's reason ("read-only file system", "permission denied"), and `/proc` is not
 * served (`ForbiddenError`; read it with exec). Answers (`PathInfo.path`,
 * `DirectoryListing.path`, watch events' `path` and `old_path`) always give the absolute
 * form, e.g. `/workspace/a/b.txt`; the workspace itself is `/workspace`.
 * `SandboxClient.info()` and `BrokerSession.workspacePath` say where the workspace is.
 */
export class FilesApi {
  constructor(
    private readonly endpoint: HttpEndpoint,
    private readonly sockets: SocketContext,
  ) {}

  /**
   * Watches a file or directory (`recursive`: its whole tree) over a WebSocket that is
   * reopened when it drops. Resolves once watching; iterate it, or pass `onEvent`. Events
   * name absolute sandbox paths whatever form `path` was given in.
   */
  watch(path: string, options: WatchOptions = {}): Promise<FileWatch> {
    return FileWatch.open(this.sockets, path, options);
  }

  /** The whole file; a connection lost mid-body is a TransportError, never a shorter file. */
  async read(path: string, options: CallOptions = {}): Promise<Uint8Array> {
    const response = await this.#download(path, options, false);
    try {
      return new Uint8Array(await response.arrayBuffer());
    } catch (err) {
      if (options.signal?.aborted === true) throw abortReason(options.signal);
      throw answerCutOff(`read ${path}`, err);
    }
  }

  async readText(path: string, options: CallOptions = {}): Promise<string> {
    return new TextDecoder().decode(await this.read(path, options));
  }

  /**
   * Streams the file; the timeout covers the answer's headers, not the whole body. A
   * connection lost mid-body errors the stream with a TransportError.
   */
  async readStream(path: string, options: CallOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const response = await this.#download(path, options, true);
    if (response.body === null) return new ReadableStream({ start: (c) => c.close() });
    return typedBody(response.body, (err) =>
      options.signal?.aborted === true ? abortReason(options.signal) : answerCutOff(`read ${path}`, err),
    );
  }

  /** Writes atomically (bytes, text or a stream; a stream body is sent once, never retried). */
  write(
    path: string,
    data: Uint8Array | string | ReadableStream<Uint8Array>,
    options: WriteOptions = {},
  ): Promise<PathInfo> {
    const request = {
      method: 'POST',
      path: 'v1/files/upload',
      query: { path },
      body: typeof data === 'string' ? new TextEncoder().encode(data) : data,
      headers: ifMatchHeader(options.ifMatch),
      idempotent: true,
      what: `write ${path}`,
    } as const;
    return httpJson(this.endpoint, request, (v) => PathInfo.parse(v), options);
  }

  list(path: string, options: CallOptions = {}): Promise<DirectoryListing> {
    const request = {
      method: 'GET',
      path: 'v1/files/list',
      query: { path },
      idempotent: true,
      what: `list ${path}`,
    } as const;
    return httpJson(this.endpoint, request, (v) => DirectoryListing.parse(v), options);
  }

  stat(path: string, options: CallOptions = {}): Promise<PathInfo> {
    const request = {
      method: 'GET',
      path: 'v1/files/stat',
      query: { path },
      idempotent: true,
      what: `stat ${path}`,
    } as const;
    return httpJson(this.endpoint, request, (v) => PathInfo.parse(v), options);
  }

  mkdir(path: string, options: CallOptions & { readonly parents?: boolean } = {}): Promise<PathInfo> {
    const body = { json: { path, parents: options.parents ?? false } };
    const request = {
      method: 'POST',
      path: 'v1/files/mkdir',
      body,
      idempotent: true,
      what: `mkdir ${path}`,
    } as const;
    return httpJson(this.endpoint, request, (v) => PathInfo.parse(v), options);
  }

  /** Not retried after a transport failure: the first attempt may have moved it already. */
  move(
    from: string,
    to: string,
    options: CallOptions & { readonly overwrite?: boolean } = {},
  ): Promise<PathInfo> {
    const body = { json: { from, to, overwrite: options.overwrite ?? false } };
    const request = {
      method: 'POST',
      path: 'v1/files/move',
      body,
      idempotent: false,
      what: `move ${from}`,
    } as const;
    return httpJson(this.endpoint, request, (v) => PathInfo.parse(v), options);
  }

  async remove(path: string, options: CallOptions & { readonly recursive?: boolean } = {}): Promise<void> {
    const query = { path, recursive: String(options.recursive ?? false) };
    const request = {
      method: 'DELETE',
      path: 'v1/files',
      query,
      idempotent: false,
      what: `remove ${path}`,
    } as const;
    await httpCall(this.endpoint, request, options);
  }

  #download(path: string, options: CallOptions, stream: boolean): Promise<Response> {
    const request = {
      method: 'GET',
      path: 'v1/files/download',
      query: { path },
      idempotent: true,
      streamResponse: stream,
      what: `read ${path}`,
    } as const;
    return httpCall(this.endpoint, request, options);
  }
}

/** `body` with its read failures (undici's bare `TypeError: terminated`) as `toError` says. */
function typedBody(
  body: ReadableStream<Uint8Array>,
  toError: (err: unknown) => Error,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await reader.read();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (err) {
        controller.error(toError(err));
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

function ifMatchHeader(etag: string | undefined): Record<string, string> {
  return etag === undefined ? {} : { 'if-match': etag };
}
