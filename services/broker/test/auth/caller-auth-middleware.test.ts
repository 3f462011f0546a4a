import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import { pino } from 'pino';
import request from 'supertest';
import { assignRequestId, errorHandler, notFound } from '@sbx/service-kit';
import { createCallerAuthenticator } from '../../src/domain/auth/authenticate-caller.js';
import { createOidcVerifier } from '../../src/domain/auth/oidc-verifier.js';
import { assertOwns, type OwnedResource } from '../../src/domain/auth/principal.js';
import {
  authenticateCaller,
  principalOf,
  requireCallerScope,
} from '../../src/http/auth/caller-auth-middleware.js';
import { ApiKeyRepository } from '../../src/store/api-key-repository.js';
import { backends, useTestDatabase } from '../support/test-database.js';
import { startTestOidcIssuer, type TestOidcIssuer } from '../support/test-oidc-issuer.js';

const backend = backends.find((b) => b.available) ?? backends[backends.length - 1]!;

const sandboxes = new Map<string, OwnedResource & { id: string }>([
  ['sbx_alice', { id: 'sbx_alice', tenantId: 'acme', ownerId: 'alice' }],
  ['sbx_bob', { id: 'sbx_bob', tenantId: 'acme', ownerId: 'bob' }],
]);

describe(`caller authentication over HTTP [${backend.name}]`, () => {
  const db = useTestDatabase(backend);
  let issuer: TestOidcIssuer;
  let keys: Record<'alice' | 'execOnly' | 'attach' | 'admin', string>;
  beforeAll(async () => {
    issuer = await startTestOidcIssuer();
    const repo = new ApiKeyRepository(db().prisma);
    const key = async (principalId: string, scopes: string[]) =>
      (await repo.create({ tenantId: 'acme', principalId, scopes })).key;
    keys = {
      alice: await key('alice', ['read:sandbox']),
      execOnly: await key('runner', ['exec:sandbox']),
      attach: await key('human', ['attach:sandbox']),
      admin: await key('ops', ['admin:sandbox', 'read:sandbox']),
    };
  });
  afterAll(() => issuer.close());

  /** The broker's middleware chain around a few routes, logging at debug into `logs`. */
  function server() {
    const logs: string[] = [];
    const logger = pino(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          logs.push(chunk.toString('utf8'));
          done();
        },
      }),
    );
    const oidc = createOidcVerifier({
      issuer: issuer.issuer,
      audience: issuer.audience,
      jwksUri: issuer.jwksUri,
    });
    const app = express();
    app.use(assignRequestId);
    app.use(
      authenticateCaller(
        createCallerAuthenticator({ apiKeys: new ApiKeyRepository(db().prisma), oidc }),
        logger,
      ),
    );
    app.get('/whoami', (_req, res) => {
      const caller = principalOf(res);
      res.json({ id: caller.id, tenant: caller.tenantId, via: caller.via });
    });
    app.get('/attach', requireCallerScope('attach:sandbox'), (_req, res) => {
      res.json({ attached: true });
    });
    app.get('/sandboxes/:id', requireCallerScope('read:sandbox'), (req, res) => {
      const id = String(req.params['id']);
      const sandbox = sandboxes.get(id);
      assertOwns(principalOf(res), sandbox, 'SANDBOX_NOT_FOUND', `sandbox ${id} does not exist`);
      res.json(sandbox);
    });
    app.use(notFound);
    app.use(errorHandler(logger));
    return { app, logs };
  }

  it('answers a missing or refused credential with 401, WWW-Authenticate and the envelope', async () => {
    const { app } = server();
    const expired = issuer.sign({ exp: 1000 });
    // [Authorization header, the credential it carries]; the first request sends none.
    const refused: [string | undefined, string][] = [
      [undefined, ''],
      [`Bearer ${keys.alice}x`, `${keys.alice}x`],
      [`Bearer ${expired}`, expired],
      ['Basic dXNlcjpwYXNz', 'dXNlcjpwYXNz'],
    ];
    for (const [authorization, credential] of refused) {
      const req = request(app).get('/whoami').set('X-Request-Id', 'req_auth_1');
      const res = await (authorization === undefined ? req : req.set('Authorization', authorization));
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.body).toEqual({
        error: {
          code: 'UNAUTHENTICATED',
          message: expect.any(String),
          retryable: false,
          request_id: 'req_auth_1',
        },
      });
      expect(res.text).not.toMatch(/at .*\.(ts|js):\d+/);
      expect(credential === '' || !res.text.includes(credential)).toBe(true);
    }
  });

  it('lets an API key and an OIDC token through as their principals', async () => {
    const { app } = server();
    const byKey = await request(app).get('/whoami').set('Authorization', `Bearer ${keys.alice}`);
    expect(byKey.body).toEqual({ id: 'alice', tenant: 'acme', via: 'api_key' });
    const token = issuer.sign({ sub: 'dora', tenant_id: 'globex' }, { alg: 'ES256' });
    const byToken = await request(app).get('/whoami').set('Authorization', `Bearer ${token}`);
    expect(byToken.body).toEqual({ id: 'dora', tenant: 'globex', via: 'oidc' });
  });

  it('answers 403 FORBIDDEN without the scope: exec:sandbox and admin:sandbox do not open attach', async () => {
    const { app } = server();
    for (const key of [keys.execOnly, keys.admin]) {
      const res = await request(app).get('/attach').set('Authorization', `Bearer ${key}`);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({
        code: 'FORBIDDEN',
        message: expect.stringContaining('attach:sandbox'),
      });
    }
    const allowed = await request(app).get('/attach').set('Authorization', `Bearer ${keys.attach}`);
    expect(allowed.status).toBe(200);
  });

  it('answers another owner’s sandbox exactly like a missing one; an admin sees it', async () => {
    const { app } = server();
    const get = (id: string, key: string) =>
      request(app).get(`/sandboxes/${id}`).set('Authorization', `Bearer ${key}`);
    expect((await get('sbx_alice', keys.alice)).status).toBe(200);
    const others = await get('sbx_bob', keys.alice);
    const missing = await get('sbx_none', keys.alice);
    expect(others.status).toBe(404);
    expect(others.body.error).toMatchObject({
      code: 'SANDBOX_NOT_FOUND',
      message: 'sandbox sbx_bob does not exist',
    });
    expect(missing.body.error).toMatchObject({
      code: 'SANDBOX_NOT_FOUND',
      message: 'sandbox sbx_none does not exist',
    });
    const admin = await get('sbx_bob', keys.admin);
    expect(admin.status).toBe(200);
    expect(admin.body).toMatchObject({ ownerId: 'bob' });
  });

  it('answers 503 with Retry-After when the identity provider’s keys cannot be fetched', async () => {
    const { app } = server();
    issuer.failJwks(502);
    try {
      const res = await request(app).get('/whoami').set('Authorization', `Bearer ${issuer.sign()}`);
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.body.error).toMatchObject({ code: 'BACKEND_UNAVAILABLE', retryable: true });
    } finally {
      issuer.failJwks(undefined);
    }
  });

  it('logs who called and why a caller was refused, never a key or token', async () => {
    const { app, logs } = server();
    const token = issuer.sign({ sub: 'erin', jti: 'jti-erin' });
    const expired = issuer.sign({ sub: 'erin', exp: 1000 });
    const badKey = `${keys.alice.slice(0, -4)}AAAA`;
    await request(app).get('/whoami').set('Authorization', `Bearer ${keys.alice}`);
    await request(app).get('/whoami').set('Authorization', `Bearer ${token}`);
    await request(app).get('/whoami').set('Authorization', `Bearer ${badKey}`);
    await request(app).get('/whoami').set('Authorization', `Bearer ${expired}`);
    issuer.failJwks(500);
    const unknownKid = issuer.sign({}, { key: issuer.addKey('RS256') });
    await request(app).get('/whoami').set('Authorization', `Bearer ${unknownKid}`);
    issuer.failJwks(undefined);

    const text = logs.join('');
    expect(text).toContain('"jti":"jti-erin"');
    expect(logs.filter((line) => line.includes('caller authenticated'))).toHaveLength(2);
    expect(logs.filter((line) => line.includes('caller authentication refused'))).toHaveLength(2);
    expect(logs.filter((line) => line.includes('caller authentication failed'))).toHaveLength(1);
    for (const secret of [keys.alice, badKey, token, expired, unknownKid]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(secret.slice(-20));
    }
  });
});
