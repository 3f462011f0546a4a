/** Uploads and downloads in flight at once: enough to hide latency, few enough to be polite. */
export const TRANSFER_CONCURRENCY = 4;

/** Runs `work` over `items`, at most `limit` at a time; the first failure rejects (after the rest settle). */
export async function runPool<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const failures: unknown[] = [];
  const worker = async (): Promise<void> => {
    for (let index = next++; index < items.length && failures.length === 0; index = next++) {
      const item = items[index];
      if (item === undefined) continue;
      await work(item).catch((err: unknown) => {
        failures.push(err);
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failures.length > 0) throw failures[0];
}
