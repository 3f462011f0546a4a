/**
 * `text` with control characters (C0, DEL, C1) shown as `?`: names come from the sandbox,
 * and a hostile agent could otherwise move the cursor, retitle the window or hide output
 * by naming a file `\e]0;…`.
 */
export function printable(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    out += isControl(code) ? '?' : text.charAt(i);
  }
  return out;
}

export function isControl(code: number): boolean {
  return code < 0x20 || (code >= 0x7f && code <= 0x9f);
}
