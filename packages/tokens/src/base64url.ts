const BASE64URL_TEXT = /^[A-Za-z0-9_-]*$/;

/** Strict base64url (RFC 4648 §5, no padding): Buffer's own decoder silently skips bad characters. */
export function isBase64url(text: string): boolean {
  return BASE64URL_TEXT.test(text) && text.length % 4 !== 1;
}

export function encodeBase64url(bytes: Uint8Array | string): string {
  return Buffer.from(bytes).toString('base64url');
}

/** Decodes strict base64url; returns undefined for text that is not. */
export function decodeBase64url(text: string): Buffer | undefined {
  return isBase64url(text) ? Buffer.from(text, 'base64url') : undefined;
}
