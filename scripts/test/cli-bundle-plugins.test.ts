// The stand-ins of the `sbx` bundle (scripts/cli-bundle-plugins.mjs) that load a module on first
// use: bundled through the plugin, ws still opens a real socket and reads its constants, and the
// MCP SDK's server still validates with ajv when asked to. The real CLI's sockets are covered
// by packages/cli/test (exec, shell).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: a plain .mjs module of the build (no declarations)
import { ajvOnFirstUse, wsOnFirstUse } from '../cli-bundle-plugins.mjs';
// @ts-expect-error: a plain .mjs module of the build (no declarations)
import { ESM_REQUIRE_BANNER, loadEsbuild } from '../esbuild-kit.mjs';

const MCP_DIR = fileURLToPath(new URL('../../packages/mcp/', import.meta.url));

/** The root's ws (a dev dependency without type declarations here): the server side the test needs. */
interface WsServer {
  on(event: 'connection', listener: (socket: { send(data: string): void }) => void): void;
  once(event: 'listening', listener: () => void): void;
  address(): unknown;
  close(callback: () => void): void;
}
const { WebSocketServer } = createRequire(import.meta.url)('ws') as {
  WebSocketServer: new (options: { port: number; host: string }) => WsServer;
};
let work: string;

beforeAll(() => {
  work = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-bundle-plugins-')));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * Bundles `code` (an ES module in `work`, resolving packages from packages/mcp) and runs it; its
 * stdout. `standIn` must be in the bundle: the plugin did replace the module.
 */
async function bundleAndRun(
  name: string,
  code: string,
  plugins: unknown[],
  standIn: string,
): Promise<string> {
  const entry = path.join(work, `${name}.mjs`);
  writeFileSync(entry, code);
  const esbuild = loadEsbuild() as { build(options: Record<string, unknown>): Promise<unknown> };
  const outfile = path.join(work, `${name}.bundle.mjs`);
  await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    banner: { js: ESM_REQUIRE_BANNER },
    nodePaths: [path.join(MCP_DIR, 'node_modules'), path.join(MCP_DIR, '../client/node_modules')],
    external: ['bufferutil', 'utf-8-validate'],
    logLevel: 'silent',
    plugins,
  });
  expect(readFileSync(outfile, 'utf8')).toContain(standIn);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [outfile], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (status) =>
      status === 0 ? resolve(out) : reject(new Error(`exit ${String(status)}: ${out}`)),
    );
  });
}

describe('loaded on first use', () => {
  it('ws: a socket opens, messages flow, constants and instanceof work', async () => {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    server.on('connection', (socket) => socket.send('hello'));
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    const { port } = server.address() as { port: number };
    try {
      const code = [
        "import { WebSocket } from 'ws';",
        'const before = WebSocket.OPEN;',
        `const socket = new WebSocket('ws://127.0.0.1:${port}');`,
        "const message = await new Promise((resolve) => socket.on('message', (data) => resolve(String(data))));",
        'console.log(JSON.stringify({ before, message, open: socket.readyState === WebSocket.OPEN, isOne: socket instanceof WebSocket }));',
        'socket.close();',
      ].join('\n');
      const out = await bundleAndRun(
        'ws-user',
        code,
        [wsOnFirstUse(work)],
        'Reflect.construct(load().WebSocket',
      );
      expect(JSON.parse(out)).toEqual({ before: 1, message: 'hello', open: true, isOne: true });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 60_000);

  it("ajv: the MCP SDK server's default validator validates", async () => {
    const code = [
      "import { Server } from '@modelcontextprotocol/sdk/server/index.js';",
      "const server = new Server({ name: 't', version: '1' }, { capabilities: {} });",
      "const validate = server._jsonSchemaValidator.getValidator({ type: 'object', required: ['a'] });",
      'console.log(JSON.stringify([validate({ a: 1 }).valid, validate({}).valid]));',
    ].join('\n');
    expect(
      JSON.parse(await bundleAndRun('ajv-user', code, [ajvOnFirstUse()], 'this.#validator ??=')),
    ).toEqual([true, false]);
  }, 60_000);
});
