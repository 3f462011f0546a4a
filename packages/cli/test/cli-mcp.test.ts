// `sbx mcp`: the MCP server over stdio, spawned as an MCP host would (`sbx mcp`), acting
// with the CLI's stored login: an API key, or a device login's OIDC token, refreshed.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startMcpHttpServer } from '@sbx/mcp';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import {
  callTool,
  closeClients,
  connectHttp,
  connectStdio,
  errorCode,
  exerciseAllTools,
  TOOL_COUNT,
  firstMatch,
} from '../../mcp/test/mcp-support.js';
import { CliStore, isDeviceLogin } from '../src/store.js';
import { deviceLoginAt, useOidcBroker } from './device-login-support.js';
import { SBX_BIN, sbxEnv, sbxRunner, type SbxRunner } from './support.js';

const SLOW = 120_000;
/** `sbx mcp` with this CLI home, connected to the SDK's client over stdio. */
const sbxMcp = (home: string) => connectStdio(process.execPath, [SBX_BIN, 'mcp'], sbxEnv(home));

afterAll(closeClients, SLOW);

describe('sbx mcp with an API key login', () => {
  let real: RealBroker;
  let cli: SbxRunner;
  beforeAll(async () => {
    real = await startRealBroker();
    cli = sbxRunner();
    const login = await cli.sbx(['login', '--broker', real.harness.url, '--actor', 'usr_mcp'], {
      input: real.apiKey,
    });
    if (login.code !== 0) throw new Error(`login failed: ${login.stderr}`);
  }, SLOW);
  afterAll(async () => {
    cli?.close();
    await real?.close();
  }, SLOW);

  it('is listed in sbx help', async () => {
    expect((await cli.sbx(['help'])).stdout).toMatch(/sbx mcp \[--http <port>/);
  });

  it(
    'lists the tools and calls each with the stored key',
    async () => {
      expect(await exerciseAllTools(await sbxMcp(cli.home), 'thr_cli_mcp')).toHaveLength(TOOL_COUNT);
    },
    SLOW,
  );

  it(
    'a stored key the broker refuses is an MCP tool error, not a crash',
    async () => {
      const bad = sbxRunner();
      try {
        const config = { broker_url: real.harness.url, api_key: 'sbk_revoked', actor_id: 'x' };
        new CliStore(bad.home).writeConfig(config);
        const client = await sbxMcp(bad.home);
        const refused = await callTool(client, 'environment_acquire', { thread_id: 'thr_x' });
        expect(errorCode(refused)).toBe('UNAUTHENTICATED');
        expect((await client.listTools()).tools).toHaveLength(TOOL_COUNT);
      } finally {
        bad.close();
      }
    },
    SLOW,
  );

  it(
    '--http serves Streamable HTTP where each request brings its own bearer',
    async () => {
      const args = [SBX_BIN, 'mcp', '--http', '0'];
      const child = spawn(process.execPath, args, { env: sbxEnv(cli.home), stdio: 'pipe' });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      try {
        const [, url = ''] = await firstMatch(child.stderr, /Streamable HTTP at (http:\/\/\S+) /);
        const client = await connectHttp(url, real.apiKey);
        const listed = await callTool(client, 'list_files', { thread_id: 'thr_cli_mcp_http' });
        expect(errorCode(listed)).toBe('BINDING_NOT_FOUND'); // attaching never creates
        const acquired = await callTool(client, 'environment_acquire', { thread_id: 'thr_cli_mcp_http' });
        expect(acquired.isError).toBe(false);
        expect((await callTool(client, 'environment_release', {})).isError).toBe(false);
        await expect(connectHttp(url)).rejects.toThrow(/401|UNAUTHENTICATED|Unauthorized/i);
      } finally {
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
      }
    },
    SLOW,
  );

  it(
    'refuses to start before login, with exit 3 and one line',
    async () => {
      const fresh = sbxRunner();
      try {
        const result = await fresh.sbx(['mcp']);
        expect(result).toMatchObject({ code: 3, stdout: '' });
        expect(result.stderr).toMatch(/^sbx: not logged in: run sbx login[^\n]*\n$/);
      } finally {
        fresh.close();
      }
    },
    SLOW,
  );
});

describe('sbx mcp with a device (OIDC) login', () => {
  const fixture = useOidcBroker(SLOW);

  it(
    'acts with the OIDC access token, refreshed when due; HTTP takes the token as bearer',
    async () => {
      const broker = fixture.broker();
      const cli = fixture.newCli();
      broker.issuer.accessTokenTtl = 30; // inside the CLI's 60 s margin: due at the first call
      const login = await deviceLoginAt(broker, cli.home, (code) => broker.issuer.approve(code, 'erin'));
      broker.issuer.accessTokenTtl = 300;
      expect(login.code).toBe(0);
      const tokenOf = (): string => {
        const config = new CliStore(cli.home).readConfig();
        return config !== undefined && isDeviceLogin(config) ? config.oidc.access_token : '';
      };
      const before = tokenOf();

      const client = await sbxMcp(cli.home);
      const acquired = await callTool(client, 'environment_acquire', { thread_id: 'thr_cli_mcp_oidc' });
      expect(acquired).toMatchObject({ isError: false, data: { thread_id: 'thr_cli_mcp_oidc' } });
      expect(tokenOf()).not.toBe(before); // refreshed and stored, as every sbx command does
      const ran = await callTool(client, 'run_command', { command: 'echo oidc' });
      expect(ran.data).toMatchObject({ exit_code: 0, stdout: 'oidc\n' });
      expect((await callTool(client, 'environment_release', {})).isError).toBe(false);

      // The same user over Streamable HTTP: the OIDC access token is the request's bearer.
      const http = await startMcpHttpServer({ brokerUrl: broker.url });
      try {
        const viaHttp = await connectHttp(http.url, tokenOf());
        const again = await callTool(viaHttp, 'environment_acquire', { thread_id: 'thr_cli_mcp_oidc' });
        expect(again.isError).toBe(false);
        expect((await callTool(viaHttp, 'run_command', { argv: ['echo', 'http'] })).data).toMatchObject({
          stdout: 'http\n',
        });
        expect((await callTool(viaHttp, 'environment_release', {})).isError).toBe(false);
      } finally {
        await closeClients();
        await http.close();
      }
    },
    SLOW,
  );
});
