// An MCP host starts `sbx mcp` and waits for the answer to `initialize`, which some hosts give
// only a few seconds. Loading the SDK and building its schemas takes most of the start-up, so
// the first request, when it is `initialize`, is answered at once with what the SDK's server
// would answer (server-info.ts; a test compares the two), and the SDK then gets the same
// request replayed, its own answer to it dropped: from there on it speaks for itself.
import { PassThrough, Writable, type Readable } from 'node:stream';
import type { RunningStdio, StdioOptions } from './server.js';
import {
  SERVER_CAPABILITIES,
  SERVER_INFO,
  SERVER_INSTRUCTIONS,
  SUPPORTED_PROTOCOL_VERSIONS,
} from './server-info.js';

type RequestId = string | number;

/** The first line of `stdin` and everything after it, without losing a byte. */
async function firstLine(stdin: Readable): Promise<{ line: string | undefined; rest: PassThrough }> {
  const rest = new PassThrough();
  const chunks: Buffer[] = [];
  const line = await new Promise<string | undefined>((resolve) => {
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      const joined = Buffer.concat(chunks);
      const at = joined.indexOf(0x0a);
      if (at === -1) return;
      stdin.off('data', onData).off('end', onEnd);
      stdin.pause();
      rest.write(joined);
      resolve(joined.subarray(0, at).toString('utf8'));
    };
    const onEnd = (): void => {
      rest.end(Buffer.concat(chunks));
      resolve(undefined);
    };
    stdin.on('data', onData).once('end', onEnd);
  });
  if (line !== undefined) stdin.pipe(rest);
  return { line, rest };
}

/** The SDK's answer to an `initialize` request, or undefined when `line` is not one. */
export function initializeAnswer(line: string): { id: RequestId; text: string } | undefined {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof message !== 'object' || message === null) return undefined;
  const { method, id, params } = { method: undefined, id: undefined, params: undefined, ...message };
  if (method !== 'initialize' || (typeof id !== 'string' && typeof id !== 'number')) return undefined;
  const requested =
    typeof params === 'object' && params !== null
      ? (params as { protocolVersion?: unknown }).protocolVersion
      : undefined;
  const protocolVersion =
    typeof requested === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(requested)
      ? requested
      : SUPPORTED_PROTOCOL_VERSIONS[0];
  const result = {
    protocolVersion,
    capabilities: SERVER_CAPABILITIES,
    serverInfo: SERVER_INFO,
    instructions: SERVER_INSTRUCTIONS,
  };
  return { id, text: `${JSON.stringify({ result, jsonrpc: '2.0', id })}\n` };
}

function isAnswerTo(id: RequestId, text: string): boolean {
  try {
    const message: unknown = JSON.parse(text);
    return (
      typeof message === 'object' &&
      message !== null &&
      'id' in message &&
      message.id === id &&
      !('method' in message)
    );
  } catch {
    return false;
  }
}

/** Forwards every line to `out` but the first answer to request `id` (already given). */
function droppingAnswerTo(id: RequestId, out: Writable): Writable {
  let dropped = false;
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      // The SDK's transport writes one message a call: the answer is its own chunk.
      if (!dropped && isAnswerTo(id, chunk.toString('utf8'))) {
        dropped = true;
        done();
        return;
      }
      out.write(chunk, done);
    },
  });
}

/** serveStdio, with `initialize` answered before the SDK is loaded. */
export async function serveStdioEarly(options: StdioOptions): Promise<RunningStdio> {
  const stdout = options.stdout ?? process.stdout;
  const { line, rest } = await firstLine(options.stdin ?? process.stdin);
  const early = line === undefined ? undefined : initializeAnswer(line);
  if (early !== undefined) stdout.write(early.text);
  const { serveStdio } = await import('./server.js');
  return serveStdio({
    ...options,
    stdin: rest,
    stdout: early === undefined ? stdout : droppingAnswerTo(early.id, stdout),
  });
}
