import type { BigIntStats } from 'node:fs';
import { toTimestamp } from '@sbx/protocol';

export type EntryType = 'file' | 'dir' | 'symlink' | 'other';

/** What a listing or stat reports about one entry. */
export interface EntryInfo {
  readonly name: string;
  readonly type: EntryType;
  readonly size: number;
  /** Permission bits as an octal string, e.g. `"0644"`. */
  readonly mode: string;
  /** RFC 3339. */
  readonly mtime: string;
}

export function entryTypeOf(stats: BigIntStats): EntryType {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'dir';
  if (stats.isSymbolicLink()) return 'symlink';
  return 'other';
}

/** `a FIFO`, `a socket`, `a device`: for messages refusing entries that are never opened. */
export function describeSpecial(stats: BigIntStats): string {
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  return 'not a regular file or directory';
}

/** FIFOs, sockets and devices: the files API lists them but never opens, writes, moves or deletes them. */
export function isSpecial(stats: BigIntStats): boolean {
  return !stats.isFile() && !stats.isDirectory() && !stats.isSymbolicLink();
}

export function formatMode(stats: BigIntStats): string {
  return (Number(stats.mode) & 0o7777).toString(8).padStart(4, '0');
}

export function entryInfo(name: string, stats: BigIntStats): EntryInfo {
  return {
    name,
    type: entryTypeOf(stats),
    size: Number(stats.size),
    mode: formatMode(stats),
    mtime: toTimestamp(stats.mtime),
  };
}
