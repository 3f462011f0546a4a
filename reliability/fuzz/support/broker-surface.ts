// The broker's HTTP surface for the generator: its route table (ROUTES, packages/protocol)
// with each route's schemas as arbitraries, and the credentials the target made.
import * as fc from 'fast-check';
import { ROUTES, ShellClientFrame, type RouteSpec } from '../../../packages/protocol/src/index.js';
import { badCredentials } from './http-abuse.js';
import type { HttpSurface, RouteModel } from './http-cases.js';
import { propertyArbitraries, validInput } from './schema-arbitrary.js';
import { hostileString, weirdValue } from './weird-values.js';
import type { WsSurface } from './ws-cases.js';

export interface BrokerReady {
  readonly url: string;
  readonly keys: { readonly admin: string; readonly user: string; readonly reader: string };
  readonly ids: readonly string[];
}

function successOf(route: RouteSpec): number[] {
  if (route.produces !== undefined) return [200];
  return route.response === undefined ? [204] : [route.status ?? 200];
}

export function brokerRoutes(): RouteModel[] {
  return Object.entries(ROUTES as Record<string, RouteSpec>).map(([name, route]) => ({
    name,
    method: route.method,
    path: route.path,
    params: propertyArbitraries(route.params),
    query: route.query === undefined ? undefined : propertyArbitraries(route.query),
    body: route.body === undefined ? undefined : validInput(route.body),
    form: route.consumes === 'application/x-www-form-urlencoded',
    success: successOf(route),
  }));
}

/** The unauthenticated routes the broker serves besides ROUTES (documented in docs/openapi.json). */
const SERVICE_ROUTES: RouteModel[] = [
  { name: 'healthz', method: 'GET', path: '/healthz', params: {}, success: [200] },
  { name: 'readyz', method: 'GET', path: '/readyz', params: {}, success: [200] },
  { name: 'openapi', method: 'GET', path: '/v1/openapi.json', params: {}, success: [200] },
];

export function brokerSurface(ready: BrokerReady): HttpSurface {
  const { admin, user, reader } = ready.keys;
  return {
    routes: [...brokerRoutes(), ...SERVICE_ROUTES],
    ids: ready.ids,
    authorization: fc.oneof(
      { arbitrary: fc.constant({ header: `Bearer ${admin}`, label: 'admin key' }), weight: 4 },
      { arbitrary: fc.constant({ header: `Bearer ${user}`, label: 'user key' }), weight: 4 },
      { arbitrary: fc.constant({ header: `Bearer ${reader}`, label: 'read-only key' }), weight: 1 },
      { arbitrary: fc.constant({ label: 'no credential' }), weight: 2 },
      { arbitrary: badCredentials(admin), weight: 3 },
    ),
  };
}

/**
 * The broker's socket `WS /v1/sandboxes/{id}/sessions/{sid}` (docs/sandboxes.md, "Sessions"):
 * ids that name no sandbox of the caller (the FakeProvider's agents resolve nowhere, so a real
 * one would test the fake), and paths next to it. Every session ends refused.
 */
export function brokerWsSurface(ready: BrokerReady): WsSurface {
  const { admin, user } = ready.keys;
  const id = fc.oneof(
    hostileString.filter((text) => !/[\uD800-\uDFFF]/.test(text)).map(encodeURIComponent),
    fc.constantFrom('sb_missing', ...ready.ids.filter((known) => !known.startsWith('sb_'))),
    fc.constant('%ff%fe'),
  );
  return {
    endpoints: [
      {
        endpoint: 'shell',
        paths: ['/v1/sandboxes/{id}/sessions/{sid}'],
        frames: validInput(ShellClientFrame),
      },
    ],
    pathFor: () =>
      fc.oneof(
        {
          arbitrary: fc
            .tuple(id, id)
            .map(([sandbox, session]) => `/v1/sandboxes/${sandbox}/sessions/${session}`),
          weight: 12,
        },
        {
          arbitrary: fc.constantFrom(
            '/v1/sandboxes/sb_x/sessions',
            '/v1/sandboxes//sessions/',
            '/v1/whoami',
            '/nope',
          ),
          weight: 1,
        },
      ),
    goodToken: () =>
      fc.constantFrom(
        { token: admin, label: 'admin key' },
        { token: user, label: 'user key (no attach:sandbox)' },
      ),
    badToken: fc.oneof(hostileString, weirdValue, fc.constantFrom(`${admin}x`, '', 'sbk_x_y')),
    refusesAll: true,
  };
}
