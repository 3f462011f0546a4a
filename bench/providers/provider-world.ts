/**
 * The local provider as the broker opens it (bubblewrap, the agent bundle, a root broker's
 * per-sandbox users and cgroups where this host has them), on a data directory of the run's
 * own, with the broker's log kept at `warn` in memory (shown only when a start fails).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { Writable } from 'node:stream';
import { createLogger } from '@sbx/service-kit';
import { prepareAgentBundle } from '../../services/broker/src/providers/agent-bundle.js';
import type { AgentCommand } from '../../services/broker/src/providers/agent-process.js';
import { LocalProvider } from '../../services/broker/src/providers/local-provider.js';
import { makeTempDir, removeTempDir } from '../lib/resources.js';

export interface ProviderWorld {
  readonly provider: LocalProvider;
  readonly dataDir: string;
  /** What the provider logged at warn and above. */
  readonly logs: readonly string[];
}

/** Workspace volumes a provider that never closed left mounted would make `rm` fail. */
function unmountUnder(dir: string): void {
  const targets = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((target) => target.startsWith(`${dir}/`));
  for (const target of targets) execFileSync('umount', ['-l', target]);
}

/**
 * The provider's own agent command unless the run asks for a variant to compare:
 * `BENCH_AGENT_NODE_ARGS` (node/V8 flags put first) and `BENCH_AGENT_BUNDLE` (another
 * bundle file run in place of the provider's, e.g. one built from an older tree).
 */
async function agentCommand(dataDir: string): Promise<AgentCommand | undefined> {
  const nodeArgs = (process.env['BENCH_AGENT_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== '');
  const bundle = process.env['BENCH_AGENT_BUNDLE'];
  if (nodeArgs.length === 0 && bundle === undefined) return undefined;
  // Run in the sandbox's view: a BENCH_AGENT_BUNDLE must lie where the view shows it (not /tmp).
  const prepared = (await prepareAgentBundle(dataDir)).viewCommand;
  const args = bundle === undefined ? prepared.args : [...prepared.args.slice(0, -1), bundle];
  return { file: prepared.file, args: [...nodeArgs, ...args] };
}

export async function openProviderWorld(): Promise<ProviderWorld> {
  const dataDir = realpathSync(makeTempDir('sbx-bench-provider-'));
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString('utf8'));
      done();
    },
  });
  const logger = createLogger({ service: 'bench-provider', level: 'warn', destination: sink });
  try {
    const command = await agentCommand(dataDir);
    const provider = await LocalProvider.open({
      dataDir,
      logger,
      isolation: 'bubblewrap',
      ...(command === undefined ? {} : { agentCommand: command }),
    });
    return { provider, dataDir, logs };
  } catch (err) {
    removeTempDir(dataDir);
    throw err;
  }
}

export async function closeProviderWorld(world: ProviderWorld): Promise<void> {
  try {
    await world.provider.close();
  } finally {
    unmountUnder(world.dataDir);
    removeTempDir(world.dataDir);
  }
}
