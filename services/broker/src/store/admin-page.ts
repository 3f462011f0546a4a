// Keyset pagination shared by the admin listings: rows newest first by
// (created_at, id), a page continuing strictly after the last row of the one before.
// Keyset rather than OFFSET: pages stay stable while rows are added at the head.

/** The last row of a page, where the next one continues. */
export interface PagePosition {
  readonly createdAt: Date;
  readonly id: string;
}

export interface PageRequest {
  readonly after?: PagePosition | undefined;
  readonly limit: number;
}

export interface Page<T> {
  readonly items: T[];
  /** Present when there may be more rows: the position of the last item. */
  readonly next?: PagePosition | undefined;
}

/** The `where` clause of rows after `position` in (created_at desc, id desc) order. */
export function afterPosition(position: PagePosition | undefined) {
  if (position === undefined) return {};
  return {
    OR: [
      { createdAt: { lt: position.createdAt } },
      { createdAt: position.createdAt, id: { lt: position.id } },
    ],
  };
}

export const NEWEST_FIRST = [{ createdAt: 'desc' as const }, { id: 'desc' as const }];

/** Rows were fetched with `limit + 1`: the extra one only says there is a next page. */
export function pageOf<T extends PagePosition>(rows: T[], limit: number): Page<T> {
  if (rows.length <= limit) return { items: rows };
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, next: last === undefined ? undefined : { createdAt: last.createdAt, id: last.id } };
}

/** Inclusive-exclusive creation window of the "age" filters. */
export function createdWindow(after: Date | undefined, before: Date | undefined) {
  if (after === undefined && before === undefined) return {};
  return {
    createdAt: {
      ...(after === undefined ? {} : { gte: after }),
      ...(before === undefined ? {} : { lt: before }),
    },
  };
}
