// A device login used by several `sbx` processes at once, and an issuer that is down for
// a while: the refresh token is spent once, a logout is not undone, polling backs off.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { CliStore, isDeviceLogin, type OidcTokens } from '../src/store.js';
import { deviceLoginAt, useOidcBroker, type OidcBroker } from './device-login-support.js';
import type { SbxRunner } from './support.js';

const SLOW = 120_000;
const fixture = useOidcBroker(SLOW);
let broker: OidcBroker;

beforeAll(() => {
  broker = fixture.broker();
});

afterEach(() => {
  broker.issuer.accessTokenTtl = 300;
  broker.issuer.refreshDelayMs = 0;
  broker.issuer.tokenOutage = [];
});

/** A CLI logged in with an access token already inside the refresh margin; refreshed tokens last 300 s. */
async function loggedInNearExpiry(sub: string): Promise<SbxRunner> {
  const cli = fixture.newCli();
  broker.issuer.accessTokenTtl = 30; // inside the CLI's 60 s margin: due at once
  const login = await deviceLoginAt(broker, cli.home, (code) => broker.issuer.approve(code, sub));
  if (login.code !== 0) throw new Error(`login failed: ${login.stderr}`);
  broker.issuer.accessTokenTtl = 300;
  return cli;
}

function storedTokens(cli: SbxRunner): OidcTokens | undefined {
  const config = new CliStore(cli.home).readConfig();
  return config !== undefined && isDeviceLogin(config) ? config.oidc : undefined;
}

const refreshGrants = () => broker.issuer.tokenRequests.filter((r) => r.grantType === 'refresh_token');

describe('a device login refreshed by several sbx processes', () => {
  it(
    'processes due at once all succeed, and the issuer sees one refresh',
    async () => {
      const cli = await loggedInNearExpiry('carol');
      const before = refreshGrants().length;

      const runs = await Promise.all(Array.from({ length: 6 }, () => cli.sbx(['whoami', '--json'])));
      expect(runs.map((run) => [run.code, run.stderr])).toEqual(Array.from({ length: 6 }, () => [0, '']));
      expect(refreshGrants().slice(before)).toEqual([expect.objectContaining({ status: 200 })]);
      expect(broker.issuer.isLiveRefreshToken(storedTokens(cli)?.refresh_token ?? '')).toBe(true);
      expect(existsSync(path.join(cli.home, 'config.lock'))).toBe(false);
    },
    SLOW,
  );

  it(
    'a logout while a refresh is on its way to the issuer stays logged out',
    async () => {
      const cli = await loggedInNearExpiry('dave');
      broker.issuer.refreshDelayMs = 3_000;
      const arrived = broker.issuer.refreshArrivals;
      const whoami = cli.sbx(['whoami']);
      const deadline = Date.now() + 60_000;
      while (broker.issuer.refreshArrivals === arrived && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }

      expect((await cli.sbx(['logout'])).code).toBe(0);
      expect((await whoami).code).toBe(0);
      expect(new CliStore(cli.home).readConfig()).toBeUndefined();
      expect((await cli.sbx(['whoami'])).code).toBe(3);
    },
    SLOW,
  );
});

describe('sbx login --device while the issuer is unavailable', () => {
  it(
    'backs off on 503 and 429 from the token endpoint and logs in once it answers',
    async () => {
      const cli = fixture.newCli();
      broker.issuer.tokenOutage = [503, 429];
      const polled = broker.issuer.tokenRequests.length;

      const login = await deviceLoginAt(broker, cli.home, (code) => broker.issuer.approve(code, 'erin'));
      expect(login.code).toBe(0);
      const polls = broker.issuer.tokenRequests.slice(polled);
      expect(polls.map((p) => p.status)).toEqual([503, 429, 200]);
      const [first = 0, second = 0, third = 0] = polls.map((p) => p.at);
      // The interval (1 s) doubled after each failure: about 2 s, then 4 s.
      expect(second - first).toBeGreaterThanOrEqual(2_000 - 50);
      expect(third - second).toBeGreaterThanOrEqual(4_000 - 50);
      expect(storedTokens(cli)?.access_token).toBeDefined();
    },
    SLOW,
  );
});
