// The revocation list inside a sandbox's Secret: the same file format and merge rules as the
// local provider's `revocations.json` (../revocation-file.ts), on text rather than a file,
// because here the file is a key of a Secret that kubelet projects into the pod.
import { z } from 'zod';
import type { Revocation } from '../provider.js';

const RevocationList = z.object({
  version: z.literal(1),
  not_before: z.number().int().nonnegative().optional(),
  jtis: z.record(z.string(), z.number()),
});
type RevocationList = z.infer<typeof RevocationList>;

/**
 * `current` (undefined: none yet) with `revocation` merged in: expired entries dropped,
 * `not_before` only moving forward. A list that does not parse throws rather than being lost.
 */
export function mergeRevocationList(
  current: string | undefined,
  revocation: Revocation,
  nowMs: number,
): string {
  const list: RevocationList =
    current === undefined ? { version: 1, jtis: {} } : RevocationList.parse(JSON.parse(current));
  const nowSeconds = Math.floor(nowMs / 1000);
  const jtis: Record<string, number> = {};
  for (const [jti, exp] of Object.entries(list.jtis)) if (exp >= nowSeconds) jtis[jti] = exp;
  for (const entry of revocation.jtis) {
    const exp = Math.ceil(entry.expiresAt.getTime() / 1000);
    if (exp >= nowSeconds) jtis[entry.jti] = exp;
  }
  const requested =
    revocation.notBefore === undefined ? 0 : Math.floor(revocation.notBefore.getTime() / 1000);
  const notBefore = Math.max(list.not_before ?? 0, requested);
  return JSON.stringify({ version: 1, ...(notBefore === 0 ? {} : { not_before: notBefore }), jtis });
}
