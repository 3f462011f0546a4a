// 500 MiB uploaded through the relay to a real agent with the relay's memory bounded. The
// relay runs in a child process of its own (relay-host.ts): in jest's process the test's
// client, the harness and the agent's provider would all move the RSS, and the number
// would say nothing about the relay. The body is generated as it is sent, never held.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createRequire } from 'node:module';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startLocalKit, tokenFor, type LocalKit } from '../providers/local-provider-kit.js';
import { startSandbox, type Sandbox } from './relay-harness.js';
import { uploadZeros } from './zero-upload.js';

const MiB = 1024 * 1024;
const UPLOAD_BYTES = 500 * MiB;
const MAX_GROWTH_BYTES = 150 * MiB;
const root = fileURLToPath(new URL('../../../../', import.meta.url));
const tsxLoader = pathToFileURL(createRequire(`${root}package.json`).resolve('tsx')).href;
const HOST = fileURLToPath(new URL('./relay-host.ts', import.meta.url));

interface Memory {
  readonly baseline: number;
  readonly peak: number;
}

/** The relay's host process and its answers, one JSON line per question. */
class RelayHost {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #lines: Interface;

  constructor(env: Record<string, string>) {
    this.#child = spawn(process.execPath, ['--expose-gc', '--import', tsxLoader, HOST], {
      cwd: root,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
    });
    this.#child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    this.#lines = createInterface({ input: this.#child.stdout });
  }

  async next<T>(question?: string): Promise<T> {
    const line = new Promise<string>((resolve, reject) => {
      this.#lines.once('line', resolve);
      this.#child.once('exit', (code) => reject(new Error(`relay host exited (${code})`)));
    });
    if (question !== undefined) this.#child.stdin.write(`${question}\n`);
    return JSON.parse(await line) as T;
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.#child.stdin.end();
    await exited;
  }
}

const upload = (url: string, bytes: number) => uploadZeros(url, bytes, { method: 'PUT' });

describe('relayHttp: a 500 MiB upload with bounded memory', () => {
  let kit: LocalKit;
  let sandbox: Sandbox;
  let host: RelayHost;
  let port: number;

  beforeAll(async () => {
    kit = await startLocalKit({ isolation: 'none' });
    sandbox = await startSandbox(kit);
    host = new RelayHost({ RELAY_TARGET: JSON.stringify(sandbox.target(['fs:rw'])) });
    ({ port } = await host.next<{ port: number }>());
  }, 120_000);

  afterAll(async () => {
    await host.stop();
    await kit.dispose();
  });

  it('streams it to the agent, which receives exactly 500 MiB, while the RSS grows < 150 MiB', async () => {
    const url = `http://127.0.0.1:${port}/dp/files/big.bin`;
    // Warm up first: sockets, parsers and JIT belong to the baseline, not to the upload.
    expect((await upload(url, 4 * MiB)).status).toBe(201);
    await host.next<Memory>('mark');

    const answer = await upload(url, UPLOAD_BYTES);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ size: UPLOAD_BYTES });
    const memory = await host.next<Memory>('report');
    process.stdout.write(
      `relay RSS growth over 500 MiB: ${((memory.peak - memory.baseline) / MiB).toFixed(1)} MiB\n`,
    );
    expect(memory.peak - memory.baseline).toBeLessThan(MAX_GROWTH_BYTES);

    // Asked of the agent itself, not through the relay.
    const stat = await fetch(`${sandbox.dataplane.httpBaseUrl}/v1/files/stat?path=big.bin`, {
      headers: { authorization: `Bearer ${tokenFor(sandbox.spec, ['fs:ro'])}` },
    });
    expect(await stat.json()).toMatchObject({ type: 'file', size: UPLOAD_BYTES });
  }, 300_000);
});
