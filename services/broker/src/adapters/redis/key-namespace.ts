import { SbxError } from '@sbx/protocol';

// No ':' in the prefix: the first ':' of a scoped name then always ends the
// prefix, so prefixes 'a' and 'a:b' cannot produce the same scoped name.
const PREFIX_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/** Scopes keys and channels under one prefix: `<prefix>:<name>`. */
export class KeyNamespace {
  readonly prefix: string;

  constructor(prefix: string) {
    if (!PREFIX_PATTERN.test(prefix)) {
      throw new SbxError(
        'INTERNAL',
        `coordination keyPrefix must be 1-64 characters of letters, digits, '_', '.', '-' (no ':'), got ${JSON.stringify(prefix)}`,
      );
    }
    this.prefix = prefix;
  }

  scoped(name: string): string {
    return `${this.prefix}:${name}`;
  }
}
