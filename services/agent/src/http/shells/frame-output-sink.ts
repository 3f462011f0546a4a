import { WS_CLOSE_CODES, type StdinFrame } from '@sbx/protocol';
import type { OutputSink } from '../../domain/shells/shell-viewer.js';
import type { WsSession } from '../ws/ws-session.js';
import { FrameBuffers } from './frame-buffers.js';
import { encodeStdoutFrame, STDOUT_FRAME_BYTES } from './stdout-frame.js';

/** RFC 6455 1013 "Try Again Later": dropped for lagging, or the shell limit is reached. */
export const TRY_AGAIN_LATER = 1013;

export type OutputMode = 'json' | 'binary';

/**
 * Output as protocol frames (UTF-8 text when the bytes are valid UTF-8, else base64), or,
 * when the client asked for `output: 'binary'`, as binary messages of raw bytes: no
 * decoding, no JSON on either side, which is what terminal relays want. Either way each
 * frame is written from a reused buffer (frame-buffers.ts), and JSON frames are encoded
 * from the bytes without decoding them (stdout-frame.ts).
 */
export function frameOutputSink(session: WsSession<'shell'>, mode: OutputMode = 'json'): OutputSink {
  const buffers = new FrameBuffers();
  const binary = mode === 'binary';
  return {
    get bufferedAmount() {
      return session.bufferedAmount;
    },
    ...(binary ? {} : { frameBytes: STDOUT_FRAME_BYTES }),
    sendOutput(data, onWritten) {
      if (!session.isOpen) {
        onWritten();
        return;
      }
      // Frames pumped in one go (bulk output) leave in one writev rather than one each.
      session.coalesceWrites();
      const { frame, written } = binary ? buffers.copy(data) : encodeStdoutFrame(data, buffers);
      session.socket.send(frame, { binary }, () => {
        written();
        onWritten();
      });
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
