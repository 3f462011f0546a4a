import path from 'node:path';
import { SbxError, WS_CLOSE_CODES, type WatchStartFrame } from '@sbx/protocol';
import { describeSpecial } from '../../domain/files/entry-info.js';
import { TreeWatcher, type WatchEvent } from '../../domain/files/watch/tree-watcher.js';
import type { EndpointHandler, WsRoute, WsSession } from '../ws/ws-session.js';
import type { FilesDeps } from './files-deps.js';

type WatchSession = WsSession<'watch'>;

function sendEvents(
  deps: FilesDeps,
  session: WatchSession,
  events: readonly WatchEvent[],
  stop: () => void,
): void {
  for (const event of events) {
    if (!session.isOpen) return;
    if (session.bufferedAmount > deps.settings.maxWatchBacklogBytes) {
      // Dropping events silently would leave the client with a wrong picture; it must rescan.
      stop();
      session.sendError(
        new SbxError('RATE_LIMITED', 'watch events are not being read fast enough; reconnect and rescan'),
      );
      session.close(WS_CLOSE_CODES.POLICY_VIOLATION, 'watch event backlog exceeded');
      return;
    }
    session.send({ type: 'event', ...event });
  }
}

/** Resolves the start frame's path with the guard and starts watching it (a directory, or one file). */
async function startWatcher(
  deps: FilesDeps,
  session: WatchSession,
  frame: WatchStartFrame,
  stop: () => void,
): Promise<TreeWatcher> {
  const target = deps.guard.parse(frame.path);
  const resolved = await deps.guard.resolveExisting(target);
  const isDirectory = resolved.stats.isDirectory();
  if (!isDirectory && !resolved.stats.isFile()) {
    throw new SbxError(
      'FORBIDDEN',
      `${target.display} is ${describeSpecial(resolved.stats)}; it cannot be watched`,
    );
  }
  const watcher = new TreeWatcher({
    hostDir: isDirectory ? resolved.host : resolved.dir,
    displayDir: isDirectory ? target.display : path.posix.dirname(target.display),
    recursive: isDirectory && frame.recursive === true,
    ...(isDirectory ? {} : { only: { name: resolved.name, display: target.display } }),
    debounceMs: deps.settings.watchDebounceMs,
    maxDirectories: deps.settings.maxWatchedDirectories,
    onEvents: (events) => sendEvents(deps, session, events, stop),
    onEnd: (error) => {
      stop();
      if (error !== undefined) session.sendError(error);
      session.close(
        WS_CLOSE_CODES.NORMAL,
        error === undefined ? 'the watched path was removed' : 'watching failed',
      );
    },
  });
  try {
    await watcher.start();
  } catch (err) {
    watcher.close();
    throw err;
  }
  return watcher;
}

function openWatch(deps: FilesDeps, session: WatchSession): EndpointHandler<'watch'> {
  let watcher: TreeWatcher | undefined;
  let starting = false;
  const stop = (): void => {
    if (watcher === undefined) return;
    watcher.close();
    deps.watchers.delete(watcher);
    watcher = undefined;
  };
  return {
    async onFrame(frame) {
      switch (frame.type) {
        case 'start': {
          if (watcher !== undefined || starting) {
            throw new SbxError(
              'CONFLICT',
              'this connection is already watching a path; open another connection',
            );
          }
          starting = true;
          try {
            watcher = await startWatcher(deps, session, frame, stop);
          } finally {
            starting = false;
          }
          deps.watchers.add(watcher);
          if (session.isOpen) session.send({ type: 'ready' });
          else stop();
          return;
        }
        case 'close':
          stop();
          session.close(WS_CLOSE_CODES.NORMAL, 'closed by the client');
          return;
      }
    },
    onClose: stop,
  };
}

/** `WS /v1/files/watch`: file events for a path, to keep an editor and an agent in step. */
export function fileWatchRoute(deps: FilesDeps): WsRoute<'watch'> {
  return {
    paths: ['/v1/files/watch'],
    endpoint: 'watch',
    anyOf: ['fs:ro'],
    open: (session) => openWatch(deps, session),
  };
}
