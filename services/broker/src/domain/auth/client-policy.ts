// The per-OAuth-client policy of a caller (docs/protocol.md#callers-and-caller-scopes):
// which credential sidecar its sandboxes get, which environment variables, and
// the largest capability set it may be granted. A caller without a client id
// (API keys) and a client without a row get the defaults: no sidecar, no extra
// environment, no client-level cap on capabilities.
//
// An empty `maxCapabilities` means "no cap", because the store's default for a
// client without a row is the empty list and "no row" must not lock a client
// out. A list that names only unknown capabilities caps at nothing: a typo in a
// policy must not widen it.
import { CAPABILITY_SCOPES, normalizeCapability, type CapabilityScope } from '@sbx/protocol';
import type { ClientPolicyRecord } from '../../store/index.js';
import type { Principal } from './principal.js';

export interface ClientPolicySource {
  getClientPolicy(clientId: string): Promise<ClientPolicyRecord>;
}

export interface SidecarPolicy {
  readonly image: string;
  /** Audience and scopes of the pod-scoped JWT minted for the sidecar. */
  readonly audience: string | undefined;
  readonly scopes: readonly string[];
}

export interface ResolvedClientPolicy {
  readonly clientId: string | undefined;
  /** undefined: no sidecar; the sandbox brings its own credentials. */
  readonly sidecar: SidecarPolicy | undefined;
  readonly sandboxEnv: Readonly<Record<string, string>>;
  /** Canonical capability names; requests are intersected with these. */
  readonly maxCapabilities: readonly CapabilityScope[];
}

const DEFAULT_POLICY: ResolvedClientPolicy = Object.freeze({
  clientId: undefined,
  sidecar: undefined,
  sandboxEnv: Object.freeze({}),
  maxCapabilities: CAPABILITY_SCOPES,
});

/** A stored capability list as a ceiling: empty means no cap; unknown names are dropped. */
export function capabilityCeiling(stored: readonly string[]): readonly CapabilityScope[] {
  if (stored.length === 0) return CAPABILITY_SCOPES;
  const known = new Set<CapabilityScope>();
  for (const name of stored) {
    const scope = normalizeCapability(name);
    if (scope !== undefined) known.add(scope);
  }
  return CAPABILITY_SCOPES.filter((scope) => known.has(scope));
}

export async function resolveClientPolicy(
  principal: Principal,
  policies: ClientPolicySource,
): Promise<ResolvedClientPolicy> {
  if (principal.clientId === undefined) return DEFAULT_POLICY;
  const row = await policies.getClientPolicy(principal.clientId);
  return Object.freeze({
    clientId: principal.clientId,
    sidecar:
      row.sidecarImage === null || row.sidecarImage === ''
        ? undefined
        : {
            image: row.sidecarImage,
            audience: row.sidecarAudience ?? undefined,
            scopes: [...row.sidecarScopes],
          },
    sandboxEnv: Object.freeze({ ...row.sandboxEnv }),
    maxCapabilities: capabilityCeiling(row.maxCapabilities),
  });
}
