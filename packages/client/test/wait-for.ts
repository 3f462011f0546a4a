// Waiting on conditions and promises with generous deadlines (loaded machines are slow).

/** Resolves when `check` holds, polling (generous deadline, no fixed sleeps). */
export async function eventually(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** What `promise` rejected with; fails the test when it resolves or stays pending past the deadline. */
export async function rejectionOf(
  promise: Promise<unknown>,
  what: string,
  timeoutMs = 20_000,
): Promise<Error> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const pending = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} is still pending after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([promise, pending]);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith(`${what} is still pending`)) throw err;
    return err as Error;
  } finally {
    clearTimeout(timer);
  }
  throw new Error(`${what} resolved; it should have rejected`);
}
