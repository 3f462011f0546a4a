// Ids handed to clients: a type prefix and 128 random bits, so they are
// unguessable and a session id is never mistaken for a sandbox id.
import { randomBytes } from 'node:crypto';

function randomPart(): string {
  return randomBytes(16).toString('base64url');
}

/** A binding id, which MVP clients know as their `session_id`. */
export function newSessionId(): string {
  return `ssn_${randomPart()}`;
}

export function newSandboxId(): string {
  return `sb_${randomPart()}`;
}
