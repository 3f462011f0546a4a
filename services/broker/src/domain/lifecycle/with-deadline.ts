import { SbxError } from '@sbx/protocol';

/**
 * The work's result, or TIMEOUT once `ms` have passed. The work itself goes
 * on (a provider call cannot be cancelled); a hung call must not hold up
 * every other sandbox of the round.
 */
export async function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new SbxError('TIMEOUT', `${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
