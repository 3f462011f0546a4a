// Helpers of the admin API tests: keys of each kind and a sandbox made the way a client makes one.
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { CALLER_SCOPES, SessionResponse } from '@sbx/protocol';
import type { FakeProvider } from '../../src/providers/fake-provider.js';
import { bearer } from '../support/broker-harness.js';
import type { BrokerFixture } from '../support/use-broker.js';

export type Broker = BrokerFixture<FakeProvider>;

export interface AdminKeys {
  /** admin:sandbox and nothing else, in the fixture's tenant. */
  readonly admin: string;
  /** Every scope but admin:sandbox and admin:keys, same tenant. */
  readonly user: string;
  /** Every scope but admin:sandbox and admin:keys, another tenant. */
  readonly otherTenant: string;
  /** admin:sandbox of another tenant: admin is cross-tenant (principal.ts). */
  readonly otherAdmin: string;
  /** Every caller scope, admin:keys included: issues keys for any tenant and principal. */
  readonly operator: string;
}

export async function adminKeys(broker: Broker): Promise<AdminKeys> {
  const nonAdmin = CALLER_SCOPES.filter((scope) => scope !== 'admin:sandbox' && scope !== 'admin:keys');
  return {
    admin: await broker.apiKey({ scopes: ['admin:sandbox'], principalId: 'ops_admin' }),
    operator: await broker.apiKey({ scopes: CALLER_SCOPES, principalId: 'ops_operator' }),
    user: await broker.apiKey({
      scopes: nonAdmin,
      principalType: 'user',
      principalId: `usr_${randomUUID()}`,
    }),
    otherTenant: await broker.apiKey({ scopes: nonAdmin, tenantId: `tenant_${randomUUID()}` }),
    otherAdmin: await broker.apiKey({ scopes: ['admin:sandbox'], tenantId: `tenant_${randomUUID()}` }),
  };
}

export interface MadeSandbox {
  readonly sandboxId: string;
  readonly sessionId: string;
  readonly threadId: string;
}

export async function makeSandbox(
  broker: Broker,
  key: string,
  threadId = `thr_${randomUUID()}`,
): Promise<MadeSandbox> {
  const res = await request(broker.url)
    .post('/v1/sandbox/sessions')
    .set(bearer(key))
    .send({ thread_id: threadId, mode: 'ensure' });
  if (res.status !== 200) throw new Error(`ensure answered ${res.status}: ${JSON.stringify(res.body)}`);
  const session = SessionResponse.parse(res.body);
  return { sandboxId: session.sandbox.id, sessionId: session.session_id, threadId };
}

/** The error envelope's code, asserting the body is one. */
export function errorCode(body: unknown): string | undefined {
  const error = (body as { error?: { code?: unknown; request_id?: unknown } }).error;
  return typeof error?.code === 'string' && typeof error.request_id === 'string' ? error.code : undefined;
}
