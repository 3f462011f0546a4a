/** A generous ceiling: these machines are small and shared. */
export const UNTIL_CEILING_MS = 90_000;

/** Resolves once `check` holds (polled every `everyMs`); rejects after the ceiling naming `what`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  everyMs = 20,
  ceilingMs = UNTIL_CEILING_MS,
): Promise<void> {
  const deadline = Date.now() + ceilingMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
