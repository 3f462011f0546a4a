import { withConfigLock } from '../config-lock.js';
import { parseCommand, printJson, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';

/**
 * Forgets the login (the API key, or a device login's access and refresh tokens) and the
 * cached capability tokens: config.json and threads.json are deleted. The issuer is not
 * told (no revocation endpoint is used), so a copied refresh token lives until it expires.
 * Sandboxes are left running: they belong to the thread, not to this machine's login
 * (`sbx release` ends them).
 */
export async function logout(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values } = parseCommand('logout', args, { json: { type: 'boolean' } });
  // Under the login lock: a refresh in flight in another sbx must not write the login back.
  const wasLoggedIn = await withConfigLock(ctx.store.home, () => {
    const stored = ctx.store.readConfig() !== undefined;
    ctx.store.clear();
    return Promise.resolve(stored);
  });
  if (values.json === true) printJson(ctx, { logged_out: wasLoggedIn });
  else ctx.stdout.write(wasLoggedIn ? 'logged out\n' : 'not logged in\n');
  return EXIT.ok;
}
