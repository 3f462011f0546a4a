// Cursors of the admin listings: opaque to clients, base64url of
// `<listing>|<created_at ms>|<id>` (audit: `audit|<event id>`). The listing name
// makes a cursor of one listing a 400 on another instead of a silently wrong page.
import { ID_PATTERN, SbxError } from '@sbx/protocol';
import type { PagePosition } from '../../store/admin-page.js';

export type CursorListing = 'sandboxes' | 'sessions' | 'api-keys' | 'invocations';

const badCursor = () =>
  new SbxError('BAD_REQUEST', 'invalid query: cursor: is not a cursor this listing returned');

const encode = (text: string): string => Buffer.from(text, 'utf8').toString('base64url');

function decode(cursor: string): string[] {
  return Buffer.from(cursor, 'base64url').toString('utf8').split('|');
}

export function encodePosition(listing: CursorListing, position: PagePosition | undefined): string | null {
  return position === undefined ? null : encode(`${listing}|${position.createdAt.getTime()}|${position.id}`);
}

export function decodePosition(listing: CursorListing, cursor: string | undefined): PagePosition | undefined {
  if (cursor === undefined) return undefined;
  const [name, ms, id, ...rest] = decode(cursor);
  const millis = Number(ms);
  if (name !== listing || rest.length > 0 || id === undefined || !ID_PATTERN.test(id)) throw badCursor();
  if (!Number.isSafeInteger(millis) || millis < 0) throw badCursor();
  return { createdAt: new Date(millis), id };
}

export function encodeAuditCursor(beforeId: bigint | undefined): string | null {
  return beforeId === undefined ? null : encode(`audit|${beforeId.toString()}`);
}

export function decodeAuditCursor(cursor: string | undefined): bigint | undefined {
  if (cursor === undefined) return undefined;
  const [name, id, ...rest] = decode(cursor);
  if (name !== 'audit' || rest.length > 0 || id === undefined || !/^[1-9][0-9]{0,18}$/.test(id))
    throw badCursor();
  return BigInt(id);
}
