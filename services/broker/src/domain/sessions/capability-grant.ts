// Which capabilities a token grants: the request, cut down by every ceiling
// that applies (actor-type policy, the OAuth client's policy, what the
// caller's own scopes allow). A scope that is refused outright may still be
// granted in its weaker form (fs:rw → fs:ro, shell → shell:ro) when every
// ceiling allows that: a read-only caller asking for fs:rw gets fs:ro.
import { expandScopes, SbxError, strongestScopes, type ActorType, type CapabilityScope } from '@sbx/protocol';
import { hasCallerScope, type Principal } from '../auth/principal.js';

export type ActorPolicy = Readonly<Record<ActorType, readonly CapabilityScope[]>>;

/** docs/protocol.md#default-grants: the agent typically gets fs:rw + process, the human fs:rw + shell. */
export const DEFAULT_ACTOR_POLICY: ActorPolicy = Object.freeze({
  agent: Object.freeze(['fs:rw', 'process'] as const),
  human: Object.freeze(['fs:rw', 'shell'] as const),
});

const WEAKER: Partial<Record<CapabilityScope, CapabilityScope>> = { 'fs:rw': 'fs:ro', shell: 'shell:ro' };

/**
 * What the caller's scopes let it hand out (docs/protocol.md#callers-and-caller-scopes): write:sandbox
 * gives fs:rw and read:sandbox fs:ro; exec:sandbox gives process;
 * attach:sandbox gives shell. exec does not imply attach.
 */
export function callerCeiling(principal: Principal): CapabilityScope[] {
  const allowed: CapabilityScope[] = [];
  if (hasCallerScope(principal, 'write:sandbox')) allowed.push('fs:rw');
  else if (hasCallerScope(principal, 'read:sandbox')) allowed.push('fs:ro');
  if (hasCallerScope(principal, 'exec:sandbox')) allowed.push('process');
  if (hasCallerScope(principal, 'attach:sandbox')) allowed.push('shell');
  return allowed;
}

/**
 * The granted scopes in their strongest form (fs_read + fs_write is `fs:rw`, which reads too:
 * docs/protocol.md#scopes) and canonical order; may be empty.
 */
export function grantCapabilities(
  requested: Iterable<CapabilityScope>,
  ceilings: readonly (readonly CapabilityScope[])[],
): CapabilityScope[] {
  const expanded = ceilings.map((ceiling) => expandScopes(ceiling));
  const allowedEverywhere = (scope: CapabilityScope): boolean => expanded.every((set) => set.has(scope));
  const granted: CapabilityScope[] = [];
  for (const scope of requested) {
    const weaker = WEAKER[scope];
    if (allowedEverywhere(scope)) granted.push(scope);
    else if (weaker !== undefined && allowedEverywhere(weaker)) granted.push(weaker);
  }
  return strongestScopes(granted);
}

/** 403 CAPABILITY_DENIED unless something was granted. */
export function assertGranted(
  granted: readonly CapabilityScope[],
  requested: Iterable<CapabilityScope>,
): void {
  if (granted.length > 0) return;
  throw new SbxError(
    'CAPABILITY_DENIED',
    `none of the requested capabilities (${[...requested].join(', ')}) may be granted to this caller and actor`,
  );
}

export function sameScopes(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((scope, i) => scope === b[i]);
}
