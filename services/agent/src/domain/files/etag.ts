import type { BigIntStats } from 'node:fs';
import { SbxError } from '@sbx/protocol';

/**
 * A strong-ish validator from inode, size and nanosecond mtime. Every atomic write
 * renames a new inode into place, so a replaced file changes its ETag even when size
 * and mtime happen to match.
 */
export function etagOf(stats: BigIntStats): string {
  return `"${stats.ino.toString(36)}-${stats.size.toString(36)}-${stats.mtimeNs.toString(36)}"`;
}

/** `*`, or the listed entity tags (`"a", W/"b"`); absent header: undefined. */
export type EtagCondition = '*' | readonly string[];

export function parseEtagCondition(header: string | undefined): EtagCondition | undefined {
  if (header === undefined) return undefined;
  const trimmed = header.trim();
  if (trimmed === '*') return '*';
  const tags = trimmed.match(/(?:W\/)?"[^"]*"/g);
  if (tags === null)
    throw new SbxError('BAD_REQUEST', 'If-Match / If-None-Match must be "*" or quoted entity tags');
  return tags;
}

export interface WritePrecondition {
  readonly ifMatch?: EtagCondition | undefined;
  readonly ifNoneMatch?: EtagCondition | undefined;
}

/** RFC 9110 §13.1.1: If-Match uses the strong comparison, so weak tags never match. */
function strongMatch(condition: EtagCondition, current: string): boolean {
  return condition === '*' || condition.includes(current);
}

/** RFC 9110 §13.1.2: If-None-Match uses the weak comparison. */
export function weakMatch(condition: EtagCondition, current: string): boolean {
  return condition === '*' || condition.some((tag) => tag.replace(/^W\//, '') === current);
}

/** Throws PRECONDITION_FAILED unless the file as it is now (`undefined`: absent) satisfies `pre`. */
export function checkWritePrecondition(
  pre: WritePrecondition,
  current: BigIntStats | undefined,
  display: string,
): void {
  const etag = current === undefined ? undefined : etagOf(current);
  if (pre.ifMatch !== undefined && (etag === undefined || !strongMatch(pre.ifMatch, etag))) {
    throw new SbxError(
      'PRECONDITION_FAILED',
      etag === undefined
        ? `${display} does not exist, so If-Match cannot match`
        : `${display} has changed: its ETag is ${etag}; read it again before writing`,
      etag === undefined ? {} : { details: { etag } },
    );
  }
  if (pre.ifNoneMatch !== undefined && etag !== undefined && weakMatch(pre.ifNoneMatch, etag)) {
    throw new SbxError('PRECONDITION_FAILED', `${display} already exists (If-None-Match)`, {
      details: { etag },
    });
  }
}

/** Create-only: the commit must not replace anything, whatever appeared meanwhile. */
export function isCreateOnly(pre: WritePrecondition): boolean {
  return pre.ifNoneMatch === '*';
}
