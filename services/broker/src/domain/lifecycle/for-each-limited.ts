// Work through a list a few items at a time: the lifecycle's background jobs
// share the database pool and the provider with requests, so they never fan
// out over every sandbox at once.

/** Runs `fn` on every item, at most `limit` at a time; resolves when all are done. */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next];
      next += 1;
      if (item !== undefined) await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
