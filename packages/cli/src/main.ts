import type { CliContext } from './context.js';
import { readCliEnv } from './cli-config.js';
import { COMMANDS, isHelp } from './command-table.js';

/**
 * The entry of the `sbx` bundle (scripts/build-cli.mjs). It imports nothing heavy itself:
 * each command's module (and with it the SDK, zod or the MCP server) is loaded only when that
 * command runs (src/command-table.ts), and `sbx --help` loads the usage text alone, not even
 * the error formatting (the platform's error classes, hence zod) that every command loads.
 */

/** Runs one invocation; every failure becomes one line on stderr and an exit code, never a stack. */
export async function runCli(ctx: CliContext, argv: readonly string[]): Promise<number> {
  const [name, ...args] = argv;
  // Loaded beside the command, not once it fails: a long-running command (`sync --watch`,
  // `mcp`) then never needs a file of the bundle that a rebuild may have replaced meanwhile.
  const errors = import('./exit-codes.js');
  errors.catch(() => undefined);
  try {
    const load = name === undefined || isHelp(name) ? COMMANDS['help'] : commandNamed(name);
    if (load === undefined) {
      const { UsageError } = await errors;
      throw new UsageError(`unknown command "${String(name)}" (sbx help)`);
    }
    const command = await load();
    return await command(ctx, args);
  } catch (err) {
    const { errorLine, exitCodeOf } = await errors;
    ctx.stderr.write(`${errorLine(err)}\n`);
    return exitCodeOf(err);
  }
}

const commandNamed = (name: string) => (Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined);

/** `sbx`, `sbx help`, `sbx --help`: the usage text, without loading the CLI's store or any SDK. */
async function printHelp(): Promise<number> {
  const { HELP } = await import('./commands/help.js');
  process.stdout.write(HELP);
  return 0;
}

async function main(): Promise<void> {
  // A closed pipe (`sbx cat … | head`) is the reader's choice, not an error.
  process.stdout.on('error', () => process.exit(0));
  const argv = process.argv.slice(2);
  let code: number;
  if (argv.length === 0 || (argv.length === 1 && isHelp(argv[0] ?? ''))) code = await printHelp();
  else {
    // The command's module graph starts loading now, beside the store's, not after it.
    commandNamed(argv[0] ?? '')?.().catch(() => undefined);
    const env = readCliEnv();
    const { CliStore } = await import('./store.js');
    const ctx: CliContext = {
      env,
      store: new CliStore(env.home),
      stdout: process.stdout,
      stderr: process.stderr,
      stdin: process.stdin,
    };
    code = await runCli(ctx, argv);
  }
  // Open keep-alive sockets or token timers must not hold the process; flush output first.
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

await main();
