import { statSync } from 'node:fs';
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
  broker.issuer.interval = 1;
  broker.issuer.accessTokenTtl = 300;
  broker.issuer.slowDownFirstPoll = false;
});

const newCli = (): SbxRunner => fixture.newCli();

/** `sbx login --device`, with `act` playing the user once the CLI shows the user code. */
const deviceLogin = (cli: SbxRunner, act: (userCode: string) => void): ReturnType<typeof deviceLoginAt> =>
  deviceLoginAt(broker, cli.home, act);

function storedTokens(cli: SbxRunner): OidcTokens {
  const config = new CliStore(cli.home).readConfig();
  if (config === undefined || !isDeviceLogin(config)) throw new Error('no device login stored');
  return config.oidc;
}

const lastLine = (text: string): string => text.trimEnd().split('\n').at(-1) ?? '';
const deviceGrants = () =>
  broker.issuer.tokenRequests.filter((r) => r.grantType === 'urn:ietf:params:oauth:grant-type:device_code');

describe('sbx login --device (RFC 8628)', () => {
  it(
    'shows the code, logs in once the user approves, and the broker accepts the token',
    async () => {
      const cli = newCli();
      const login = await deviceLogin(cli, (code) => broker.issuer.approve(code, 'alice'));
      expect(login.code).toBe(0);
      expect(login.stderr).toContain(`open ${broker.issuer.oidc.issuer}/device and enter the code`);
      expect(login.stderr).toContain(`${broker.issuer.oidc.issuer}/device?user_code=${login.userCode}`);
      expect(login.stdout).toMatch(/^logged in to .* as alice with a device login at /);
      const tokens = storedTokens(cli);
      expect(tokens).toMatchObject({
        issuer: broker.issuer.oidc.issuer,
        token_endpoint: `${broker.issuer.oidc.issuer}/token`,
        client_id: 'sbx-cli',
      });
      expect(broker.issuer.isLiveRefreshToken(tokens.refresh_token ?? '')).toBe(true);
      expect(Date.parse(tokens.expires_at ?? '') - Date.now()).toBeGreaterThan(200_000);
      expect(statSync(new CliStore(cli.home).configPath).mode & 0o777).toBe(0o600);

      const whoami = await cli.sbx(['whoami', '--json']);
      expect(whoami.code).toBe(0);
      expect(whoami.stdout).not.toContain(tokens.access_token);
      expect(JSON.parse(whoami.stdout)).toMatchObject({
        actor_id: 'alice',
        authenticated: true,
        device_login: { issuer: broker.issuer.oidc.issuer, client_id: 'sbx-cli', refreshable: true },
      });
      expect((await cli.sbx(['whoami'])).stdout).toMatch(/device login at .*access token expires /);

      const ensured = await cli.sbx(['ensure', 'thr_device', '--json']);
      expect(ensured.code).toBe(0);
      expect((JSON.parse(ensured.stdout) as { sandbox_id: string }).sandbox_id).toMatch(/^sb_/);
      expect((await cli.sbx(['release', 'thr_device'])).code).toBe(0);

      expect((await cli.sbx(['logout'])).code).toBe(0);
      expect(new CliStore(cli.home).readConfig()).toBeUndefined();
      expect((await cli.sbx(['whoami'])).code).toBe(3);
    },
    SLOW,
  );

  it(
    'waits 5 s longer between polls after slow_down',
    async () => {
      broker.issuer.slowDownFirstPoll = true;
      const login = await deviceLogin(newCli(), (code) => broker.issuer.approve(code, 'alice'));
      expect(login.code).toBe(0);
      const polls = broker.issuer.code(login.userCode).polls;
      // The first poll was told slow_down (interval 1 s → 6 s); the next one came after 6 s and got the tokens.
      expect(polls).toHaveLength(2);
      const [first = 0, second = 0] = polls;
      expect(second - first).toBeGreaterThanOrEqual((1 + 5) * 1000 - 50);
    },
    SLOW,
  );

  it(
    'stops at access_denied with exit 3 and saves nothing',
    async () => {
      const cli = newCli();
      const login = await deviceLogin(cli, (code) => broker.issuer.deny(code));
      expect(login.code).toBe(3);
      expect(lastLine(login.stderr)).toMatch(
        /^sbx: device login: access denied at the issuer; nothing was saved/,
      );
      expect(new CliStore(cli.home).readConfig()).toBeUndefined();
    },
    SLOW,
  );

  it(
    'stops at expired_token with exit 3 and saves nothing',
    async () => {
      const cli = newCli();
      const login = await deviceLogin(cli, (code) => broker.issuer.expire(code));
      expect(login.code).toBe(3);
      expect(lastLine(login.stderr)).toMatch(/^sbx: device login: the code expired/);
      expect(deviceGrants().at(-1)?.error).toBe('expired_token');
      expect(new CliStore(cli.home).readConfig()).toBeUndefined();
    },
    SLOW,
  );
});

describe('sbx login --device arguments', () => {
  it('refuses an issuer on plain http that is not this machine, before any request (exit 2)', async () => {
    const cli = newCli();
    const args = ['login', '--broker', broker.url, '--device', '--issuer', 'http://auth.example.com'];
    const result = await cli.sbx(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--issuer http:\/\/auth\.example\.com must use https/);
    expect((await cli.sbx(['login', '--broker', broker.url, '--device'])).stderr).toMatch(/needs --issuer/);
  });
});

describe('a device login over time', () => {
  it(
    'refreshes an access token near expiry before the command, storing the rotated tokens; a refused refresh is exit 3',
    async () => {
      const cli = newCli();
      broker.issuer.accessTokenTtl = 30; // inside the CLI's 60 s margin: due at once
      expect((await deviceLogin(cli, (code) => broker.issuer.approve(code, 'bob'))).code).toBe(0);
      const before = storedTokens(cli);
      const refreshesBefore = broker.issuer.tokenRequests.filter(
        (r) => r.grantType === 'refresh_token',
      ).length;

      const whoami = await cli.sbx(['whoami', '--json']);
      expect(whoami.code).toBe(0);
      const refreshes = broker.issuer.tokenRequests.filter((r) => r.grantType === 'refresh_token');
      expect(refreshes.slice(refreshesBefore).map((r) => r.error)).toEqual([undefined]);
      const after = storedTokens(cli);
      expect(after.access_token).not.toBe(before.access_token);
      expect(after.refresh_token).not.toBe(before.refresh_token);
      expect(broker.issuer.isLiveRefreshToken(after.refresh_token ?? '')).toBe(true);
      expect(broker.issuer.isLiveRefreshToken(before.refresh_token ?? '')).toBe(false);
      expect(JSON.parse(whoami.stdout)).toMatchObject({
        device_login: { access_token_expires_at: after.expires_at },
      });

      // The new token is due again (30 s); the issuer now refuses every refresh token.
      broker.issuer.revokeRefreshTokens();
      const refused = await cli.sbx(['ensure', 'thr_device_refresh']);
      expect(refused.code).toBe(3);
      expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(refused.stderr).toMatch(/^sbx: login expired: run sbx login/);
    },
    SLOW,
  );
});
