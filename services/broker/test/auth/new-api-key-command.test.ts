// `pnpm --filter ./services/broker new-api-key`: one new key in the broker's own
// format on stdout, which a broker then takes as BROKER_BOOTSTRAP_API_KEY.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { loadBrokerConfig } from '../../src/config.js';
import { createCallerAuthenticator } from '../../src/domain/auth/authenticate-caller.js';
import { importBootstrapKey } from '../../src/domain/auth/bootstrap.js';
import { isAdmin } from '../../src/domain/auth/principal.js';
import { parseApiKey } from '../../src/store/api-key-repository.js';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

const packageDir = fileURLToPath(new URL('../../', import.meta.url));
const tsx = fileURLToPath(new URL('../../../../node_modules/.bin/tsx', import.meta.url));
const SCRIPT = 'new-api-key';
const backend = backends.find((b) => b.available) ?? backends[backends.length - 1]!;

/** Runs the package script's command as pnpm would, in the package's directory. */
function runScript(): { status: number | null; stdout: string; stderr: string } {
  const pkg = JSON.parse(readFileSync(`${packageDir}package.json`, 'utf8')) as {
    scripts: Record<string, string>;
  };
  const [bin, ...args] = (pkg.scripts[SCRIPT] ?? 'missing script').split(' ');
  expect(bin).toBe('tsx');
  return spawnSync(tsx, args, {
    cwd: packageDir,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
    encoding: 'utf8',
    timeout: 20_000,
  });
}

describe(`the ${SCRIPT} command [${backend.name}]`, () => {
  const broker = useBroker(backend);

  it('prints one new key in the broker format and nothing else, a different one each run', () => {
    const first = runScript();
    const second = runScript();
    expect(first.status).toBe(0);
    expect(first.stdout).toMatch(/^sbk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}\n$/);
    expect(second.stdout).toMatch(/^sbk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}\n$/);
    expect(second.stdout).not.toBe(first.stdout);
  });

  it('prints a key the broker takes as BROKER_BOOTSTRAP_API_KEY, found by its own prefix', async () => {
    const key = runScript().stdout.trim();
    const configured = loadBrokerConfig({ BROKER_BOOTSTRAP_API_KEY: key }).bootstrapApiKey!;
    const record = await importBootstrapKey(configured, broker.repositories.apiKeys);
    expect(record.prefix).toBe(parseApiKey(key)?.prefix);
    const principal = await createCallerAuthenticator({ apiKeys: broker.repositories.apiKeys }).authenticate(
      `Bearer ${key}`,
    );
    expect(isAdmin(principal)).toBe(true);
    const res = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ thread_id: `thr_${randomUUID()}`, mode: 'ensure' });
    expect(res.status).toBe(200);
  });
});
