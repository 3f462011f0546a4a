// Sandboxes as resources (docs/sandboxes.md) through a real broker, real Postgres and the
// local provider's real agents: every route with its caller scope present and absent
// (exec:sandbox never opens a PTY), owner scoping (404 across tenants, admin across all),
// the lifecycle (stop keeps files, start resumes them, delete ends), and the data plane
// carried by the broker (files, commands, a shell) with tokens it mints itself.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { WebSocket } from 'ws';
import { SandboxResource } from '@sbx/protocol';
import { ALL_CALLER_SCOPES, bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { until } from '../support/until.js';
import { useLocalBroker } from '../support/use-local-broker.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;

/** Opens a session socket, authenticates with `key`, starts a shell; resolves how it ended and what it printed. */
async function shellThrough(
  url: string,
  path: string,
  key: string,
  command?: string,
  start: Record<string, unknown> = { type: 'start', cols: 80, rows: 24 },
) {
  const socket = new WebSocket(`${url.replace(/^http/, 'ws')}${path}`);
  let output = '';
  let shellId: string | undefined;
  const errors: string[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString('utf8') })),
  );
  socket.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) return;
    const frame = JSON.parse(data.toString('utf8')) as {
      type: string;
      data?: string;
      error?: { code: string };
      shell_session_id?: string;
    };
    if (frame.type === 'ready') shellId = frame.shell_session_id;
    if (frame.type === 'error' && frame.error !== undefined) errors.push(frame.error.code);
    if (frame.type === 'ready' && command !== undefined)
      socket.send(JSON.stringify({ type: 'stdin', data: `${command}\n` }));
    if (frame.type === 'stdout' && frame.data !== undefined) output += frame.data;
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  socket.send(JSON.stringify({ type: 'auth', token: key }));
  socket.send(JSON.stringify(start));
  return { socket, closed, output: () => output, errors: () => errors, shellId: () => shellId };
}

async function waitFor(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe(`sandbox resources [${backend.name}]`, () => {
  const broker = useLocalBroker(backend, {
    isolation: 'bubblewrap',
    settings: { provisioningWaitMs: 20_000 },
  });
  const owner = `usr_${randomUUID()}`;
  const keys: Record<string, string> = {};
  let sandbox: SandboxResource;

  beforeAll(async () => {
    for (const scope of ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'])
      keys[scope] = await broker.apiKey({ scopes: [scope], principalId: owner, principalType: 'user' });
    keys['all'] = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'],
      principalId: owner,
      principalType: 'user',
    });
    keys['stranger'] = await broker.apiKey({
      tenantId: `tenant_${randomUUID()}`,
      scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'],
    });
    keys['neighbour'] = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'],
    });
    keys['admin'] = await broker.apiKey({ tenantId: `tenant_${randomUUID()}`, scopes: ALL_CALLER_SCOPES });
    keys['admin only'] = await broker.apiKey({
      tenantId: `tenant_${randomUUID()}`,
      scopes: ['admin:sandbox'],
    });
    keys['admin, read and exec'] = await broker.apiKey({
      tenantId: `tenant_${randomUUID()}`,
      scopes: ['admin:sandbox', 'read:sandbox', 'exec:sandbox'],
    });
    const created = await request(broker.url)
      .post('/v1/sandboxes')
      .set(bearer(keys['write:sandbox']!))
      .send({ name: 'builder', metadata: { team: 'ml' }, environment: 'internal-only' });
    if (created.status !== 201) throw new Error(JSON.stringify(created.body));
    sandbox = SandboxResource.parse(created.body);
  }, 120_000);

  const call = (method: 'get' | 'post' | 'patch' | 'delete', path: string, key: string) =>
    request(broker.url)[method](path).set(bearer(key));

  it('creates a named, labelled, internal-only sandbox that its owner can list and inspect', async () => {
    expect(sandbox).toMatchObject({
      name: 'builder',
      metadata: { team: 'ml' },
      environment: 'internal-only',
      state: 'active',
      template: 'default',
      owner_id: owner,
      scope: { type: 'workspace' },
    });
    const listed = await call('get', '/v1/sandboxes?name=builder', keys['read:sandbox']!);
    expect(listed.body.items.map((s: SandboxResource) => s.id)).toEqual([sandbox.id]);
    const one = await call('get', `/v1/sandboxes/${sandbox.id}`, keys['read:sandbox']!);
    expect(one.body).toMatchObject({ id: sandbox.id, name: 'builder' });
  });

  it('authorizes each operation on its own caller scope, never on the method', async () => {
    const id = sandbox.id;
    const matrix: [string, () => request.Test, string][] = [
      [
        'read:sandbox',
        () => call('get', `/v1/sandboxes/${id}`, keys['exec:sandbox']!),
        'inspect without read',
      ],
      [
        'write:sandbox',
        () => call('patch', `/v1/sandboxes/${id}`, keys['read:sandbox']!).send({ name: 'x' }),
        'rename',
      ],
      ['write:sandbox', () => call('post', `/v1/sandboxes/${id}/stop`, keys['exec:sandbox']!), 'stop'],
      ['write:sandbox', () => call('delete', `/v1/sandboxes/${id}`, keys['read:sandbox']!), 'delete'],
      [
        'write:sandbox',
        () => call('post', `/v1/sandboxes/${id}/files?path=a.txt`, keys['exec:sandbox']!).send('x'),
        'upload',
      ],
      [
        'read:sandbox',
        () => call('get', `/v1/sandboxes/${id}/files?path=a.txt`, keys['write:sandbox']!),
        'download',
      ],
      [
        'exec:sandbox',
        () => call('post', `/v1/sandboxes/${id}/commands`, keys['write:sandbox']!).send({ cmd: 'true' }),
        'run',
      ],
      ['read:sandbox', () => call('get', `/v1/sandboxes/${id}/logs`, keys['exec:sandbox']!), 'logs'],
      ['read:sandbox', () => call('get', '/v1/sandboxes', keys['write:sandbox']!), 'list'],
      ['write:sandbox', () => call('post', `/v1/sandboxes/${id}/start`, keys['read:sandbox']!), 'start'],
      ['write:sandbox', () => call('post', '/v1/sandboxes', keys['exec:sandbox']!).send({}), 'create'],
    ];
    for (const [scope, send, what] of matrix) {
      const res = await send();
      expect([what, res.status, res.body.error?.message]).toEqual([
        what,
        403,
        expect.stringContaining(scope),
      ]);
    }
    // exec:sandbox does not imply attach:sandbox: the session socket is refused 1008.
    const refused = await shellThrough(broker.url, `/v1/sandboxes/${id}/sessions/new`, keys['exec:sandbox']!);
    expect((await refused.closed).code).toBe(1008);
    expect(refused.errors()).toEqual(['FORBIDDEN']);
  }, 60_000);

  it('lifts owner scoping for admin:sandbox but grants no operation with it', async () => {
    const id = sandbox.id;
    const only = keys['admin only']!;
    for (const [what, send] of [
      ['list', () => call('get', '/v1/sandboxes', only)],
      ['inspect', () => call('get', `/v1/sandboxes/${id}`, only)],
      ['run', () => call('post', `/v1/sandboxes/${id}/commands`, only).send({ cmd: 'true' })],
    ] as const) {
      const res = await send();
      expect([what, res.status, res.body.error?.code]).toEqual([what, 403, 'FORBIDDEN']);
    }
    const onlyShell = await shellThrough(broker.url, `/v1/sandboxes/${id}/sessions/new`, only);
    expect([(await onlyShell.closed).code, onlyShell.errors()]).toEqual([1008, ['FORBIDDEN']]);

    // With read and exec beside it, the operator of another tenant lists, inspects and runs
    // commands in this owner's sandbox, and still gets no shell without attach:sandbox.
    const operator = keys['admin, read and exec']!;
    const listed = await call('get', `/v1/sandboxes?tenant_id=${broker.tenantId}`, operator);
    expect(listed.body.items.map((s: SandboxResource) => s.id)).toContain(id);
    const ran = await call('post', `/v1/sandboxes/${id}/commands`, operator).send({ cmd: 'echo operator' });
    expect([ran.status, ran.body.stdout]).toEqual([200, 'operator\n']);
    const shell = await shellThrough(broker.url, `/v1/sandboxes/${id}/sessions/new`, operator);
    expect([(await shell.closed).code, shell.errors()]).toEqual([1008, ['FORBIDDEN']]);
  }, 60_000);

  it('carries files, commands and a shell through the broker with the operation’s scope', async () => {
    const id = sandbox.id;
    const content = randomBytes(300_000);
    const up = await call('post', `/v1/sandboxes/${id}/files?path=data/blob.bin`, keys['write:sandbox']!)
      .set('content-type', 'application/octet-stream')
      .send(content);
    expect(up.status).toBeLessThan(300);
    const down = await call('get', `/v1/sandboxes/${id}/files?path=data/blob.bin`, keys['read:sandbox']!)
      .buffer(true)
      .parse((res, done) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => done(null, Buffer.concat(chunks)));
      });
    expect(
      createHash('sha256')
        .update(down.body as Buffer)
        .digest('hex'),
    ).toBe(createHash('sha256').update(content).digest('hex'));
    const ran = await call('post', `/v1/sandboxes/${id}/commands`, keys['exec:sandbox']!).send({
      cmd: 'wc -c < data/blob.bin; exit 3',
    });
    expect(ran.status).toBe(200);
    expect(ran.body).toMatchObject({ exit_code: 3, stdout: '300000\n' });
    const background = await call('post', `/v1/sandboxes/${id}/commands`, keys['exec:sandbox']!).send({
      background: true,
      cmd: 'sleep 30',
    });
    expect(background.status).toBeLessThan(300);
    expect(background.body.process_id).toMatch(/^proc_/);
    const bad = await call('post', `/v1/sandboxes/${id}/commands`, keys['exec:sandbox']!).send({
      background: 'yes',
    });
    expect(bad.status).toBe(400);

    // The agent's command log, paged by read:sandbox; each entry's jti is the one the broker
    // minted for that relayed call, and the broker's audit row of the call names it too.
    const logs = await call('get', `/v1/sandboxes/${id}/logs?limit=10`, keys['read:sandbox']!);
    expect(logs.status).toBe(200);
    const entries = logs.body.items as {
      command: string;
      sub: string;
      exit_code: number | null;
      jti: string;
    }[];
    const wc = entries.find((entry) => entry.command.startsWith('wc -c'));
    expect(wc).toMatchObject({ sub: owner, exit_code: 3 });
    // The token is kept per caller and capability: the row of this very call is the one
    // with its route and the agent's answer.
    const relayRows = () =>
      broker.database.prisma.auditEvent.findMany({ where: { action: 'sandbox.relay', jti: wc!.jti } });
    const runRow = async () =>
      (await relayRows()).find((row) => JSON.stringify(row.detail).includes('"commands.run"'));
    // The row is written as the answer leaves.
    await until(async () => (await runRow()) !== undefined, 'the relayed call audit row');
    expect(await runRow()).toMatchObject({
      sandboxId: id,
      callerId: owner,
      outcome: 'ok',
      detail: { route: 'commands.run', status: 200 },
    });
    expect((await call('get', `/v1/sandboxes/${id}/logs?bogus=1`, keys['read:sandbox']!)).status).toBe(400);

    const shell = await shellThrough(
      broker.url,
      `/v1/sandboxes/${id}/sessions/new`,
      keys['attach:sandbox']!,
      'echo "through-$((40 + 2))"; exit',
    );
    await waitFor(() => shell.output().includes('through-42'), 'the shell output');
    expect((await shell.closed).code).toBe(1000);
  }, 120_000);

  it('re-attaches to the shell the session path names, and refuses a start frame naming another', async () => {
    const id = sandbox.id;
    const key = keys['attach:sandbox']!;
    const first = await shellThrough(
      broker.url,
      `/v1/sandboxes/${id}/sessions/new`,
      key,
      'MARK=kept-$((6 * 7))',
    );
    await waitFor(() => first.shellId() !== undefined, 'the new shell');
    const shellId = first.shellId()!;
    first.socket.close(1000);
    await first.closed;

    const again = await shellThrough(
      broker.url,
      `/v1/sandboxes/${id}/sessions/${shellId}`,
      key,
      'echo "mark:$MARK"',
    );
    await waitFor(() => again.output().includes('mark:kept-42'), 'the same shell, re-attached');
    expect(again.shellId()).toBe(shellId);
    again.socket.close(1000);
    await again.closed;

    for (const start of [
      { type: 'start', cols: 80, rows: 24, shell_session_id: 'shl_another' },
      { type: 'stdin', data: 'echo hi\n' },
    ]) {
      const refused = await shellThrough(
        broker.url,
        `/v1/sandboxes/${id}/sessions/${shellId}`,
        key,
        undefined,
        start,
      );
      expect([(await refused.closed).code, refused.errors()]).toEqual([1008, ['BAD_REQUEST']]);
    }
  }, 60_000);

  it('keeps the shell token when a caller closes 1008, retires it when the agent refuses it', async () => {
    const id = sandbox.id;
    const key = keys['attach:sandbox']!;
    /** The jtis of this sandbox's relayed `sessions/new` sockets, oldest first. */
    const shellJtis = async () =>
      (
        await broker.database.prisma.auditEvent.findMany({
          where: { action: 'sandbox.relay', sandboxId: id },
          orderBy: { id: 'asc' },
        })
      )
        .filter((row) => JSON.stringify(row.detail).includes('"sessions/new"'))
        .map((row) => row.jti);
    const shell = async (how: 'exit' | 'close 1008') => {
      const count = (await shellJtis()).length;
      const opened = await shellThrough(
        broker.url,
        `/v1/sandboxes/${id}/sessions/new`,
        key,
        how === 'exit' ? 'exit' : undefined,
      );
      if (how === 'close 1008') {
        await waitFor(() => opened.shellId() !== undefined, 'the shell');
        opened.socket.close(1008, 'caller policy');
      }
      const { code } = await opened.closed;
      await until(async () => (await shellJtis()).length > count, 'the socket audit row');
      return { code, errors: opened.errors(), jti: (await shellJtis()).at(-1)! };
    };
    const first = await shell('exit');
    expect(first.code).toBe(1000);
    // The caller's own 1008 (echoed by the agent) is no refusal of the token: it stays kept.
    expect((await shell('close 1008')).jti).toBe(first.jti);
    expect((await shell('exit')).jti).toBe(first.jti);

    const revoked = await call('post', '/admin/revocations', keys['admin']!).send({ jti: first.jti });
    expect(revoked.status).toBe(200);
    const refusals: string[][] = [];
    await until(
      async () => {
        const next = await shell('exit');
        if (next.code === 1008) refusals.push(next.errors);
        return next.code === 1000 && next.jti !== first.jti;
      },
      'a shell under a newly minted token',
      100,
    );
    expect(refusals.length).toBeLessThanOrEqual(1);
    for (const errors of refusals) expect(errors).toEqual(['UNAUTHENTICATED']);
  }, 90_000);

  it('hides a sandbox from other tenants (404) and lets an admin of any tenant see and act on it', async () => {
    const id = sandbox.id;
    // A stranger of another tenant, and a neighbour of the same tenant under another owner.
    for (const who of ['stranger', 'neighbour']) {
      for (const [method, path] of [
        ['get', `/v1/sandboxes/${id}`],
        ['patch', `/v1/sandboxes/${id}`],
        ['delete', `/v1/sandboxes/${id}`],
        ['get', `/v1/sandboxes/${id}/files?path=data/blob.bin`],
        ['post', `/v1/sandboxes/${id}/files?path=planted.txt`],
        ['get', `/v1/sandboxes/${id}/logs`],
        ['post', `/v1/sandboxes/${id}/stop`],
        ['post', `/v1/sandboxes/${id}/start`],
        ['post', `/v1/sandboxes/${id}/commands`],
      ] as const) {
        const body =
          method === 'patch' ? { name: 'taken' } : path.endsWith('commands') ? { cmd: 'true' } : {};
        const res = await call(method, path, keys[who]!).send(body);
        expect([who, method, path, res.status, res.body.error?.code]).toEqual([
          who,
          method,
          path,
          404,
          'SANDBOX_NOT_FOUND',
        ]);
      }
      const theirs = await call('get', '/v1/sandboxes', keys[who]!);
      expect(theirs.body.items.map((s: SandboxResource) => s.id)).not.toContain(id);
      const shell = await shellThrough(broker.url, `/v1/sandboxes/${id}/sessions/new`, keys[who]!);
      expect([who, (await shell.closed).code, shell.errors()]).toEqual([who, 1008, ['SANDBOX_NOT_FOUND']]);
    }
    const mine = await call('get', `/v1/sandboxes/${id}`, keys['read:sandbox']!);
    expect([mine.body.name, mine.body.state]).toEqual(['builder', 'active']);
    const planted = await call('post', `/v1/sandboxes/${id}/commands`, keys['exec:sandbox']!).send({
      cmd: 'test -e planted.txt && echo planted || echo clean',
    });
    expect(planted.body.stdout).toBe('clean\n');
    const seen = await call('get', `/v1/sandboxes/${id}`, keys['admin']!);
    expect(seen.body.tenant_id).toBe(broker.tenantId);
  });

  it('stops (files kept), starts again, renames, and deletes', async () => {
    const id = sandbox.id;
    const stopped = await call('post', `/v1/sandboxes/${id}/stop`, keys['write:sandbox']!);
    expect([stopped.status, stopped.body.state]).toEqual([200, 'suspended']);
    const refused = await call('post', `/v1/sandboxes/${id}/commands`, keys['exec:sandbox']!).send({
      cmd: 'true',
    });
    expect(refused.status).toBe(409);
    const started = await call('post', `/v1/sandboxes/${id}/start`, keys['write:sandbox']!);
    expect([started.status, started.body.state]).toEqual([200, 'active']);
    const kept = await call('post', `/v1/sandboxes/${id}/commands`, keys['exec:sandbox']!).send({
      cmd: 'wc -c < data/blob.bin',
    });
    expect(kept.body.stdout).toBe('300000\n');
    // Rotating the sandbox's key retires the relay's kept tokens: the next call mints anew.
    const rotated = await call('post', '/admin/revocations', keys['admin']!).send({ sandbox_id: id });
    expect(rotated.status).toBe(200);
    const afterRotation = await call('post', `/v1/sandboxes/${id}/commands`, keys['exec:sandbox']!).send({
      cmd: 'echo ok',
    });
    expect([afterRotation.status, afterRotation.body.stdout]).toEqual([200, 'ok\n']);
    // Revoking the one kept token's jti: the agents refuse it within a second, and the relay
    // mints another rather than failing this caller's commands until the token expires.
    /** The jti of the newest logged run of `cmd` (the log pages oldest first). */
    const jtiOf = async (cmd: string) => {
      const page = await call('get', `/v1/sandboxes/${id}/logs?limit=200`, keys['read:sandbox']!);
      return (page.body.items as { command: string; jti: string }[]).filter((e) => e.command === cmd).at(-1)
        ?.jti;
    };
    const revokedJti = (await jtiOf('echo ok'))!;
    const revoked = await call('post', '/admin/revocations', keys['admin']!).send({ jti: revokedJti });
    expect([revoked.status, revoked.body.revoked_tokens]).toEqual([200, 1]);
    await until(
      async () => {
        const again = await call('post', `/v1/sandboxes/${id}/commands`, keys['exec:sandbox']!).send({
          cmd: 'echo again',
        });
        expect([again.status, again.body.stdout]).toEqual([200, 'again\n']);
        return (await jtiOf('echo again')) !== revokedJti;
      },
      'a relayed command under a newly minted token',
      100,
    );
    const renamed = await call('patch', `/v1/sandboxes/${id}`, keys['write:sandbox']!).send({
      name: 'trainer',
      metadata: {},
    });
    expect(renamed.body).toMatchObject({ name: 'trainer', metadata: {} });
    expect((await call('delete', `/v1/sandboxes/${id}`, keys['write:sandbox']!)).status).toBe(204);
    expect((await call('get', `/v1/sandboxes/${id}`, keys['read:sandbox']!)).body.state).toBe('terminated');
    expect((await call('delete', `/v1/sandboxes/${id}`, keys['write:sandbox']!)).status).toBe(204);
  }, 120_000);

  it('binds a new sandbox to a thread: the thread routes find the same sandbox', async () => {
    const thread = `thr_${randomUUID()}`;
    const created = await call('post', '/v1/sandboxes', keys['all']!).send({ thread_id: thread });
    expect(created.status).toBe(201);
    const viaThread = await call('post', `/threads/${thread}/sandbox`, keys['all']!).send({
      scopes: ['fs:ro'],
    });
    expect(viaThread.body.sandbox_id).toBe(created.body.id);
    const again = await call('post', '/v1/sandboxes', keys['all']!).send({ thread_id: thread });
    expect(again.status).toBe(409);
    const wide = await call('post', '/v1/sandboxes', keys['all']!).send({ template: 'gpu-large' });
    expect([wide.status, wide.body.error.code]).toEqual([400, 'BAD_REQUEST']);
  }, 120_000);
});
