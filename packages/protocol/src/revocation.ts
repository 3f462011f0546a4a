// `POST /admin/revocations` (docs/security.md#revocation): exactly one of a token's jti,
// a session (binding) id or a sandbox id. A sandbox means every token it ever had: its
// key is rotated, and the old key stops working at once.
import { z } from 'zod';
import { Id } from './primitives.js';

export const RevocationRequest = z.union([
  z.strictObject({ jti: Id }),
  z.strictObject({ session_id: Id }),
  z.strictObject({ sandbox_id: Id }),
]);
export type RevocationRequest = z.infer<typeof RevocationRequest>;

export const RevocationResponse = z.object({
  /** The sandboxes whose agents were told; they refuse the tokens within 1 s. */
  sandbox_ids: z.array(Id),
  /** Tokens put on revocation lists (0 for a sandbox: its key was rotated instead). */
  revoked_tokens: z.number().int().nonnegative(),
  key_rotated: z.boolean(),
});
export type RevocationResponse = z.infer<typeof RevocationResponse>;
