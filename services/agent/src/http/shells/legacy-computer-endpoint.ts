import { isUtf8 } from 'node:buffer';
import { SbxError, WS_CLOSE_CODES } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { ShellRegistry } from '../../domain/shells/shell-registry.js';
import type { ShellSession } from '../../domain/shells/shell-session.js';
import type { OutputSink } from '../../domain/shells/shell-viewer.js';
import type { EndpointHandler, WsRoute, WsSession } from '../ws/ws-session.js';
import { TRY_AGAIN_LATER } from './frame-output-sink.js';

/** The `thread_id` of a token good for any room (docs/protocol.md#legacy-endpoints). */
const WILDCARD_ROOM = '*';
const LEGACY_SIZE = { cols: 80, rows: 24 } as const;
/** Input typed before the room's shell is up waits, up to this much. */
const MAX_EARLY_INPUT_BYTES = 1024 * 1024;

/** Legacy clients read raw terminal output: text when it is UTF-8, binary messages otherwise. */
function rawOutputSink(session: WsSession<'shell'>): OutputSink {
  return {
    get bufferedAmount() {
      return session.bufferedAmount;
    },
    sendOutput(data, onWritten) {
      if (!session.isOpen) return;
      const text = isUtf8(data);
      session.socket.send(text ? data.toString('utf8') : Buffer.from(data), { binary: !text }, () =>
        onWritten(),
      );
    },
    sendExit() {
      session.close(WS_CLOSE_CODES.NORMAL, 'shell exited');
    },
    drop() {
      session.close(TRY_AGAIN_LATER, 'output backlog too large: reconnect to replay');
    },
  };
}

interface LegacyDeps {
  readonly registry: ShellRegistry;
  readonly logger: Logger;
  readonly rooms: Map<string, string>;
}

/**
 * The legacy checks of `?room=…&elevated=…` (docs/protocol.md#legacy-endpoints); the room,
 * or undefined (socket closed) when refused. Capability tokens carry the thread as their room
 * (there is no `room` claim).
 */
function admit(session: WsSession<'shell'>, logger: Logger): string | undefined {
  const claims = session.capability.claims;
  const room = session.url.searchParams.get('room') ?? '';
  if (room === '' || (claims.thread_id !== WILDCARD_ROOM && claims.thread_id !== room)) {
    logger.warn({ sub: claims.sub, jti: claims.jti, room }, 'legacy shell: unauthorized room access');
    session.close(WS_CLOSE_CODES.POLICY_VIOLATION, 'Unauthorized Room Access');
    return undefined;
  }
  // No capability scope or claim grants elevation, so anything but elevated=false is refused.
  const elevated = session.url.searchParams.get('elevated');
  if (elevated !== null && elevated !== 'false') {
    logger.warn({ sub: claims.sub, jti: claims.jti, room }, 'legacy shell: elevation refused');
    session.close(WS_CLOSE_CODES.POLICY_VIOLATION, 'Elevated access not granted');
    return undefined;
  }
  return room;
}

async function forgetWhenExited(
  rooms: Map<string, string>,
  room: string,
  shell: ShellSession,
): Promise<void> {
  await shell.whenExited;
  if (rooms.get(room) === shell.id) rooms.delete(room);
}

async function roomShell(deps: LegacyDeps, room: string, requestedBy: string): Promise<ShellSession> {
  const known = deps.rooms.get(room);
  const existing = known === undefined ? undefined : deps.registry.get(known);
  if (existing !== undefined && existing.exit === undefined) return existing;
  const shell = await deps.registry.create({ size: LEGACY_SIZE, requestedBy });
  deps.rooms.set(room, shell.id);
  void forgetWhenExited(deps.rooms, room, shell);
  return shell;
}

/**
 * `WS /computer` (only with `legacyEndpoints`): the token in the query, raw text both
 * ways, one persistent shell per room that a reconnect picks up again.
 */
function openLegacy(session: WsSession<'shell'>, deps: LegacyDeps): EndpointHandler<'shell'> {
  let detach: (() => void) | undefined;
  let closed = false;
  let shell: ShellSession | undefined;
  let early: Buffer[] = [];
  let earlyBytes = 0;
  const connect = async (room: string): Promise<void> => {
    try {
      const found = await roomShell(deps, room, session.capability.claims.sub);
      if (closed) return;
      shell = found;
      const viewer = found.attach(rawOutputSink(session));
      detach = () => found.detach(viewer);
      for (const input of early) found.write(input);
      early = [];
    } catch (err) {
      const error = SbxError.from(err);
      const code = error.code === 'RATE_LIMITED' ? TRY_AGAIN_LATER : WS_CLOSE_CODES.INTERNAL_ERROR;
      session.close(code, error.message);
    }
  };
  const room = admit(session, deps.logger);
  if (room !== undefined) void connect(room);
  return {
    onFrame: () => undefined,
    onText: (text) => {
      const input = Buffer.from(text, 'utf8');
      if (shell !== undefined) {
        shell.write(input);
        return;
      }
      earlyBytes += input.length;
      if (earlyBytes > MAX_EARLY_INPUT_BYTES) session.close(WS_CLOSE_CODES.MESSAGE_TOO_BIG, 'too much input');
      else early.push(input);
    },
    onClose: () => {
      closed = true;
      detach?.();
    },
  };
}

export function legacyComputerRoute(registry: ShellRegistry, logger: Logger): WsRoute<'shell'> {
  const deps: LegacyDeps = { registry, logger, rooms: new Map() };
  return {
    paths: ['/computer'],
    endpoint: 'shell',
    anyOf: ['shell'],
    auth: 'query',
    rawFrames: true,
    open: (session) => openLegacy(session, deps),
  };
}
