// Generated WebSocket sessions: an endpoint of the service's table (or a path next to it),
// then frames: garbage before `auth`, bad `auth` frames, frames of the endpoint's own
// schema mutated after a good `auth`, binary frames, text that is not UTF-8, frames over
// the 1 MiB limit, and sessions that are valid throughout.
import * as fc from 'fast-check';
import { MAX_FRAME_BYTES, parseClientFrame, type WsEndpoint } from '../../../packages/protocol/src/index.js';
import { mutated } from './mutate.js';
import { deepJsonText, hostileString, invalidUtf8, randomBytes, weirdValue } from './weird-values.js';

export interface WsEndpointModel {
  readonly endpoint: WsEndpoint;
  readonly paths: readonly string[];
  /** Valid client frames of the endpoint (from its `clientFrames` schema). */
  readonly frames: fc.Arbitrary<unknown>;
}

export interface WsSurface {
  readonly endpoints: readonly WsEndpointModel[];
  /** A path to open instead of the endpoint's (the broker's sockets carry ids); default the endpoint's. */
  readonly pathFor?: (endpoint: WsEndpointModel) => fc.Arbitrary<string>;
  /** Tokens the endpoint accepts (`good`), and ones it must refuse. */
  readonly goodToken: (endpoint: WsEndpointModel) => fc.Arbitrary<{ token: string; label: string }>;
  readonly badToken: fc.Arbitrary<unknown>;
  /** Makes a frame harmless to run (the agent's commands), keeping its shape. */
  readonly defuse?: (frame: unknown) => unknown;
  /** Every session is refused (the broker's: no sandbox behind the generated ids). */
  readonly refusesAll?: boolean;
}

export type Frame =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'not-utf8'; readonly bytes: Buffer }
  | { readonly kind: 'binary'; readonly bytes: Buffer }
  | { readonly kind: 'oversized'; readonly bytes: number };

export interface WsCase {
  readonly endpoint: WsEndpointModel;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly frames: readonly Frame[];
  /** Whether a frame breaks the protocol: the server must answer it (error frame or close). */
  readonly violation: boolean;
  /** The first frame is `auth` with a token the endpoint accepts. */
  readonly authenticated: boolean;
  readonly description: string;
}

const text = (value: unknown): Frame => ({ kind: 'text', text: JSON.stringify(value) ?? 'undefined' });

/** Frames no endpoint accepts. */
const garbage: fc.Arbitrary<Frame> = fc.oneof(
  hostileString.map((value): Frame => ({ kind: 'text', text: value })),
  weirdValue.map(text),
  randomBytes(256).map((bytes): Frame => ({ kind: 'binary', bytes })),
  invalidUtf8.map((bytes): Frame => ({
    kind: 'not-utf8',
    bytes: Buffer.concat([Buffer.from('{"type":"'), bytes, Buffer.from('"}')]),
  })),
  deepJsonText.map((value): Frame => ({ kind: 'text', text: value })),
  fc.constantFrom<Frame>(
    { kind: 'text', text: '' },
    { kind: 'text', text: '{"type":"stdin","data":"x"' },
    { kind: 'text', text: '{"type":"ping","type":"auth"}' },
    { kind: 'binary', bytes: Buffer.alloc(0) },
  ),
  fc
    .integer({ min: MAX_FRAME_BYTES + 1, max: MAX_FRAME_BYTES + 4096 })
    .map((bytes): Frame => ({ kind: 'oversized', bytes })),
);

function describeFrame(frame: Frame): string {
  if (frame.kind === 'text')
    return JSON.stringify(
      frame.text.length > 100 ? `${frame.text.slice(0, 100)}…(${frame.text.length})` : frame.text,
    );
  if (frame.kind === 'oversized') return `oversized(${frame.bytes})`;
  return `${frame.kind}(${frame.bytes.toString('hex').slice(0, 40)})`;
}

/** Whether the agent's own parser (packages/protocol's frame-parse.ts) refuses the frame. */
export function refused(endpoint: WsEndpoint, frame: Frame): boolean {
  if (frame.kind !== 'text') return true;
  return !parseClientFrame(endpoint, frame.text).ok;
}

export function wsCase(surface: WsSurface): fc.Arbitrary<WsCase> {
  return fc.constantFrom(...surface.endpoints).chain((endpoint) => {
    const defuse = surface.defuse ?? ((frame: unknown) => frame);
    const valid = endpoint.frames.map((frame) => text(defuse(frame)));
    const mutatedFrame = mutated(endpoint.frames).map(({ value }) => text(defuse(value)));
    const goodAuth = surface
      .goodToken(endpoint)
      .map(({ token, label }) => ({ frame: text({ type: 'auth', token }), label }));
    const badAuth = fc.oneof(
      surface.badToken.map((token) => text({ type: 'auth', token })),
      mutated(fc.constant({ type: 'auth', token: 'x' })).map(({ value }) => text(value)),
    );
    const scenario = fc.oneof(
      fc.tuple(
        fc.constant('before auth'),
        fc.array(fc.oneof(garbage, valid), { minLength: 1, maxLength: 3 }),
      ),
      fc.tuple(
        fc.constant('bad auth'),
        fc.tuple(badAuth, fc.oneof(garbage, valid)).map(([a, b]) => [a, b]),
      ),
      fc.tuple(
        fc.constant('garbage after auth'),
        fc
          .tuple(goodAuth, fc.array(fc.oneof(garbage, mutatedFrame), { minLength: 1, maxLength: 3 }))
          .map(([a, rest]) => [a.frame, ...rest]),
      ),
      fc.tuple(
        fc.constant('valid session'),
        fc.tuple(goodAuth, fc.array(valid, { maxLength: 3 })).map(([a, rest]) => [a.frame, ...rest]),
      ),
    );
    const path =
      surface.pathFor?.(endpoint) ??
      fc.oneof(
        { arbitrary: fc.constantFrom(...endpoint.paths), weight: 12 },
        { arbitrary: fc.constantFrom(...endpoint.paths).map((p) => `${p}/`), weight: 1 },
        {
          arbitrary: fc
            .tuple(fc.constantFrom(...endpoint.paths), hostileString)
            .map(([p, q]) => `${p}?${encodeURIComponent(q.replace(/[\uD800-\uDFFF]/g, ''))}`),
          weight: 1,
        },
      );
    const headers = fc.oneof(
      { arbitrary: fc.constant<Record<string, string>>({}), weight: 12 },
      {
        arbitrary: fc.constantFrom<Record<string, string>>(
          { Origin: 'https://evil.example' },
          { Origin: 'null' },
          { 'Sec-WebSocket-Protocol': 'a,,b' },
        ),
        weight: 1,
      },
    );
    return fc
      .record({ scenario, path, headers })
      .map(({ scenario: [name, frames], path: chosen, headers: extra }) => {
        const [first] = frames;
        const authenticated = name === 'garbage after auth' || name === 'valid session';
        // Before auth every frame but a good `auth` is refused; after it, what the parser refuses.
        const violation =
          surface.refusesAll === true ||
          !authenticated ||
          frames.slice(1).some((frame) => refused(endpoint.endpoint, frame)) ||
          first === undefined;
        return {
          endpoint,
          path: chosen,
          headers: extra,
          frames,
          violation,
          authenticated,
          description: `${endpoint.endpoint} ${chosen.slice(0, 80)} ${name}: ${frames.map(describeFrame).join(', ')}${Object.keys(extra).length === 0 ? '' : ` headers ${JSON.stringify(extra)}`}`,
        };
      });
  });
}
