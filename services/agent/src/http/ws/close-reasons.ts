import { TokenError } from '@sbx/tokens';

/** Close reasons are limited to 123 bytes by RFC 6455; ours are short ASCII sentences. */
export function closeReason(text: string): string {
  return Buffer.byteLength(text) <= 123 ? text : `${text.slice(0, 120)}...`;
}

/** Close reasons of the legacy endpoints (docs/protocol.md#legacy-endpoints), kept verbatim. */
export function legacyRejection(err: unknown): string {
  if (err instanceof TokenError) {
    if (err.reason === 'missing') return 'Missing token';
    if (err.reason === 'expired') return 'Token expired';
  }
  return 'Invalid token';
}
