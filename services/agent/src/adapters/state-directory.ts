// The local provider's state directory, handed over as an open descriptor (AGENT_STATE_FD):
// the key, the revocation list and the client's variables live there, and no path to them
// exists in the agent's view (docs/architecture.md D21), so nothing the file API is asked
// can name them.
import { closeSync, openSync } from 'node:fs';

export const STATE_FILES = {
  key: 'agent.key',
  revocations: 'revocations.json',
  environment: 'sandbox-env.json',
} as const;

/**
 * Replaces the inherited descriptor `fd` with one of the agent's own, which Node opens
 * close-on-exec (the inherited one would pass down to every process the agent starts,
 * user code included), and returns the path through which the directory is read.
 */
export function reopenStateDirectory(fd: number): string {
  let own: number;
  try {
    own = openSync(`/proc/self/fd/${fd}`, 'r');
  } catch (err) {
    throw new Error(`AGENT_STATE_FD: descriptor ${fd} is not an open directory`, { cause: err });
  }
  closeSync(fd);
  return `/proc/self/fd/${own}`;
}
