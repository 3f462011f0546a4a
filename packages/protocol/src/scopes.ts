import { z } from 'zod';

/** Capability scopes carried by sandbox tokens (docs/protocol.md#scopes). */
export const CAPABILITY_SCOPES = ['fs:ro', 'fs:rw', 'shell', 'shell:ro', 'process'] as const;
export const CapabilityScope = z.enum(CAPABILITY_SCOPES);
export type CapabilityScope = z.infer<typeof CapabilityScope>;

/** Older names, accepted on input as aliases (docs/protocol.md#aliases). */
export const CAPABILITY_ALIASES = {
  fs_read: 'fs:ro',
  fs_write: 'fs:rw',
  exec: 'process',
} as const satisfies Record<string, CapabilityScope>;
export type CapabilityAlias = keyof typeof CAPABILITY_ALIASES;

/** Each scope and the scopes it implies (fs:rw reads, shell observes). */
export const SCOPE_IMPLIES = {
  'fs:ro': [],
  'fs:rw': ['fs:ro'],
  shell: ['shell:ro'],
  'shell:ro': [],
  process: [],
} as const satisfies Record<CapabilityScope, readonly CapabilityScope[]>;

const CapabilityAliasName = z.enum([
  'fs_read',
  'fs_write',
  'exec',
] as const satisfies readonly CapabilityAlias[]);

export function normalizeCapability(name: string): CapabilityScope | undefined {
  const canonical = CapabilityScope.safeParse(name);
  if (canonical.success) return canonical.data;
  const alias = CapabilityAliasName.safeParse(name);
  return alias.success ? CAPABILITY_ALIASES[alias.data] : undefined;
}

/** A capability in either vocabulary, normalized to the canonical name. */
export const CapabilityInput = z.string().transform((name, ctx) => {
  const scope = normalizeCapability(name);
  if (scope === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `unknown capability "${name}" (known: ${CAPABILITY_SCOPES.join(', ')}; aliases: ${Object.keys(CAPABILITY_ALIASES).join(', ')})`,
    });
    return z.NEVER;
  }
  return scope;
});

/**
 * A non-empty list of capabilities in either vocabulary, normalized to canonical
 * names, de-duplicated (`fs_write` and `fs:rw` are one entry) and in canonical order.
 */
export const CapabilityList = z
  .array(CapabilityInput)
  .min(1, { message: 'must name at least one capability' })
  .max(32)
  .transform(canonicalScopes);

/** Like CapabilityList but may be empty: what a server reports as granted. */
export const GrantedCapabilityList = z.array(CapabilityInput).max(32).transform(canonicalScopes);

/** De-duplicated, in the canonical order of CAPABILITY_SCOPES. */
export function canonicalScopes(scopes: Iterable<CapabilityScope>): CapabilityScope[] {
  const set = new Set(scopes);
  return CAPABILITY_SCOPES.filter((s) => set.has(s));
}

/**
 * The strongest form of a scope set, in canonical order: a scope another one implies goes
 * (`fs:ro` beside `fs:rw`, `shell:ro` beside `shell`), as it grants nothing more. What
 * servers grant and write into tokens; the holder still has the implied scopes.
 */
export function strongestScopes(scopes: Iterable<CapabilityScope>): CapabilityScope[] {
  const set = new Set(scopes);
  const implied = new Set<CapabilityScope>();
  for (const scope of set) for (const weaker of SCOPE_IMPLIES[scope]) implied.add(weaker);
  return CAPABILITY_SCOPES.filter((scope) => set.has(scope) && !implied.has(scope));
}

/** The scope set together with everything it implies. */
export function expandScopes(scopes: Iterable<CapabilityScope>): Set<CapabilityScope> {
  const out = new Set<CapabilityScope>();
  for (const scope of scopes) {
    out.add(scope);
    for (const implied of SCOPE_IMPLIES[scope]) out.add(implied);
  }
  return out;
}

export function hasScope(granted: Iterable<CapabilityScope>, needed: CapabilityScope): boolean {
  return expandScopes(granted).has(needed);
}

/** True when every scope of `narrow` is granted by `broad`. */
export function isWithin(narrow: Iterable<CapabilityScope>, broad: Iterable<CapabilityScope>): boolean {
  const allowed = expandScopes(broad);
  for (const scope of narrow) if (!allowed.has(scope)) return false;
  return true;
}

/** The scopes of `requested` that `allowed` grants, in canonical order. */
export function intersectScopes(
  requested: Iterable<CapabilityScope>,
  allowed: Iterable<CapabilityScope>,
): CapabilityScope[] {
  const grant = expandScopes(allowed);
  const wanted = new Set(requested);
  return CAPABILITY_SCOPES.filter((scope) => wanted.has(scope) && grant.has(scope));
}

export interface ParsedScopeString {
  readonly scopes: CapabilityScope[];
  readonly unknown: string[];
}

/** Parses a space-separated `scope` claim; unknown names are reported, never dropped silently. */
export function parseScopeString(value: string): ParsedScopeString {
  const scopes = new Set<CapabilityScope>();
  const unknown: string[] = [];
  for (const part of value.split(' ')) {
    if (part === '') continue;
    const scope = normalizeCapability(part);
    if (scope === undefined) unknown.push(part);
    else scopes.add(scope);
  }
  return { scopes: CAPABILITY_SCOPES.filter((s) => scopes.has(s)), unknown };
}

export function formatScopeString(scopes: Iterable<CapabilityScope>): string {
  const set = new Set(scopes);
  return CAPABILITY_SCOPES.filter((s) => set.has(s)).join(' ');
}

/**
 * Caller scopes of the broker API (docs/protocol.md#callers-and-caller-scopes).
 * exec does not imply attach. `admin:keys` is the operator scope of `/admin/api-keys`:
 * it issues keys for another tenant or principal (docs/admin.md, "API keys").
 */
export const CALLER_SCOPES = [
  'read:sandbox',
  'write:sandbox',
  'exec:sandbox',
  'attach:sandbox',
  'admin:sandbox',
  'admin:keys',
] as const;
export const CallerScope = z.enum(CALLER_SCOPES);
export type CallerScope = z.infer<typeof CallerScope>;
