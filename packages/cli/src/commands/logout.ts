import { parseCommand, printJson, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';

/**
 * Forgets the key and the cached tokens. Sandboxes are left running: they belong to the
 * thread, not to this machine's login (`sbx release` ends them).
 */
export function logout(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values } = parseCommand('logout', args, { json: { type: 'boolean' } });
  const wasLoggedIn = ctx.store.readConfig() !== undefined;
  ctx.store.clear();
  if (values.json === true) printJson(ctx, { logged_out: wasLoggedIn });
  else ctx.stdout.write(wasLoggedIn ? 'logged out\n' : 'not logged in\n');
  return Promise.resolve(EXIT.ok);
}
