// Whether the broker can listen where its environment says, asked before anything slow or
// lasting happens: a first start spends half a minute on migrations, and a port found taken
// only after them cost that wait for a one-line answer. The answer is a line the operator
// acts on (which variable to set), never a stack trace.
import { createServer } from 'node:net';
import { errnoCode } from '@sbx/service-kit';

/** A place the broker cannot listen on; its message says what to change. */
export class ListenError extends Error {
  override readonly name = 'ListenError';
}

/**
 * Binds `host:port` and lets it go again. The broker's own listen comes after the
 * migrations: a port taken in between still fails there, with the same message.
 */
export async function checkPortFree(host: string, port: number): Promise<void> {
  // Port 0 asks the system for a free port: nothing to check.
  if (port === 0) return;
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen(port, host, () => resolve());
    });
  } catch (err) {
    throw listenProblem(err, host, port);
  }
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/** What a failed listen means to the operator, for the errors the environment causes. */
export function listenProblem(err: unknown, host: string, port: number): Error {
  const code = errnoCode(err);
  switch (code) {
    case 'EADDRINUSE':
      return new ListenError(
        `port ${port} on ${host} is in use: set PORT=<another port> (PORT=0 picks a free one), or stop what holds it`,
      );
    case 'EACCES':
      return new ListenError(`port ${port} needs privileges this user does not have: set PORT=1024 or above`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return new ListenError(
        `HOST=${host} is not an address of this machine: set HOST=127.0.0.1 or one of its own`,
      );
    default:
      return err instanceof Error ? err : new Error(String(err));
  }
}
