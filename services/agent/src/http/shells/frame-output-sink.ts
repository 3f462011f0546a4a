import { isUtf8 } from 'node:buffer';
import { WS_CLOSE_CODES, type StdinFrame } from '@sbx/protocol';
import type { OutputSink } from '../../domain/shells/shell-viewer.js';
import type { WsSession } from '../ws/ws-session.js';

/** RFC 6455 1013 "Try Again Later": dropped for lagging, or the shell limit is reached. */
export const TRY_AGAIN_LATER = 1013;

/** Output as protocol frames: UTF-8 text when the bytes are valid UTF-8, else base64. */
export function frameOutputSink(session: WsSession<'shell'>): OutputSink {
  return {
    get bufferedAmount() {
      return session.bufferedAmount;
    },
    sendOutput(data, onWritten) {
      session.send(
        isUtf8(data)
          ? { type: 'stdout', data: data.toString('utf8') }
          : { type: 'stdout', data: data.toString('base64'), encoding: 'base64' },
        () => onWritten(),
      );
    },
    sendExit(exit) {
      session.send({ type: 'exit', ...exit });
      session.close(WS_CLOSE_CODES.NORMAL, 'shell exited');
    },
    drop() {
      session.close(TRY_AGAIN_LATER, 'output backlog too large: reattach to replay');
    },
  };
}

export function stdinBytes(frame: StdinFrame): Buffer {
  return Buffer.from(frame.data, frame.encoding === 'base64' ? 'base64' : 'utf8');
}
