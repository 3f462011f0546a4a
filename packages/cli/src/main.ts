import { cat } from './commands/cat.js';
import { cp } from './commands/cp.js';
import { doctor } from './commands/doctor.js';
import { ensure } from './commands/ensure.js';
import { exec } from './commands/exec.js';
import { help } from './commands/help.js';
import { login } from './commands/login.js';
import { logout } from './commands/logout.js';
import { ls } from './commands/ls.js';
import { mcp } from './commands/mcp.js';
import { release } from './commands/release.js';
import { rm } from './commands/rm.js';
import { sessions } from './commands/sessions.js';
import { shell } from './commands/shell.js';
import { sync } from './commands/sync.js';
import { whoami } from './commands/whoami.js';
import type { CliContext } from './context.js';
import { readCliEnv } from './cli-config.js';
import { EXIT, UsageError, errorLine, exitCodeOf } from './exit-codes.js';
import { CliStore } from './store.js';

type Command = (ctx: CliContext, args: readonly string[]) => Promise<number>;

const COMMANDS: Readonly<Record<string, Command>> = {
  login,
  logout,
  whoami,
  ensure,
  sessions,
  release,
  exec,
  cat,
  ls,
  rm,
  cp,
  sync,
  shell,
  doctor,
  mcp,
  help,
};

/** Runs one invocation; every failure becomes one line on stderr and an exit code, never a stack. */
export async function runCli(ctx: CliContext, argv: readonly string[]): Promise<number> {
  const [name, ...args] = argv;
  try {
    if (name === undefined || name === '--help' || name === '-h') return await help(ctx);
    const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (command === undefined) throw new UsageError(`unknown command "${name}" (sbx help)`);
    return await command(ctx, args);
  } catch (err) {
    ctx.stderr.write(`${errorLine(err)}\n`);
    return exitCodeOf(err);
  }
}

async function main(): Promise<void> {
  const env = readCliEnv();
  const ctx: CliContext = {
    env,
    store: new CliStore(env.home),
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
  };
  // A closed pipe (`sbx cat … | head`) is the reader's choice, not an error.
  process.stdout.on('error', () => process.exit(EXIT.ok));
  const code = await runCli(ctx, process.argv.slice(2));
  // Open keep-alive sockets or token timers must not hold the process; flush output first.
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

await main();
