// One WebSocket fuzz run: each generated session is played on its own connection and
// judged; the target's memory read after a warm-up batch and at the end.
import { WebSocket } from 'ws';
import { ERROR_TABLE, MAX_FRAME_BYTES } from '../../../packages/protocol/src/index.js';
import { CEILING_MS, draw } from './fuzz-settings.js';
import { runFuzz, type RunReport } from './fuzz-run.js';
import type { Target } from './targets.js';
import { envelopeProblem } from './verdict.js';
import { wsCase, type Frame, type WsCase, type WsSurface } from './ws-cases.js';

type Played =
  | { readonly kind: 'refused'; readonly status: number; readonly body: string; readonly service: boolean }
  | { readonly kind: 'hang'; readonly stage: string }
  | {
      readonly kind: 'closed';
      readonly code: number;
      /** Error frames' envelopes, as sent. */
      readonly errors: readonly string[];
      /** Whether the server answered the violation (an error frame, or its own close). */
      readonly answered: boolean;
    };

function sendFrame(ws: WebSocket, frame: Frame): void {
  if (frame.kind === 'text') ws.send(frame.text);
  else if (frame.kind === 'oversized') ws.send(Buffer.alloc(frame.bytes, 0x61), { binary: false });
  else ws.send(frame.bytes, { binary: frame.kind === 'binary' });
}

/** Plays one session: its frames, then (when the server has not closed) `close` and the closing handshake. */
function play(url: string, input: WsCase): Promise<Played> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, {
      headers: input.headers,
      perMessageDeflate: false,
      handshakeTimeout: CEILING_MS,
    });
    const errors: string[] = [];
    let stage = 'handshake';
    let answered = false;
    let wake: (() => void) | undefined;
    const done = (played: Played): void => {
      clearTimeout(timer);
      resolve(played);
    };
    const timer = setTimeout(() => {
      ws.terminate();
      done({ kind: 'hang', stage });
    }, CEILING_MS);
    ws.on('error', () => {});
    ws.on('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        done({
          kind: 'refused',
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString('utf8'),
          // The service's own refusals carry a request id; the ws library's (a malformed handshake) do not.
          service: res.headers['x-request-id'] !== undefined,
        }),
      );
    });
    ws.on('message', (data: Buffer, binary) => {
      if (binary) return;
      const message = data.toString('utf8');
      if (!message.startsWith('{"type":"error"')) return;
      errors.push(message);
      answered = true;
      wake?.();
    });
    ws.on('close', (code) => {
      answered = true;
      wake?.();
      done({ kind: 'closed', code, errors, answered });
    });
    ws.on('open', () => {
      stage = 'frames';
      for (const frame of input.frames) if (ws.readyState === ws.OPEN) sendFrame(ws, frame);
      const finish = (): void => {
        stage = 'closing';
        if (ws.readyState !== ws.OPEN) return;
        // `close` ends a shell or program for good; the socket's close alone would leave a shell to reattach.
        if (input.authenticated) ws.send('{"type":"close"}');
        ws.close(1000);
      };
      if (!input.violation || answered) return finish();
      stage = 'awaiting an answer to the violation';
      wake = finish;
    });
  });
}

/** Close codes a session may end with (docs/protocol.md, "Close codes"), given what it sent. */
function allowedCloses(input: WsCase): Set<number> {
  const codes = new Set([1000, 1005, 1008, 1013, 4401, 4403, 4404]);
  // RFC 6455 §8.1: a text frame that is not UTF-8 fails the connection with 1007, before the service sees it.
  if (input.frames.some((frame) => frame.kind === 'not-utf8')) codes.add(1007);
  const size = (frame: Frame): number =>
    frame.kind === 'oversized'
      ? frame.bytes
      : frame.kind === 'text'
        ? Buffer.byteLength(frame.text)
        : frame.bytes.length;
  if (input.frames.some((frame) => size(frame) > MAX_FRAME_BYTES)) codes.add(1009);
  return codes;
}

function judge(input: WsCase, played: Played): { kind: string; problem?: string } {
  if (played.kind === 'hang')
    return { kind: 'hang', problem: `no end within ${CEILING_MS} ms (${played.stage})` };
  if (played.kind === 'refused') {
    const kind = `upgrade ${played.status}`;
    if (played.status >= 500)
      return { kind, problem: `upgrade answered ${played.status}: ${played.body.slice(0, 200)}` };
    const problem = played.service ? envelopeProblem(played.body, played.status) : undefined;
    return problem === undefined ? { kind } : { kind, problem: `upgrade refusal: ${problem}` };
  }
  const kind = `close ${played.code}`;
  if (!allowedCloses(input).has(played.code)) return { kind, problem: `closed with ${played.code}` };
  for (const frame of played.errors) {
    const code = (JSON.parse(frame) as { error?: { code?: keyof typeof ERROR_TABLE } }).error?.code;
    const status = code === undefined ? undefined : ERROR_TABLE[code]?.status;
    // An exec start's own timeout is its documented TIMEOUT error (docs/protocol.md, "Exec socket").
    const documented = code === 'TIMEOUT' && input.endpoint.endpoint === 'exec';
    if (status === undefined || (status >= 500 && !documented))
      return { kind, problem: `error frame ${frame.slice(0, 300)}` };
  }
  if (input.violation && !played.answered) return { kind, problem: 'a protocol violation went unanswered' };
  return { kind };
}

export function runWsFuzz(
  stream: string,
  target: Target,
  wsUrl: string,
  surface: WsSurface,
  options: { readonly count: number; readonly warmUp: number; readonly concurrency: number },
): Promise<RunReport> {
  const arbitrary = wsCase(surface);
  return runFuzz(target, options, async (index) => {
    const input = draw(arbitrary, stream, index);
    return { ...judge(input, await play(`${wsUrl}${input.path}`, input)), description: input.description };
  });
}
