// The agent's surface for the generator: its route table (AGENT_ROUTES) and WebSocket
// endpoints (AGENT_WS_ROUTES) with their schemas as arbitraries, capability tokens of
// several strengths minted with the target's key, and `defuse`: the programs a generated
// request may start are made harmless (echo, true, an empty snippet) whatever else it says,
// since the fuzz runs real processes.
import * as fc from 'fast-check';
import {
  AGENT_ROUTES,
  AGENT_WS_ROUTES,
  type AgentRouteSpec,
  type AgentWsRouteSpec,
} from '../../../packages/protocol/src/index.js';
import { mintCapabilityToken, SigningKey } from '../../../packages/tokens/src/index.js';
import { badCredentials, type Credential } from './http-abuse.js';
import type { HttpSurface, RouteModel } from './http-cases.js';
import { propertyArbitraries, validInput } from './schema-arbitrary.js';
import { edgeNumber, hostileString, weirdValue } from './weird-values.js';
import type { WsSurface } from './ws-cases.js';

export const AGENT_SANDBOX_ID = 'sb_fuzz';
export const AGENT_ISSUER = 'sbx-broker';
export const METRICS_TOKEN = 'fuzz-metrics-token-0123456789abcdef';

export interface AgentKeys {
  readonly key: SigningKey;
  readonly tokens: Readonly<Record<'all' | 'readOnly' | 'expired' | 'otherSandbox' | 'otherKey', string>>;
}

export function agentKeys(): AgentKeys {
  const key = SigningKey.generate();
  const mint = (scopes: string[], options: { sandboxId?: string; signer?: SigningKey; ago?: number } = {}) =>
    mintCapabilityToken({
      key: options.signer ?? key,
      issuer: AGENT_ISSUER,
      subject: 'usr_fuzz',
      sandboxId: options.sandboxId ?? AGENT_SANDBOX_ID,
      scopes,
      ttlSeconds: 3600,
      now: () => Date.now() - (options.ago ?? 0) * 1000,
    }).token;
  const all = ['fs:rw', 'process', 'shell'];
  return {
    key,
    tokens: {
      all: mint(all),
      readOnly: mint(['fs:ro', 'shell:ro']),
      expired: mint(all, { ago: 7200 }),
      otherSandbox: mint(all, { sandboxId: 'sb_other' }),
      otherKey: mint(all, { signer: SigningKey.generate() }),
    },
  };
}

/** Programs: argv runs /bin/echo, cmd `true`, code nothing; NUL bytes stay (no program starts with one). */
export function defuse(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const body = value as Record<string, unknown>;
  const argv = body['argv'];
  const hasNul = JSON.stringify(body).includes('\\u0000');
  if (!hasNul && Array.isArray(argv) && typeof argv[0] === 'string' && argv[0] !== '') argv[0] = '/bin/echo';
  if (!hasNul && typeof body['cmd'] === 'string' && body['cmd'] !== '') body['cmd'] = 'true';
  if (typeof body['code'] === 'string') body['code'] = '';
  return body;
}

function successOf(route: AgentRouteSpec): number[] {
  if (route.statuses !== undefined) return [...route.statuses];
  return route.response === undefined && route.produces === undefined ? [204] : [200];
}

function agentRoutes(): RouteModel[] {
  return Object.entries(AGENT_ROUTES as Record<string, AgentRouteSpec>).map(([name, route]) => {
    const query = route.query === undefined ? {} : propertyArbitraries(route.query);
    // Signed file URLs (docs/protocol.md#signed-file-urls): `?sig=&exp=` instead of a token.
    const signed: Record<string, fc.Arbitrary<unknown>> = route.alsoAuth?.includes('signed-url') === true
      ? { sig: hostileString, exp: edgeNumber }
      : {};
    return {
      name,
      method: route.method,
      path: route.path,
      params: propertyArbitraries(route.params),
      query: { ...query, ...signed },
      body: route.body === 'bytes' ? 'bytes' : route.body === undefined ? undefined : validInput(route.body),
      success: successOf(route),
    };
  });
}

function credentials(keys: AgentKeys): fc.Arbitrary<Credential> {
  const { all, readOnly, expired, otherSandbox, otherKey } = keys.tokens;
  const labelled = (header: string, label: string): Credential => ({ header, label });
  return fc.oneof(
    { arbitrary: fc.constant(labelled(`Bearer ${all}`, 'token: fs:rw process shell')), weight: 10 },
    { arbitrary: fc.constant(labelled(`Bearer ${readOnly}`, 'token: fs:ro shell:ro')), weight: 2 },
    {
      arbitrary: fc.constantFrom(
        labelled(`Bearer ${expired}`, 'expired token'),
        labelled(`Bearer ${otherSandbox}`, "another sandbox's token"),
        labelled(`Bearer ${otherKey}`, 'token signed with another key'),
        labelled(`Bearer ${METRICS_TOKEN}`, 'metrics token'),
      ),
      weight: 2,
    },
    { arbitrary: fc.constant({ label: 'no credential' }), weight: 1 },
    { arbitrary: badCredentials(all), weight: 2 },
  );
}

export function agentSurface(keys: AgentKeys): HttpSurface {
  return {
    routes: agentRoutes(),
    authorization: credentials(keys),
    ids: ['proc_missing', '.', '..', 'a/b', 'fuzz.txt'],
    defuse: (_route, body) => defuse(body),
  };
}

export function agentWsSurface(keys: AgentKeys): WsSurface {
  const { all, readOnly, expired, otherSandbox, otherKey } = keys.tokens;
  return {
    endpoints: Object.values(AGENT_WS_ROUTES as Record<string, AgentWsRouteSpec>).map((route) => ({
      endpoint: route.endpoint,
      paths: [route.path, ...(route.aliases ?? [])],
      frames: validInput(route.clientFrames),
    })),
    goodToken: () =>
      fc.oneof(
        { arbitrary: fc.constant({ token: all, label: 'all scopes' }), weight: 6 },
        { arbitrary: fc.constant({ token: readOnly, label: 'read-only scopes' }), weight: 1 },
      ),
    badToken: fc.oneof(
      hostileString,
      weirdValue,
      fc.constantFrom(expired, otherSandbox, otherKey, `${all}x`, ''),
    ),
    defuse,
  };
}
