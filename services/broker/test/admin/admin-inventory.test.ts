// Inventory across tenants: filters, cursor pagination, bad inputs, one sandbox in full.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { AdminSandboxDetail, AdminSandboxPage, AdminSessionPage } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { adminKeys, errorCode, makeSandbox, type AdminKeys, type MadeSandbox } from './admin-kit.js';

describeEachBackend('admin inventory', (backend) => {
  const broker = useBroker(backend, { loops: false });
  let keys: AdminKeys;
  let owner: string;
  let ownerKey: string;
  let made: MadeSandbox[];

  beforeAll(async () => {
    keys = await adminKeys(broker);
    owner = `usr_${randomUUID()}`;
    ownerKey = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox'],
      principalType: 'user',
      principalId: owner,
    });
    made = [];
    for (let i = 0; i < 5; i++) made.push(await makeSandbox(broker, ownerKey));
  });

  const get = (path: string, query: Record<string, string | number> = {}) =>
    request(broker.url).get(path).query(query).set(bearer(keys.admin));
  const post = (path: string) => request(broker.url).post(path).set(bearer(keys.admin)).send({});

  it("pages through one owner's sandboxes newest first with a cursor, no row twice", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await get('/admin/sandboxes', {
        owner_id: owner,
        limit: 2,
        ...(cursor === null ? {} : { cursor }),
      });
      expect(res.status).toBe(200);
      const page = AdminSandboxPage.parse(res.body);
      seen.push(...page.items.map((item) => item.id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual(made.map((m) => m.sandboxId).toReversed());
  });

  it('filters sandboxes by tenant, state, provider, thread and age, and sessions likewise', async () => {
    const first = made[0] as MadeSandbox;
    const byThread = AdminSandboxPage.parse(
      (await get('/admin/sandboxes', { thread_id: first.threadId })).body,
    );
    expect(byThread.items.map((i) => i.id)).toEqual([first.sandboxId]);
    expect(byThread.items[0]).toMatchObject({
      state: 'active',
      provider: 'fake',
      live_bindings: 1,
      owner_id: owner,
    });
    const filters = { tenant_id: broker.tenantId, owner_id: owner, state: 'active', provider: 'fake' };
    expect(AdminSandboxPage.parse((await get('/admin/sandboxes', filters)).body).items).toHaveLength(5);
    expect(
      AdminSandboxPage.parse((await get('/admin/sandboxes', { ...filters, provider: 'local' })).body).items,
    ).toHaveLength(0);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect(
      AdminSandboxPage.parse((await get('/admin/sandboxes', { owner_id: owner, created_after: future })).body)
        .items,
    ).toHaveLength(0);
    expect(
      AdminSandboxPage.parse(
        (await get('/admin/sandboxes', { owner_id: owner, created_before: future })).body,
      ).items,
    ).toHaveLength(5);

    const sessions = AdminSessionPage.parse(
      (await get('/admin/sessions', { sandbox_id: first.sandboxId })).body,
    );
    expect(sessions.items.map((s) => [s.id, s.state, s.actor.type])).toEqual([
      [first.sessionId, 'live', 'human'],
    ]);
    const paged = AdminSessionPage.parse(
      (await get('/admin/sessions', { owner_id: owner, state: 'live', limit: 4 })).body,
    );
    expect(paged.items).toHaveLength(4);
    const rest = AdminSessionPage.parse(
      (
        await get('/admin/sessions', {
          owner_id: owner,
          state: 'live',
          limit: 4,
          cursor: paged.next_cursor ?? '',
        })
      ).body,
    );
    expect(rest.items).toHaveLength(1);
    expect(rest.next_cursor).toBeNull();
  });

  it('answers bad input with the error envelope: cursor, filter value, unknown filter, unknown id', async () => {
    const sessionsCursor = AdminSessionPage.parse(
      (await get('/admin/sessions', { owner_id: owner, limit: 1 })).body,
    ).next_cursor;
    const cases: [string, Record<string, string | number>, number, string][] = [
      ['/admin/sandboxes', { cursor: 'not-a-cursor' }, 400, 'BAD_REQUEST'],
      ['/admin/sandboxes', { cursor: sessionsCursor ?? '' }, 400, 'BAD_REQUEST'],
      ['/admin/sandboxes', { state: 'sleeping' }, 400, 'BAD_REQUEST'],
      ['/admin/sandboxes', { colour: 'red' }, 400, 'BAD_REQUEST'],
      ['/admin/sandboxes', { limit: 0 }, 400, 'BAD_REQUEST'],
      ['/admin/sessions', { state: 'dead' }, 400, 'BAD_REQUEST'],
      ['/admin/audit', { cursor: 'YXVkaXR8eA' }, 400, 'BAD_REQUEST'],
      [`/admin/sandboxes/sb_${randomUUID()}`, {}, 404, 'SANDBOX_NOT_FOUND'],
    ];
    for (const [path, query, status, code] of cases) {
      const res = await get(path, query);
      expect([path, query, res.status, errorCode(res.body)]).toEqual([path, query, status, code]);
    }
    const unknown = await post(`/admin/sandboxes/sb_${randomUUID()}/terminate`);
    expect([unknown.status, errorCode(unknown.body)]).toEqual([404, 'SANDBOX_NOT_FOUND']);
    const badBody = await request(broker.url)
      .post(`/admin/sandboxes/${made[0]?.sandboxId ?? ''}/terminate`)
      .set(bearer(keys.admin))
      .send({ force: true });
    expect([badBody.status, errorCode(badBody.body)]).toEqual([400, 'BAD_REQUEST']);
  });

  it('shows one sandbox in full: bindings, state history, tokens by jti, recent audit', async () => {
    const first = made[0] as MadeSandbox;
    const detail = AdminSandboxDetail.parse((await get(`/admin/sandboxes/${first.sandboxId}`)).body);
    expect(detail.bindings.map((b) => b.id)).toEqual([first.sessionId]);
    expect(detail.state_history.map((h) => h.state)).toEqual(['provisioning', 'active']);
    expect(detail.tokens.length).toBeGreaterThanOrEqual(1);
    expect(detail.tokens[0]?.session_id).toBe(first.sessionId);
    expect(detail.recent_audit.some((e) => e.action === 'session.negotiate')).toBe(true);
    expect(detail.deadline).toBe(detail.lease_expires_at);
  });
});
