// The warm pool of a broker on embedded defaults (issue 27, item 12; docs/warm-pools.md
// "Defaults"): no DATABASE_URL and local sandboxes mean EMBEDDED_WARM_POOL_SIZE sandboxes kept
// ready, shown in the banner with their memory, so that a new user's first ensure claims a
// running agent. With DATABASE_URL or a container provider the default is no pool;
// WARM_POOL_SIZE, when set, always wins. The broker is a real process (main.ts under tsx).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IDLE_LOCAL_SANDBOX_MIB } from '../../src/broker-warm-pool.js';
import { EMBEDDED_WARM_POOL_SIZE, loadBrokerConfig } from '../../src/config.js';
import { startBrokerProcess, until, type BrokerProcess } from '../process/broker-process.js';
import { newDataDirOutsideTmp, removeDataDir } from '../providers/local-provider-kit.js';

const SLOW = 240_000;
const KEY_LINE = /admin API key \(shown once, store it now\): (sbk_\S+)\n/;
const POSTGRES = {
  DATABASE_URL: 'postgres://127.0.0.1/sbx',
  BROKER_MASTER_KEY: randomBytes(32).toString('base64url'),
};

describe('the warm pool by default', () => {
  it('is EMBEDDED_WARM_POOL_SIZE on embedded defaults, none with DATABASE_URL or a container provider', () => {
    expect(EMBEDDED_WARM_POOL_SIZE).toBe(2);
    expect(loadBrokerConfig({}).warmPoolSize).toBe(EMBEDDED_WARM_POOL_SIZE);
    expect(loadBrokerConfig(POSTGRES).warmPoolSize).toBe(0);
    expect(loadBrokerConfig({ SANDBOX_PROVIDER: 'docker' }).warmPoolSize).toBe(0);
  });

  it('gives way to WARM_POOL_SIZE, 0 included; an empty value is unset', () => {
    expect(loadBrokerConfig({ WARM_POOL_SIZE: '0' }).warmPoolSize).toBe(0);
    expect(loadBrokerConfig({ WARM_POOL_SIZE: '5' }).warmPoolSize).toBe(5);
    expect(loadBrokerConfig({ ...POSTGRES, WARM_POOL_SIZE: '3' }).warmPoolSize).toBe(3);
    expect(loadBrokerConfig({ WARM_POOL_SIZE: '' }).warmPoolSize).toBe(EMBEDDED_WARM_POOL_SIZE);
  });
});

describe('a broker started on embedded defaults', () => {
  const dataDir = newDataDirOutsideTmp();
  let broker: BrokerProcess;
  let key = '';
  beforeAll(async () => {
    // '' unsets the helper's WARM_POOL_SIZE=0: the default of an empty environment.
    broker = await startBrokerProcess({ BROKER_DATA_DIR: dataDir, WARM_POOL_SIZE: '' });
    await broker.waitFor(KEY_LINE);
    key = KEY_LINE.exec(broker.output())?.[1] ?? '';
  }, SLOW);
  afterAll(async () => {
    await broker?.kill('SIGTERM');
    removeDataDir(dataDir);
  }, SLOW);

  const call = (route: string, body?: unknown) =>
    fetch(`${broker.url}${route}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it('shows its warm pool and what it costs in the banner', () => {
    const memory = EMBEDDED_WARM_POOL_SIZE * IDLE_LOCAL_SANDBOX_MIB;
    expect(broker.output()).toContain(
      `  warm pool: ${EMBEDDED_WARM_POOL_SIZE} sandboxes kept ready (~${memory} MiB; WARM_POOL_SIZE=0 turns it off)\n`,
    );
  });

  it(
    'serves the first ensure with a warm sandbox',
    async () => {
      await broker.waitFor(/"msg":"warm pool ready"/);
      const res = await call('/v1/sandbox/sessions', { thread_id: 'thr_first', mode: 'ensure' });
      expect(res.status).toBe(200);
      const { sandbox } = (await res.json()) as { sandbox: { id: string } };
      type Page = { items: { sandbox_id: string | null; detail: unknown }[] };
      let claimed: Page['items'] = [];
      await until(async () => {
        claimed = ((await (await call('/admin/audit?action=sandbox.claimed')).json()) as Page).items;
        return claimed.length > 0;
      }, 'the claim in the audit trail');
      expect(claimed).toEqual([
        expect.objectContaining({ sandbox_id: sandbox.id, detail: { warm: 'true' } }),
      ]);
      const provisioned = (await (await call('/admin/audit?action=sandbox.provisioning')).json()) as Page;
      expect(provisioned.items).toEqual([]);
    },
    SLOW,
  );
});
