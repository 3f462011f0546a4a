// The four doors into a local sandbox that run a program: POST /v1/exec, POST /v1/processes,
// the exec WebSocket and the shell WebSocket, driven as a client would (token in the header or
// the first frame), for tests that attack a sandbox from inside.
import { WebSocket } from 'ws';
import type { Dataplane, SandboxSpec } from '../../src/providers/provider.js';
import { tokenFor } from './local-provider-kit.js';

export interface ExecResult {
  readonly exit_code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Door {
  readonly dataplane: Dataplane;
  readonly spec: SandboxSpec;
}

async function post(door: Door, route: string, body: unknown, scopes: string[]): Promise<Response> {
  return fetch(`${door.dataplane.httpBaseUrl}${route}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${tokenFor(door.spec, scopes)}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
}

/** POST /v1/exec; `cmd` runs under `sh -c`. */
export async function exec(
  door: Door,
  cmd: string,
  extra: Record<string, unknown> = {},
): Promise<ExecResult> {
  const response = await post(door, '/v1/exec', { cmd, ...extra }, ['process']);
  if (response.status !== 200) throw new Error(`exec answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as ExecResult;
}

/** POST /v1/processes, then waits for the background process to end. */
export async function background(door: Door, cmd: string, env: Record<string, string>): Promise<void> {
  const started = await post(door, '/v1/processes', { cmd, env }, ['process']);
  if (started.status !== 201)
    throw new Error(`processes answered ${started.status}: ${await started.text()}`);
  const { process_id: id } = (await started.json()) as { process_id: string };
  for (let polls = 0; polls < 500; polls++) {
    const info = await fetch(`${door.dataplane.httpBaseUrl}/v1/processes/${id}`, {
      headers: { authorization: `Bearer ${tokenFor(door.spec, ['process'])}` },
    });
    const body = (await info.json()) as { status?: string };
    if (body.status !== 'running') return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the background process did not end');
}

/**
 * A WebSocket door: authenticates with the first frame, sends `start` (and `typed` once
 * the shell is ready), resolves with the output at the exit frame.
 */
export function overSocket(
  door: Door,
  route: '/v1/exec/ws' | '/v1/shell/ws',
  start: object,
  typed?: string,
): Promise<string> {
  const scopes = route === '/v1/exec/ws' ? ['process'] : ['shell'];
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${door.dataplane.wsBaseUrl}${route}`);
    let output = '';
    const timer = setTimeout(() => {
      socket.terminate();
      reject(new Error(`no exit frame from ${route}; output so far: ${output}`));
    }, 60_000);
    socket.on('error', reject);
    socket.on('open', () => {
      socket.send(JSON.stringify({ type: 'auth', token: tokenFor(door.spec, scopes) }));
      socket.send(JSON.stringify(start));
    });
    socket.on('message', (data: Buffer, binary: boolean) => {
      if (binary) return;
      const frame = JSON.parse(data.toString('utf8')) as { type: string; data?: string };
      if (frame.type === 'ready' && typed !== undefined)
        socket.send(JSON.stringify({ type: 'stdin', data: typed }));
      if (frame.type === 'stdout' || frame.type === 'stderr') output += frame.data ?? '';
      if (frame.type === 'exit' || frame.type === 'error') {
        clearTimeout(timer);
        socket.close();
        resolve(output);
      }
    });
  });
}

/** A shell that runs `line`, then exits: resolves with what the terminal showed. */
export function shellRunning(door: Door, line: string, env: Record<string, string> = {}): Promise<string> {
  return overSocket(door, '/v1/shell/ws', { type: 'start', cols: 80, rows: 24, env }, `${line}\nexit\n`);
}

/** POST /v1/files/upload: the file API's write of a sandbox path. */
export async function writeFile(door: Door, file: string, content: string): Promise<void> {
  const url = `${door.dataplane.httpBaseUrl}/v1/files/upload?path=${encodeURIComponent(file)}`;
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${tokenFor(door.spec, ['fs:rw'])}` },
    body: content,
  });
  if (response.status !== 200 && response.status !== 201)
    throw new Error(`upload answered ${response.status}: ${await response.text()}`);
}

/** GET /v1/files/download: the content, or `HTTP <status>` when refused. */
export async function readFile(door: Door, file: string): Promise<string> {
  const url = `${door.dataplane.httpBaseUrl}/v1/files/download?path=${encodeURIComponent(file)}`;
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${tokenFor(door.spec, ['fs:ro'])}` },
  });
  return response.status === 200 ? response.text() : `HTTP ${response.status}`;
}

type Writer = (door: Door, file: string, content: string) => Promise<void>;
type Reader = (door: Door, file: string) => Promise<string>;

/** Every door that writes a file: the file API, exec, a background process, a shell. */
export const WRITERS: ReadonlyArray<readonly [string, Writer]> = [
  ['file API', writeFile],
  ['exec', async (door, file, content) => void (await exec(door, `printf %s '${content}' > "${file}"`))],
  ['background', (door, file, content) => background(door, `printf %s '${content}' > "${file}"`, {})],
  [
    'shell',
    async (door, file, content) => void (await shellRunning(door, `printf %s '${content}' > "${file}"`)),
  ],
];

/** Every door that reads one back. */
export const READERS: ReadonlyArray<readonly [string, Reader]> = [
  ['file API', readFile],
  ['exec', async (door, file) => (await exec(door, `cat "${file}"`)).stdout],
  ['shell', (door, file) => shellRunning(door, `cat "${file}"`)],
];
