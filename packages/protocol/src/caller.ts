import { z } from 'zod';

/**
 * `GET /v1/whoami`: the caller the request's credential authenticates as
 * (docs/protocol.md#callers-and-caller-scopes), never the credential itself. Lenient, as
 * every response: a newer broker may add fields and values.
 */
export const WhoamiResponse = z.object({
  /** Who is calling: the key's principal, the token's `sub`, or for a delegated token the acting agent. */
  principal_id: z.string(),
  /** `user`, `service` or `agent`. */
  principal_type: z.string(),
  tenant_id: z.string(),
  /** Whose sandboxes the caller works with: itself, or the delegator of a delegated token. */
  owner_id: z.string(),
  /** `api_key` or `oidc`. */
  credential: z.string(),
  /** Caller scopes (`read:sandbox` …), in canonical order. */
  scopes: z.array(z.string()),
  /** The OAuth client an OIDC token was issued to. */
  client_id: z.string().optional(),
});
export type WhoamiResponse = z.infer<typeof WhoamiResponse>;
