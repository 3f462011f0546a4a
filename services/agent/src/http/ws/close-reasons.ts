import { TokenError } from '@sbx/tokens';

/** Close reasons of the legacy endpoints (docs/protocol.md#legacy-endpoints), kept verbatim. */
export function legacyRejection(err: unknown): string {
  if (err instanceof TokenError) {
    if (err.reason === 'missing') return 'Missing token';
    if (err.reason === 'expired') return 'Token expired';
  }
  return 'Invalid token';
}
