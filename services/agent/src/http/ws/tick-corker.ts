import type { Duplex } from 'node:stream';

/**
 * A function that corks `stream` until the end of the current tick: everything written
 * meanwhile goes to the kernel in one writev when the tick ends. Calling it again within the
 * tick changes nothing. For bulk output sent as several WebSocket frames at once (ws corks
 * and uncorks around each frame itself, which would make one syscall per frame).
 */
export function tickCorker(stream: Duplex): () => void {
  let corked = false;
  const release = (): void => {
    corked = false;
    stream.uncork();
  };
  return () => {
    if (corked || stream.destroyed) return;
    corked = true;
    stream.cork();
    process.nextTick(release);
  };
}
