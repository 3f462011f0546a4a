import { isUtf8 } from 'node:buffer';
import { WS_CLOSE_CODES, type StdinFrame } from '@sbx/protocol';
import type { OutputSink } from '../../domain/shells/shell-viewer.js';
import type { WsSession } from '../ws/ws-session.js';
import { FrameBuffers } from './frame-buffers.js';

/** RFC 6455 1013 "Try Again Later": dropped for lagging, or the shell limit is reached. */
export const TRY_AGAIN_LATER = 1013;

export type OutputMode = 'json' | 'binary';

/**
 * Output as protocol frames (UTF-8 text when the bytes are valid UTF-8, else base64), or,
 * when the client asked for `output: 'binary'`, as binary messages of raw bytes: no
 * decoding, no JSON on either side, which is what terminal relays want.
 */
export function frameOutputSink(session: WsSession<'shell'>, mode: OutputMode = 'json'): OutputSink {
  const sendJson = (data: Buffer, onWritten: () => void): void =>
    session.send(
      isUtf8(data)
        ? { type: 'stdout', data: data.toString('utf8') }
        : { type: 'stdout', data: data.toString('base64'), encoding: 'base64' },
      () => onWritten(),
    );
  const buffers = new FrameBuffers();
  const sendBinary = (data: Buffer, onWritten: () => void): void => {
    if (!session.isOpen) {
      onWritten();
      return;
    }
    const { frame, written } = buffers.copy(data);
    session.socket.send(frame, { binary: true }, () => {
      written();
      onWritten();
    });
  };
  return {
    get bufferedAmount() {
      return session.bufferedAmount;
    },
    sendOutput: mode === 'binary' ? sendBinary : sendJson,
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
