// The sweep that ends what a sandbox left behind (process-sweep.ts): processes working in
// its workspace. Sweeps asking at once share one scan of /proc, begun after they asked
// (one scan per sweep made a burst of releases take time in the square of the sandboxes:
// 30 releases at once, 19 s each, in reliability/load): each still ends what was started
// before it asked, and nothing else.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { killProcessesWorkingIn } from '../../src/providers/process-sweep.js';

const root = mkdtempSync(path.join(tmpdir(), 'sbx-sweep-'));
const started: ChildProcess[] = [];

afterAll(() => {
  for (const child of started) child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** A `sleep` working in `dir`, once it runs. */
async function sleeperIn(dir: string): Promise<ChildProcess> {
  mkdirSync(dir, { recursive: true });
  const child = spawn('sleep', ['600'], { cwd: dir, stdio: 'ignore' });
  started.push(child);
  await once(child, 'spawn');
  return child;
}

const ended = (child: ChildProcess): Promise<unknown> =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : once(child, 'exit');

describe('sweeping the processes of a workspace', () => {
  it('ends those working in it, and only those, when many sweep at once', async () => {
    const dirs = Array.from({ length: 12 }, (_, i) => path.join(root, `ws-${i}`));
    const inside = await Promise.all(dirs.map((dir) => sleeperIn(path.join(dir, 'sub'))));
    const outside = await sleeperIn(path.join(root, 'elsewhere'));

    const killed = await Promise.all(dirs.map((dir) => killProcessesWorkingIn(dir)));

    expect(killed).toEqual(inside.map((child) => [child.pid]));
    await Promise.all(inside.map(ended));
    expect(outside.exitCode).toBeNull();
    expect(outside.signalCode).toBeNull();
  });

  it('ends a process started while another sweep was reading /proc', async () => {
    const first = killProcessesWorkingIn(path.join(root, 'nobody-here'));
    // The first sweep's scan is under way (or done) once this resolves.
    await new Promise((resolve) => setImmediate(resolve));
    const late = await sleeperIn(path.join(root, 'late'));
    const second = killProcessesWorkingIn(path.join(root, 'late'));
    expect(await first).toEqual([]);
    expect(await second).toEqual([late.pid]);
    await ended(late);
  });
});
