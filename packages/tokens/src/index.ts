export * from './base64url.js';
export * from './claims.js';
export * from './clock.js';
export * from './compact-token.js';
export * from './downscope.js';
export * from './mint.js';
export * from './opaque.js';
export * from './signed-file-url.js';
export * from './signing-key.js';
export * from './token-error.js';
export * from './verifier.js';

// The scope vocabulary and algebra a token user needs, from their one home.
export {
  CAPABILITY_ALIASES,
  CAPABILITY_SCOPES,
  CapabilityScope,
  expandScopes,
  formatScopeString,
  hasScope,
  intersectScopes,
  isWithin,
  normalizeCapability,
  parseScopeString,
  SCOPE_IMPLIES,
} from '@sbx/protocol';
export type { CapabilityAlias, ParsedScopeString } from '@sbx/protocol';
