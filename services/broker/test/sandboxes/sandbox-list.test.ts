// Listing sandboxes as resources (GET /v1/sandboxes, docs/sandboxes.md) on a real broker
// and Postgres with the FAKE provider (listing needs no real agent): every filter of the
// list schema (state, scope_type, thread_id, name) returns exactly the caller's matching
// sandboxes, stopped and deleted ones under their state; keyset pagination by cursor
// visits each sandbox once in the documented order; owner scoping hides other owners and
// tenants, admin:sandbox lifts it and alone may filter by tenant_id; a malformed cursor,
// limit or unknown parameter is a 400 in the error envelope.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import {
  SANDBOX_STATES,
  SCOPE_TYPES,
  SandboxPage,
  SandboxResource,
  type SandboxState,
  type ScopeType,
} from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { liftOwnerShare } from '../support/owner-share.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;
const OWNER_SCOPES = ['read:sandbox', 'write:sandbox'];

describe(`listing sandboxes [${backend.name}]`, () => {
  const broker = useBroker(backend);

  const get = (path: string, key: string) => request(broker.url).get(path).set(bearer(key));

  /** One page, checked against the wire schema. */
  async function page(key: string, query: string): Promise<SandboxPage> {
    const res = await get(`/v1/sandboxes${query}`, key);
    if (res.status !== 200)
      throw new Error(`GET /v1/sandboxes${query}: ${res.status} ${JSON.stringify(res.body)}`);
    return SandboxPage.parse(res.body);
  }

  /** Ids of one full listing (limit 200: every test here stays well below it). */
  async function ids(key: string, query = ''): Promise<string[]> {
    const listed = await page(key, query === '' ? '?limit=200' : `?${query}&limit=200`);
    expect(listed.next_cursor).toBeNull();
    return listed.items.map((s) => s.id).toSorted();
  }

  async function create(key: string, body: Record<string, unknown> = {}): Promise<SandboxResource> {
    const res = await request(broker.url).post('/v1/sandboxes').set(bearer(key)).send(body);
    if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
    return SandboxResource.parse(res.body);
  }

  /** A sandbox of a scope type POST /v1/sandboxes never makes (assistant, deployment). */
  async function negotiate(key: string, scope: { type: ScopeType; id: string }): Promise<string> {
    const res = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ scope, mode: 'ensure' });
    if (res.status !== 200) throw new Error(`negotiate: ${res.status} ${JSON.stringify(res.body)}`);
    return (res.body as { sandbox: { id: string } }).sandbox.id;
  }

  async function stop(key: string, id: string): Promise<void> {
    const res = await request(broker.url).post(`/v1/sandboxes/${id}/stop`).set(bearer(key));
    expect([res.status, res.body.state]).toEqual([200, 'suspended']);
  }

  async function remove(key: string, id: string): Promise<void> {
    const res = await request(broker.url).delete(`/v1/sandboxes/${id}`).set(bearer(key));
    expect(res.status).toBe(204);
  }

  const answerOf = (res: request.Response): unknown => [res.status, res.body];
  const refusal = (status: number, code: string): unknown => [
    status,
    { error: expect.objectContaining({ code, message: expect.any(String) }) },
  ];

  describe('filters', () => {
    const keys: Record<'owner' | 'neighbour' | 'stranger', string> = {
      owner: '',
      neighbour: '',
      stranger: '',
    };
    /** The owner's sandboxes, with what each filter should see of them. */
    const mine: {
      id: string;
      name: string | null;
      state: SandboxState;
      scope: ScopeType;
      thread?: string;
    }[] = [];
    const thread = `thr_${randomUUID()}`;
    const reusedThread = `thr_${randomUUID()}`;

    beforeAll(async () => {
      await liftOwnerShare(broker.repositories, broker.tenantId); // the owner makes more than five
      keys.owner = await broker.apiKey({ scopes: OWNER_SCOPES, principalId: `usr_${randomUUID()}` });
      keys.neighbour = await broker.apiKey({ scopes: OWNER_SCOPES, principalId: `usr_${randomUUID()}` });
      keys.stranger = await broker.apiKey({ scopes: OWNER_SCOPES, tenantId: `tenant_${randomUUID()}` });

      const alpha = await create(keys.owner, { name: 'alpha', metadata: { team: 'ml' } });
      mine.push({ id: alpha.id, name: 'alpha', state: 'active', scope: 'workspace' });
      const alpha2 = await create(keys.owner, { name: 'alpha2' });
      mine.push({ id: alpha2.id, name: 'alpha2', state: 'active', scope: 'workspace' });
      const threaded = await create(keys.owner, { name: 'beta', thread_id: thread });
      mine.push({ id: threaded.id, name: 'beta', state: 'active', scope: 'thread', thread });
      const stopped = await create(keys.owner, { name: 'gamma' });
      await stop(keys.owner, stopped.id);
      mine.push({ id: stopped.id, name: 'gamma', state: 'suspended', scope: 'workspace' });
      const deleted = await create(keys.owner, { name: 'delta' });
      await remove(keys.owner, deleted.id);
      mine.push({ id: deleted.id, name: 'delta', state: 'terminated', scope: 'workspace' });
      // A thread whose sandbox was deleted, then given a new one: both are the thread's.
      const first = await create(keys.owner, { thread_id: reusedThread });
      await remove(keys.owner, first.id);
      mine.push({ id: first.id, name: null, state: 'terminated', scope: 'thread', thread: reusedThread });
      const second = await create(keys.owner, { name: 'epsilon', thread_id: reusedThread });
      mine.push({ id: second.id, name: 'epsilon', state: 'active', scope: 'thread', thread: reusedThread });
      const assistant = await negotiate(keys.owner, { type: 'assistant', id: `asst_${randomUUID()}` });
      mine.push({ id: assistant, name: null, state: 'active', scope: 'assistant' });
      const deployment = await negotiate(keys.owner, { type: 'deployment', id: `dep_${randomUUID()}` });
      mine.push({ id: deployment, name: null, state: 'active', scope: 'deployment' });

      // Others with the same names, the same thread id and every state and scope type:
      // none of theirs may show up in the owner's filtered lists.
      for (const other of [keys.neighbour, keys.stranger]) {
        await create(other, { name: 'alpha', metadata: { team: 'ml' } });
        await create(other, { name: 'beta', thread_id: thread });
        await stop(other, (await create(other, { name: 'gamma' })).id);
        await remove(other, (await create(other, { name: 'delta' })).id);
        await negotiate(other, { type: 'assistant', id: `asst_${randomUUID()}` });
        await negotiate(other, { type: 'deployment', id: `dep_${randomUUID()}` });
      }
    }, 120_000);

    const idsOf = (pick: (s: (typeof mine)[number]) => boolean) =>
      mine
        .filter(pick)
        .map((s) => s.id)
        .toSorted();

    it('lists every one of the caller’s sandboxes, whatever its state, and nobody else’s', async () => {
      expect(await ids(keys.owner)).toEqual(idsOf(() => true));
    }, 60_000);

    it('filters by state: a stopped sandbox is suspended, a deleted one terminated', async () => {
      for (const state of SANDBOX_STATES) {
        const listed = await page(keys.owner, `?state=${state}&limit=200`);
        expect([state, listed.items.map((s) => s.id).toSorted()]).toEqual([
          state,
          idsOf((s) => s.state === state),
        ]);
        for (const item of listed.items) expect([item.id, item.state]).toEqual([item.id, state]);
      }
      // The setup made one stopped and two deleted sandboxes for these to find.
      expect(idsOf((s) => s.state === 'suspended')).toHaveLength(1);
      expect(idsOf((s) => s.state === 'terminated')).toHaveLength(2);
    }, 60_000);

    it('filters by scope_type', async () => {
      for (const scopeType of SCOPE_TYPES) {
        const listed = await page(keys.owner, `?scope_type=${scopeType}&limit=200`);
        expect([scopeType, listed.items.map((s) => s.id).toSorted()]).toEqual([
          scopeType,
          idsOf((s) => s.scope === scopeType),
        ]);
        for (const item of listed.items) expect(item.scope.type).toBe(scopeType);
      }
    }, 60_000);

    it('filters by thread_id: the thread’s sandboxes, the deleted one included', async () => {
      expect(await ids(keys.owner, `thread_id=${thread}`)).toEqual(idsOf((s) => s.thread === thread));
      expect(await ids(keys.owner, `thread_id=${reusedThread}`)).toEqual(
        idsOf((s) => s.thread === reusedThread),
      );
      expect(await ids(keys.owner, `thread_id=${reusedThread}&state=active`)).toEqual(
        idsOf((s) => s.thread === reusedThread && s.state === 'active'),
      );
      expect(await ids(keys.owner, `thread_id=thr_${randomUUID()}`)).toEqual([]);
      // A workspace sandbox's scope id is not a thread id.
      const workspace = await page(keys.owner, '?name=alpha');
      expect(await ids(keys.owner, `thread_id=${workspace.items[0]!.scope.id}`)).toEqual([]);
    }, 60_000);

    it('filters by exact name, never by prefix', async () => {
      for (const name of ['alpha', 'alpha2', 'beta', 'gamma', 'delta', 'epsilon'])
        expect([name, await ids(keys.owner, `name=${name}`)]).toEqual([name, idsOf((s) => s.name === name)]);
      expect(await ids(keys.owner, 'name=alph')).toEqual([]);
      const alpha = (await page(keys.owner, '?name=alpha')).items;
      expect(alpha).toHaveLength(1);
      expect(alpha[0]).toMatchObject({ name: 'alpha', metadata: { team: 'ml' }, state: 'active' });
    }, 60_000);

    it('combines filters as AND', async () => {
      expect(await ids(keys.owner, 'state=active&scope_type=workspace')).toEqual(
        idsOf((s) => s.state === 'active' && s.scope === 'workspace'),
      );
      expect(await ids(keys.owner, 'state=terminated&scope_type=thread')).toEqual(
        idsOf((s) => s.state === 'terminated' && s.scope === 'thread'),
      );
      // thread_id names a thread: with another scope_type nothing can match.
      expect(await ids(keys.owner, `thread_id=${thread}&scope_type=thread`)).toEqual(
        idsOf((s) => s.thread === thread),
      );
      expect(await ids(keys.owner, `thread_id=${thread}&scope_type=workspace`)).toEqual([]);
      expect(await ids(keys.owner, 'name=gamma&state=active')).toEqual([]);
      expect(await ids(keys.owner, 'name=gamma&state=suspended')).toEqual(idsOf((s) => s.name === 'gamma'));
    }, 60_000);

    it('refuses a value a filter does not accept with 400 BAD_REQUEST', async () => {
      for (const query of [
        'state=running',
        'scope_type=project',
        'name=-leading-dash',
        'name=',
        'state=active&state=idle',
      ])
        expect(answerOf(await get(`/v1/sandboxes?${query}`, keys.owner))).toEqual(
          refusal(400, 'BAD_REQUEST'),
        );
    }, 60_000);

    it('refuses an unknown query parameter with 400 instead of listing everything', async () => {
      for (const query of ['owner_id=someone', 'nme=alpha', 'metadata=team', 'label=team%3Dml', 'page=2']) {
        const res = await get(`/v1/sandboxes?${query}`, keys.owner);
        expect(answerOf(res)).toEqual(refusal(400, 'BAD_REQUEST'));
      }
    }, 60_000);

    describe('owner scoping', () => {
      let operator: string;
      let operatorNoRead: string;
      beforeAll(async () => {
        operator = await broker.apiKey({
          tenantId: `tenant_${randomUUID()}`,
          scopes: ['admin:sandbox', 'read:sandbox'],
        });
        operatorNoRead = await broker.apiKey({
          tenantId: `tenant_${randomUUID()}`,
          scopes: ['admin:sandbox'],
        });
      }, 60_000);

      it('shows another owner of the tenant and another tenant none of the caller’s sandboxes', async () => {
        const owners = new Set(idsOf(() => true));
        for (const other of [keys.neighbour, keys.stranger]) {
          const theirs = await ids(other);
          expect(theirs).toHaveLength(6);
          expect(theirs.filter((id) => owners.has(id))).toEqual([]);
          for (const query of [
            'name=alpha',
            `thread_id=${thread}`,
            'state=suspended',
            'scope_type=assistant',
          ])
            expect((await ids(other, query)).filter((id) => owners.has(id))).toEqual([]);
        }
      }, 60_000);

      it('lets admin:sandbox with read:sandbox list another tenant’s sandboxes by tenant_id', async () => {
        const tenant = await page(operator, `?tenant_id=${broker.tenantId}&limit=200`);
        const listed = tenant.items.map((s) => s.id);
        for (const s of mine) expect(listed).toContain(s.id);
        // The owner's and the neighbour's, never the stranger's tenant.
        expect(listed).toHaveLength(mine.length + 6);
        for (const item of tenant.items) expect(item.tenant_id).toBe(broker.tenantId);
        // Filters apply within the tenant filter.
        const alphas = await page(operator, `?tenant_id=${broker.tenantId}&name=alpha`);
        expect(alphas.items.map((s) => s.name)).toEqual(['alpha', 'alpha']);
        expect(alphas.items.map((s) => s.id)).toContain(mine[0]!.id);
        // Without tenant_id it sees every tenant; an unknown tenant has none.
        const all = (await page(operator, '?limit=200')).items.map((s) => s.id);
        for (const s of mine) expect(all).toContain(s.id);
        expect(all.length).toBeGreaterThanOrEqual(mine.length + 12);
        expect(await ids(operator, `tenant_id=tenant_${randomUUID()}`)).toEqual([]);
      }, 60_000);

      it('refuses admin:sandbox without read:sandbox with 403 FORBIDDEN', async () => {
        expect(answerOf(await get(`/v1/sandboxes?tenant_id=${broker.tenantId}`, operatorNoRead))).toEqual(
          refusal(403, 'FORBIDDEN'),
        );
      }, 60_000);

      it('refuses tenant_id from a caller without admin:sandbox with 403 FORBIDDEN, even its own tenant', async () => {
        for (const tenant of [broker.tenantId, `tenant_${randomUUID()}`]) {
          const res = await get(`/v1/sandboxes?tenant_id=${tenant}`, keys.neighbour);
          expect(answerOf(res)).toEqual(refusal(403, 'FORBIDDEN'));
          expect(res.body.error.message).toContain('tenant_id');
        }
      }, 60_000);
    });
  });

  describe('cursor pagination', () => {
    let key: string;
    const created: string[] = [];

    beforeAll(async () => {
      // A tenant of its own: the filters' sandboxes fill the harness tenant's quota of 10.
      const tenantId = `tenant_${randomUUID()}`;
      await liftOwnerShare(broker.repositories, tenantId); // five, and one more between pages
      key = await broker.apiKey({ scopes: OWNER_SCOPES, tenantId });
      for (let i = 0; i < 5; i += 1) created.push((await create(key, { name: `page-${i}` })).id);
    }, 120_000);

    /** Follows next_cursor from the first page; the pages' ids. */
    async function walk(limit: number, between?: () => Promise<void>): Promise<string[][]> {
      const pages: string[][] = [];
      let cursor: string | null = null;
      do {
        const listed: SandboxPage = await page(
          key,
          `?limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`,
        );
        pages.push(listed.items.map((s) => s.id));
        cursor = listed.next_cursor;
        if (pages.length === 1 && between !== undefined) await between();
        if (pages.length > 10) throw new Error('the cursor never ends');
      } while (cursor !== null);
      return pages;
    }

    it('visits 5 sandboxes in pages of 2, each once, newest first, the last page saying there is no more', async () => {
      const pages = await walk(2);
      expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
      const walked = pages.flat();
      expect([...walked].toSorted()).toEqual([...created].toSorted());
      expect(new Set(walked).size).toBe(5);

      // The same order as one page of everything: (created_at, id) descending.
      const whole = await page(key, '?limit=200');
      expect(whole.next_cursor).toBeNull();
      expect(whole.items.map((s) => s.id)).toEqual(walked);
      const order = whole.items.map((s) => [s.created_at, s.id] as const);
      const sorted = order.toSorted(([at1, id1], [at2, id2]) =>
        at1 === at2 ? (id1 < id2 ? 1 : -1) : Date.parse(at2) - Date.parse(at1),
      );
      expect(order).toEqual(sorted);
      // Newest first: the last one created is never after the first one created.
      expect(walked.indexOf(created[4]!)).toBeLessThan(walked.indexOf(created[0]!));

      // Walking twice gives the same pages; exact multiples end without an empty page.
      expect(await walk(2)).toEqual(pages);
      expect((await walk(5)).map((p) => p.length)).toEqual([5]);
      expect((await walk(1)).flat()).toEqual(walked);
    }, 60_000);

    it('keeps the remaining pages stable when a sandbox is created between pages', async () => {
      const before = (await page(key, '?limit=200')).items.map((s) => s.id);
      let added = '';
      const pages = await walk(2, async () => {
        added = (await create(key, { name: 'page-late' })).id;
      });
      expect(pages.flat()).toEqual(before);
      expect(pages.flat()).not.toContain(added);
      // The newcomer heads the next listing.
      expect((await page(key, '?limit=1')).items[0]!.id).toBe(added);
    }, 60_000);

    it('refuses a malformed or foreign cursor with 400 BAD_REQUEST, not 500', async () => {
      const foreign = Buffer.from(`sessions|${Date.now()}|sbx_x`, 'utf8').toString('base64url');
      const tampered = Buffer.from(`sandboxes|not-a-time|sbx_x`, 'utf8').toString('base64url');
      const extra = Buffer.from(`sandboxes|${Date.now()}|sbx_x|more`, 'utf8').toString('base64url');
      for (const cursor of ['not a cursor!', 'abc', foreign, tampered, extra, 'x'.repeat(600), ''])
        expect(answerOf(await get(`/v1/sandboxes?cursor=${encodeURIComponent(cursor)}`, key))).toEqual(
          refusal(400, 'BAD_REQUEST'),
        );
    }, 60_000);

    it('accepts limits 1 to 200 and refuses any other with 400 BAD_REQUEST, not 500', async () => {
      expect((await page(key, '?limit=1')).items).toHaveLength(1);
      expect((await page(key, '?limit=200')).items.length).toBeGreaterThanOrEqual(5);
      for (const limit of ['0', '201', '-1', '1.5', 'ten', '1e9', ''])
        expect(answerOf(await get(`/v1/sandboxes?limit=${limit}`, key))).toEqual(refusal(400, 'BAD_REQUEST'));
    }, 60_000);
  });
});
