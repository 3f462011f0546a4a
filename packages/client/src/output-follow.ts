import { FollowExitLine, FollowOutputLine } from '@sbx/protocol';
import type { ProcessExitStatus } from './dataplane-types.js';
import { bytesOf } from './frame-bytes.js';
import { TransportError } from './http-errors.js';
import { ProtocolError, problemOf, routeOf } from './protocol-error.js';
import { abortReason } from './retry.js';

/** Bytes one of the process's streams wrote, exactly. */
export interface OutputChunk {
  readonly stream: 'stdout' | 'stderr';
  readonly data: Buffer;
}

/** The NDJSON lines of a response body, as they arrive. */
async function* linesOf(body: ReadableStream<Uint8Array>): AsyncGenerator<string, void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let pending = '';
  try {
    for (let read = await readCutOff(reader); !read.done; read = await readCutOff(reader)) {
      pending += decoder.decode(read.value, { stream: true });
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) if (line !== '') yield line;
    }
    pending += decoder.decode();
    if (pending !== '') yield pending;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/**
 * Why a followed stream can end early, and what to do. The agent cuts off a reader that
 * falls more than its follow buffer (4 MiB by default) behind, so it never holds output for
 * one slow client. No offsets are given: following again replays what the agent still
 * buffers (or its newest `tail` bytes), which may repeat output already read or miss some.
 */
const CUT_OFF_ADVICE =
  'the stream was cut off before the process exited (the sandbox drops a reader that falls too far behind, or the connection failed); ' +
  'read it without pausing, or call output() again: it may repeat output already read or miss some (no offsets are given)';

function cutOff(cause?: unknown): TransportError {
  return new TransportError(`read process output: ${CUT_OFF_ADVICE}`, cause === undefined ? {} : { cause });
}

/** A read of the body; a failed one (the agent destroyed the response) is the SDK's typed error. */
async function readCutOff(
  reader: ReadableStreamDefaultReader<Uint8Array>,
): ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']> {
  try {
    return await reader.read();
  } catch (err) {
    throw cutOff(err);
  }
}

function parseLine(line: string, route: string): FollowOutputLine | FollowExitLine {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    throw malformedLine(route, err);
  }
  const output = FollowOutputLine.safeParse(value);
  if (output.success) return output.data;
  const exit = FollowExitLine.safeParse(value);
  if (exit.success) return exit.data;
  const isOutput = typeof value === 'object' && value !== null && 'stream' in value;
  throw malformedLine(route, isOutput ? output.error : exit.error);
}

function malformedLine(route: string, cause: unknown): ProtocolError {
  const message = `read process output: ${route} sent a line that ${problemOf(cause)}`;
  return new ProtocolError(message, { route, cause });
}

/**
 * A background process's output as it is written (`exec.output(id, { follow: true })`):
 * what the agent still buffers first (or the newest `tail` bytes of it), then each chunk
 * as it comes, until the process exits; `exit` then says how. The request starts when
 * iteration does. Leaving the loop early closes the request. A stream cut off before the
 * exit line (a dropped connection, or a reader too slow for the agent) makes iteration
 * throw a TransportError; following again may repeat or miss output (no offsets are given).
 */
export class OutputFollow implements AsyncIterable<OutputChunk> {
  #iterated = false;
  #done!: { resolve: (exit: ProcessExitStatus) => void; reject: (err: unknown) => void };
  /** How the process ended; settles when iteration reaches the end (or fails). */
  readonly exit: Promise<ProcessExitStatus>;

  constructor(
    private readonly request: () => Promise<Response>,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.exit = new Promise((resolve, reject) => (this.#done = { resolve, reject }));
    this.exit.catch(() => undefined);
  }

  [Symbol.asyncIterator](): AsyncIterator<OutputChunk> {
    if (this.#iterated) throw new TypeError('a followed output can be iterated once');
    this.#iterated = true;
    return this.#chunks();
  }

  async *#chunks(): AsyncGenerator<OutputChunk, void> {
    let settled = false;
    try {
      const response = await this.request();
      if (response.body === null) throw cutOff();
      const route = routeOf('GET', response.url);
      for await (const line of linesOf(response.body)) {
        const parsed = parseLine(line, route);
        if ('stream' in parsed) {
          yield { stream: parsed.stream, data: bytesOf(parsed) };
        } else {
          settled = true;
          this.#done.resolve(parsed);
          return;
        }
      }
      throw cutOff();
    } catch (err) {
      const error = this.signal?.aborted === true ? abortReason(this.signal) : err;
      settled = true;
      this.#done.reject(error);
      throw error;
    } finally {
      // The loop was left early (`break`): the exit will not be read.
      if (!settled)
        this.#done.reject(new DOMException('the output was not followed to the end', 'AbortError'));
    }
  }
}
