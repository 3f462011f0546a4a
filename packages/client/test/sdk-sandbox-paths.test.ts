// Sandbox paths through the SDK against a real broker and a real sandbox: the same path is the
// same file to the files API and exec, in the workspace (relative or absolute) and anywhere
// else in the sandbox (`/tmp`), with the sandbox user's permissions deciding.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BrokerClient, BrokerSession, ForbiddenError, type SandboxClient } from '../src/index.js';
import { startRealBroker, type RealBroker } from './support.js';

let real: RealBroker;
let agentSession: BrokerSession;
let sandbox: SandboxClient;

beforeAll(async () => {
  real = await startRealBroker();
  const broker = new BrokerClient({ baseUrl: real.harness.url, apiKey: real.apiKey });
  agentSession = await BrokerSession.ensure(broker, {
    scope: { type: 'thread', id: 'thr_sdk_paths' },
    actor: { type: 'agent', id: 'agt_sdk' },
  });
  sandbox = agentSession.sandbox();
}, 120_000);

afterAll(async () => {
  await agentSession?.release().catch(() => undefined);
  await real?.close();
}, 60_000);

describe('sandbox paths', () => {
  it('one file system: a file written by the files API is what exec reads, by either path', async () => {
    const ws = agentSession.workspacePath;
    await sandbox.files.write('a.txt', 'written through the files API\n');
    expect(await sandbox.exec.run({ cmd: 'cat a.txt' })).toMatchObject({
      exit_code: 0,
      stdout: 'written through the files API\n',
    });
    expect(await sandbox.exec.run({ argv: ['cat', `${ws}/a.txt`] })).toMatchObject({
      exit_code: 0,
      stdout: 'written through the files API\n',
    });
    // The default cwd and HOME are the workspace; a relative cwd is relative to it.
    await sandbox.files.mkdir('dir', { parents: true });
    const where = await sandbox.exec.run({ cmd: 'pwd; echo "$HOME"; echo made > made.txt' }, { cwd: 'dir' });
    expect(where).toMatchObject({ exit_code: 0, stdout: `${ws}/dir\n${ws}\n` });
    expect(await sandbox.files.readText('dir/made.txt')).toBe('made\n');
    await sandbox.files.remove('dir', { recursive: true });
    await sandbox.files.remove('a.txt');
  });

  it('an absolute path outside the workspace is the sandbox’s own: /tmp both ways, /proc refused', async () => {
    expect(await sandbox.files.write('/tmp/sdk/a.txt', 'in tmp\n')).toMatchObject({ path: '/tmp/sdk/a.txt' });
    const ran = await sandbox.exec.run({ cmd: 'cat /tmp/sdk/a.txt; echo made > /tmp/sdk/b.txt' });
    expect(ran).toMatchObject({ exit_code: 0, stdout: 'in tmp\n' });
    expect(await sandbox.files.readText('/tmp/sdk/b.txt')).toBe('made\n');
    expect((await sandbox.files.list('/tmp/sdk')).entries.map((e) => e.name)).toEqual(['a.txt', 'b.txt']);
    // `/` is the sandbox's root; its system files read as its processes read them.
    expect((await sandbox.files.list('/')).entries.map((e) => e.name)).toEqual(
      expect.arrayContaining(['etc', 'tmp']),
    );
    const release = await sandbox.exec.run({ argv: ['cat', '/etc/os-release'] });
    expect(await sandbox.files.readText('/etc/os-release')).toBe(release.stdout);
    await expect(sandbox.files.stat('/proc/self/status')).rejects.toBeInstanceOf(ForbiddenError);
    await sandbox.files.remove('/tmp/sdk', { recursive: true });
  });

  it('a write to a read-only place (/etc, under bubblewrap) is a ForbiddenError with the reason', async () => {
    // Unconfined, the sandbox's processes are the broker's user (root here): nothing to refuse.
    if (real.harness.provider.isolation !== 'bubblewrap') return;
    const refused = await sandbox.files.write('/etc/sdk.txt', 'no').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ForbiddenError);
    expect((refused as ForbiddenError).message).toMatch(
      /\/etc\/sdk\.txt .*(read-only file system|permission denied)/,
    );
  });
});
