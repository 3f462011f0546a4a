import { TokenError } from '@sbx/tokens';

/** Close reasons are limited to 123 bytes by RFC 6455; ours are short ASCII sentences. */
export function closeReason(text: string): string {
  return Buffer.byteLength(text) <= 123 ? text : `${text.slice(0, 120)}...`;
}

/** The invite-architecture seed's reasons, kept verbatim for its legacy clients. */
export function legacyRejection(err: unknown): string {
  if (err instanceof TokenError) {
    if (err.reason === 'missing') return 'Missing token';
    if (err.reason === 'expired') return 'Token expired';
  }
  return 'Invalid token';
}
