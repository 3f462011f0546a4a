// A broker restart with real agents: the composition root (createBrokerSystem)
// with the local provider on Postgres, closed and opened again on the same
// database and data directory. Closing ends the agents without recording it
// (the provider expects those exits), as a broker process that dies leaves its
// rows: `active`, with the address of an agent that no longer listens.
import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GetBindingResponse, SessionResponse } from '@sbx/protocol';
import { createLogger } from '@sbx/service-kit';
import { createBrokerSystem, type BrokerSystem } from '../../src/broker-system.js';
import type { BrokerConfig } from '../../src/config.js';
import { createRepositories } from '../../src/store/index.js';
import { newDataDir } from '../providers/local-provider-kit.js';
import { ALL_CALLER_SCOPES } from '../support/broker-harness.js';
import { backends, useTestDatabase } from '../support/test-database.js';

const postgres = backends.find((backend) => backend.name === 'postgres')!;

interface Running {
  readonly system: BrokerSystem;
  readonly server: Server;
  readonly url: string;
}

(postgres.available ? describe : describe.skip)('broker restart with real agents (local provider)', () => {
  const db = useTestDatabase(postgres);
  const dataDir = newDataDir();
  const masterKey = randomBytes(32).toString('base64url');
  let broker: Running;
  let key = '';
  let quotaKey = '';
  /** Opened before the restart: the sandboxes whose agents die with the first broker. */
  const before: Record<'written' | 'read' | 'quota', SessionResponse | undefined> = {
    written: undefined,
    read: undefined,
    quota: undefined,
  };
  const beforeRestart = (name: keyof typeof before): SessionResponse => before[name]!;
  let statesAtRestart: string[] = [];

  const start = async (): Promise<Running> => {
    const config: BrokerConfig = {
      host: '127.0.0.1',
      port: 0,
      publicUrl: undefined,
      dataDir,
      databaseUrl: db().url,
      redisUrl: undefined,
      masterKey,
      bootstrapApiKey: undefined,
      oidc: undefined,
      provider: 'local',
      localIsolation: 'none',
      tokenTtlSeconds: 900,
      rateLimits: { negotiatePerMinute: 10_000, sessionPerMinute: 10_000 },
      idleTimeoutSeconds: 900,
      hardTtlSeconds: 28_800,
      logLevel: 'silent',
    };
    const logger = createLogger({ service: 'broker-restart-test', level: 'silent' });
    const system = await createBrokerSystem(config, logger, Date.now);
    const server = createServer(system.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { system, server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  };
  const stop = async (running: Running): Promise<void> => {
    running.server.closeAllConnections();
    await new Promise<void>((resolve) => running.server.close(() => resolve()));
    await running.system.close();
  };
  const ensure = (apiKey: string, threadId: string) =>
    fetch(`${broker.url}/v1/sandbox/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ thread_id: threadId, mode: 'ensure' }),
    });
  const opened = async (apiKey: string, threadId: string): Promise<SessionResponse> => {
    const res = await ensure(apiKey, threadId);
    expect(res.status).toBe(200);
    return SessionResponse.parse(await res.json());
  };
  const healthz = (session: { dataplane: { http_base_url: string } }) =>
    fetch(`${session.dataplane.http_base_url}/healthz`);
  const row = (session: SessionResponse) =>
    db().prisma.sandbox.findUniqueOrThrow({ where: { id: session.binding.sandbox_id } });

  beforeAll(async () => {
    const repositories = createRepositories(db().prisma);
    const newKey = async (tenantId: string) =>
      (
        await repositories.apiKeys.create({
          tenantId,
          principalId: `svc_${randomUUID()}`,
          scopes: ALL_CALLER_SCOPES,
        })
      ).key;
    key = await newKey(`tenant_${randomUUID()}`);
    const quotaTenant = `tenant_${randomUUID()}`;
    quotaKey = await newKey(quotaTenant);
    await repositories.policies.upsertTenantPolicy(quotaTenant, { maxSandboxes: 1 });

    broker = await start();
    before.written = await opened(key, `thr_${randomUUID()}`);
    before.read = await opened(key, `thr_${randomUUID()}`);
    before.quota = await opened(quotaKey, `thr_${randomUUID()}`);
    const put = await fetch(`${before.written.dataplane.http_base_url}/files/notes.txt`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${before.written.token}` },
      body: 'kept across the restart',
    });
    if (!put.ok) throw new Error(`could not write to the first agent: ${put.status}`);
    await stop(broker);
    statesAtRestart = await Promise.all(Object.values(before).map(async (s) => (await row(s!)).state));
    broker = await start();
  }, 120_000);

  afterAll(async () => {
    await stop(broker);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('suspends, before it answers, the sandboxes whose agents died with the previous broker', async () => {
    // What the audit finding saw: the rows still claimed running agents when the broker went down.
    expect(statesAtRestart).toEqual(['active', 'active', 'active']);
    for (const session of Object.values(before)) {
      expect(await row(session!)).toMatchObject({
        state: 'suspended',
        live: true,
        httpBaseUrl: null,
        wsBaseUrl: null,
      });
      await expect(healthz(session!)).rejects.toThrow('fetch failed');
      const audit = await db().prisma.auditEvent.findMany({
        where: { sandboxId: session!.binding.sandbox_id, callerId: 'startup-reconcile' },
      });
      expect(audit.map((event) => event.detail)).toEqual([
        expect.objectContaining({ from: 'active', to: 'suspended', reason: 'startup_reconcile' }),
      ]);
    }
  });

  it('resumes one on ensure: a new agent that answers /healthz, with the workspace it had', async () => {
    const old = beforeRestart('written');
    const resumed = await opened(key, old.binding.scope.id);
    expect(resumed.binding).toMatchObject({ sandbox_id: old.binding.sandbox_id, state: 'active' });
    expect((await healthz(resumed)).status).toBe(200);
    const file = await fetch(`${resumed.dataplane.http_base_url}/files/notes.txt`, {
      headers: { authorization: `Bearer ${resumed.token}` },
    });
    expect(await file.text()).toBe('kept across the restart');
  }, 60_000);

  it('resumes one on a session read rather than answering its dead address', async () => {
    const old = beforeRestart('read');
    const res = await fetch(`${broker.url}/v1/sandbox/sessions/${old.session_id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(res.status).toBe(200);
    const body = GetBindingResponse.parse(await res.json());
    expect(body.binding).toMatchObject({ id: old.session_id, state: 'active' });
    expect((await healthz(body)).status).toBe(200);
  }, 60_000);

  it("no longer counts them against the tenant's quota of running sandboxes", async () => {
    // The tenant's only slot was taken by the sandbox whose agent died; now it can open another.
    const other = await opened(quotaKey, `thr_${randomUUID()}`);
    expect((await healthz(other)).status).toBe(200);
    const resume = await ensure(quotaKey, beforeRestart('quota').binding.scope.id);
    expect(resume.status).toBe(403);
  }, 60_000);
});
