// What the token exchange tests share: a session negotiated on the real broker,
// the form request to /oauth/token, and the agent's view of a token (verified
// with the sandbox's own key, as the agent does).
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import {
  CAPABILITY_TOKEN_TYPE,
  SessionResponse,
  TOKEN_EXCHANGE_GRANT_TYPE,
  type CallerScope,
} from '@sbx/protocol';
import { createVerifier, type SigningKey, type VerifiedCapability } from '@sbx/tokens';
import type { FakeProvider } from '../../src/providers/fake-provider.js';
import { bearer } from '../support/broker-harness.js';
import type { BrokerFixture } from '../support/use-broker.js';

export type Broker = BrokerFixture<FakeProvider>;

/** A human's caller scopes: fs:rw and shell by default. */
export const HUMAN_SCOPES: readonly CallerScope[] = ['read:sandbox', 'write:sandbox', 'attach:sandbox'];

export async function negotiate(
  broker: Broker,
  scopes: readonly CallerScope[] = HUMAN_SCOPES,
): Promise<SessionResponse> {
  return negotiateAs(broker, await broker.apiKey({ scopes, principalType: 'user' }));
}

/** A thread session for the caller of `key`. */
export async function negotiateAs(broker: Broker, key: string): Promise<SessionResponse> {
  const res = await request(broker.url)
    .post('/v1/sandbox/sessions')
    .set(bearer(key))
    .send({ thread_id: `thr_${randomUUID()}`, mode: 'ensure' });
  return SessionResponse.parse(res.body);
}

/** The form fields of a plain exchange of `token`, overridden (undefined: left out) by `fields`. */
export function exchangeForm(
  token: string,
  fields: Record<string, string | undefined> = {},
): Record<string, string> {
  const form: Record<string, string | undefined> = {
    grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
    subject_token: token,
    subject_token_type: CAPABILITY_TOKEN_TYPE,
    ...fields,
  };
  return Object.fromEntries(
    Object.entries(form).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

export function postForm(broker: Pick<Broker, 'url'>, form: Record<string, string> | string) {
  return request(broker.url).post('/oauth/token').type('form').send(form);
}

export function sandboxKey(broker: Broker, sandboxId: string): SigningKey {
  const spec = broker.provider.specOf(sandboxId);
  if (spec === undefined) throw new Error(`no sandbox ${sandboxId}`);
  return spec.signingKey;
}

/** The agent's check of a token: the sandbox's key, the broker's issuer, the agent's 3600 s cap. */
export function verifyAsAgent(broker: Broker, sandboxId: string, token: string): VerifiedCapability {
  return createVerifier({
    keys: sandboxKey(broker, sandboxId),
    issuer: 'sbx-broker',
    audience: sandboxId,
    maxTtlSeconds: 3600,
  }).verify(token);
}
