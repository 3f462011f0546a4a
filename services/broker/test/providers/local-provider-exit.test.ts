// A broker that exits without close() still takes its agents down (the provider's
// process 'exit' hook). The agent here runs without its stdin lifeline, so the hook
// is the only thing that can end it.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from '@jest/globals';
import { prepareAgentBundle } from '../../src/providers/agent-bundle.js';
import { agentPidsOf, isAlive, newDataDir, removeDataDir } from './local-provider-kit.js';

const dataDir = newDataDir();
const sandboxId = `sb_exit_${process.pid}`;
const tsxCli = createRequire(import.meta.url).resolve('tsx/cli');
const source = (relative: string): string =>
  JSON.stringify(fileURLToPath(new URL(relative, import.meta.url)));

const BROKER_SCRIPT = `
import { createLogger } from ${source('../../../../packages/service-kit/src/index.ts')};
import { SigningKey } from ${source('../../../../packages/tokens/src/index.ts')};
import { LocalProvider } from ${source('../../src/providers/local-provider.ts')};
const [dataDir, bundle, sandboxId] = process.argv.slice(2);
const provider = await LocalProvider.open({
  dataDir, isolation: 'none', logger: createLogger({ service: 'exit-test', level: 'silent' }),
  agentCommand: { file: process.execPath, args: [bundle] },
});
await provider.create({ sandboxId, tenantId: 't', signingKey: SigningKey.generate(), tokenIssuer: 'i', network: 'on' });
process.exit(0);`;

afterAll(() => {
  // Only when the test failed is there an agent left to end.
  for (const pid of agentPidsOf(sandboxId)) process.kill(pid, 'SIGKILL');
  removeDataDir(dataDir);
});

describe('local provider: broker exit', () => {
  it('signals every agent when the broker process exits without close()', async () => {
    const bundle = (await prepareAgentBundle(dataDir)).hostCommand.args.at(-1)!;
    const script = path.join(dataDir, 'broker.mts');
    writeFileSync(script, BROKER_SCRIPT);
    await promisify(execFile)(process.execPath, [tsxCli, script, dataDir, bundle, sandboxId], {
      env: { PATH: '/usr/bin:/bin', HOME: dataDir },
    });
    const deadline = Date.now() + 5000;
    let agents = agentPidsOf(sandboxId);
    while (agents.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      agents = agents.filter(isAlive);
    }
    expect(agents).toEqual([]);
  });
});
