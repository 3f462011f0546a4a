import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { SBX_BIN, Tmux, sbxRunner, type SbxRunner } from './support.js';

const SLOW = 120_000;
let real: RealBroker;
let cli: SbxRunner;
const tmux = new Tmux();

/** A tmux session running `sbx <args>`; the pane stays after sbx exits and shows its exit code. */
async function startInTmux(name: string, args: readonly string[]): Promise<void> {
  const command = `env SBX_HOME='${cli.home}' '${process.execPath}' '${SBX_BIN}' ${args.join(' ')}; echo "[sbx exited $?]"; sleep 600`;
  await tmux.cmd('new-session', '-d', '-s', name, '-x', '120', '-y', '40', command);
}

beforeAll(async () => {
  real = await startRealBroker();
  cli = sbxRunner();
  for (const args of [
    ['login', '--broker', real.harness.url],
    ['ensure', 'thr_tty'],
  ]) {
    const result = await cli.sbx(args, { input: real.apiKey });
    if (result.code !== 0) throw new Error(`sbx ${args[0] ?? ''} failed: ${result.stderr}`);
  }
}, SLOW);

afterAll(async () => {
  await tmux.killServer();
  await cli.sbx(['release', 'thr_tty']);
  await real.close();
  cli.close();
}, SLOW);

describe('sbx shell in a terminal (tmux)', () => {
  let shellId = '';

  it(
    'runs typed commands, follows the window size and detaches with Ctrl-]',
    async () => {
      await startInTmux('first', ['shell', 'thr_tty']);
      await tmux.cmd('send-keys', '-t', 'first', 'echo "answer-$((6*7))"', 'Enter');
      await tmux.waitFor('first', /^answer-42\s*$/m);

      await tmux.cmd('send-keys', '-t', 'first', 'stty size', 'Enter');
      await tmux.waitFor('first', /^40 120\s*$/m);
      await tmux.cmd('resize-window', '-t', 'first', '-x', '100', '-y', '30');
      await tmux.cmd('send-keys', '-t', 'first', 'clear; stty size', 'Enter');
      await tmux.waitFor('first', /^30 100\s*$/m);

      await tmux.cmd('send-keys', '-t', 'first', 'C-]');
      const detached = await tmux.waitFor(
        'first',
        /detached from shell (\S+); reattach: sbx shell thr_tty --id \1\]/,
      );
      shellId = detached[1] ?? '';
      expect(shellId).toMatch(/\S/);
      await tmux.waitFor('first', /\[sbx exited 0\]/);
    },
    SLOW,
  );

  it(
    'reattaches by id with the earlier output, and the shell exit code becomes sbx’s',
    async () => {
      expect(shellId).not.toBe('');
      await startInTmux('second', ['shell', 'thr_tty', '--id', shellId]);
      // The scrollback replay brings back what the shell printed before the detach.
      await tmux.waitFor('second', /^30 100\s*$/m);
      await tmux.cmd('send-keys', '-t', 'second', 'echo "back-$((40+2))"', 'Enter');
      await tmux.waitFor('second', /^back-42\s*$/m);
      await tmux.cmd('send-keys', '-t', 'second', 'exit 7', 'Enter');
      await tmux.waitFor('second', /\[sbx exited 7\]/);
    },
    SLOW,
  );

  it(
    '--observe watches a shell without typing into it',
    async () => {
      await startInTmux('owner', ['shell', 'thr_tty']);
      await tmux.cmd('send-keys', '-t', 'owner', 'echo "owner-$((1+1))"', 'Enter');
      await tmux.waitFor('owner', /^owner-2\s*$/m);
      await tmux.cmd('send-keys', '-t', 'owner', 'C-]');
      const id = (await tmux.waitFor('owner', /detached from shell (\S+);/))[1] ?? '';
      await startInTmux('watcher', ['shell', 'thr_tty', '--observe', '--id', id]);
      await tmux.waitFor('watcher', /^owner-2\s*$/m);
      await tmux.cmd('send-keys', '-t', 'watcher', 'echo "typed-$((2+3))"', 'Enter');
      await tmux.cmd('send-keys', '-t', 'watcher', 'C-]');
      await tmux.waitFor('watcher', /\[sbx exited 0\]/);
      // Had the watcher's keys reached the shell, its output would be in the scrollback
      // before this marker, which the owner types afterwards.
      await startInTmux('check', ['shell', 'thr_tty', '--id', id]);
      await tmux.cmd('send-keys', '-t', 'check', 'echo "marker-$((3+3))"', 'Enter');
      await tmux.waitFor('check', /^marker-6\s*$/m);
      expect(await tmux.capture('check')).not.toMatch(/typed/);
    },
    SLOW,
  );
});
