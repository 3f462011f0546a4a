import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { SBX_BIN, Tmux, logInAndEnsure, sbxRunner, type SbxRunner } from './support.js';

const SLOW = 180_000;
const THREAD = 'thr_progress';
const BIG_BYTES = 24 * 1024 * 1024 + 123;
let real: RealBroker;
let cli: SbxRunner;
let work: string;
let big: Buffer;
const tmux = new Tmux();

/**
 * `sbx <args>` in a tmux pane of the given width. The command waits for a key press so
 * that `pipe-pane` records every byte it writes (the raw frames the screen then overwrites).
 */
async function runInTmux(name: string, columns: number, args: readonly string[]): Promise<string> {
  const raw = path.join(work, `${name}.raw`);
  const command = `read -r _; env SBX_HOME='${cli.home}' '${process.execPath}' '${SBX_BIN}' ${args.map((a) => `'${a}'`).join(' ')}; echo "[sbx exited $?]"; sleep 600`;
  await tmux.cmd('new-session', '-d', '-s', name, '-x', String(columns), '-y', '20', command);
  await tmux.cmd('pipe-pane', '-o', '-t', name, `cat >> '${raw}'`);
  await tmux.cmd('send-keys', '-t', name, 'Enter');
  await tmux.waitFor(name, /\[sbx exited 0\]/, 120_000);
  const deadline = Date.now() + 30_000;
  while (!(existsSync(raw) && readFileSync(raw, 'utf8').includes('[sbx exited 0]'))) {
    if (Date.now() > deadline) throw new Error(`pipe-pane never wrote ${raw}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return readFileSync(raw, 'utf8');
}

/** The screen as the user sees it, rows unjoined (a wrapped line shows as two rows). */
async function screenRows(name: string): Promise<string[]> {
  return (await tmux.cmd('capture-pane', '-p', '-t', name)).split('\n');
}

/** Every percentage the bar drew, in order. */
function percentages(raw: string): number[] {
  return [...raw.matchAll(/\] (\d+)% /g)].map((m) => Number(m[1]));
}

function expectBarFrames(raw: string): void {
  const seen = percentages(raw);
  expect(seen.length).toBeGreaterThanOrEqual(2);
  expect(seen[0]).toBeLessThan(100);
  expect(seen.at(-1)).toBe(100);
  expect(seen).toEqual(seen.toSorted((a, b) => a - b));
  // Each frame returns to the line start and clears what a longer frame left behind.
  expect(raw).toContain('] 100% 24.0 MiB/24.0 MiB\u001b[K');
  expect(raw.split('\r').filter((frame) => frame.includes('%')).length).toBe(percentages(raw).length);
}

beforeAll(async () => {
  real = await startRealBroker();
  cli = sbxRunner();
  work = path.dirname(cli.home);
  await logInAndEnsure(cli, real.harness.url, real.apiKey, [THREAD]);
  big = randomBytes(BIG_BYTES);
  writeFileSync(path.join(work, 'big.bin'), big);
}, SLOW);

afterAll(async () => {
  await tmux.killServer();
  await cli.sbx(['release', THREAD]);
  await real.close();
  cli.close();
}, SLOW);

describe('sbx cp progress bar on a terminal (tmux)', () => {
  it(
    'shows an upload rising to 100 % with the byte counts, left as one line on the screen',
    async () => {
      const raw = await runInTmux('up', 100, ['cp', path.join(work, 'big.bin'), `${THREAD}:big.bin`]);
      expectBarFrames(raw);
      const bars = (await screenRows('up')).filter((row) => row.includes('%'));
      expect(bars).toHaveLength(1);
      expect(bars[0]).toMatch(/^big\.bin \[#{30}\] 100% 24\.0 MiB\/24\.0 MiB\s*$/);
      const listed = await cli.sbx(['ls', `${THREAD}:`, '--json']);
      const entries = (JSON.parse(listed.stdout) as { entries: { name: string; size: number }[] }).entries;
      expect(entries.find((e) => e.name === 'big.bin')?.size).toBe(BIG_BYTES);
    },
    SLOW,
  );

  it(
    'shows a download the same way, and the file arrives whole',
    async () => {
      const back = path.join(work, 'back.bin');
      const raw = await runInTmux('down', 100, ['cp', `${THREAD}:big.bin`, back]);
      expectBarFrames(raw);
      const bars = (await screenRows('down')).filter((row) => row.includes('%'));
      expect(bars).toEqual([expect.stringMatching(/^back\.bin \[#{30}\] 100% 24\.0 MiB\/24\.0 MiB\s*$/)]);
      expect(readFileSync(back).equals(big)).toBe(true);
    },
    SLOW,
  );

  it(
    'cuts a long file name so the bar stays on one row of a narrow terminal',
    async () => {
      const name = 'a-rather-long-file-name-that-would-not-fit-beside-the-bar.bin';
      writeFileSync(path.join(work, name), big.subarray(0, 2 * 1024 * 1024));
      await runInTmux('narrow', 60, ['cp', path.join(work, name), `${THREAD}:${name}`]);
      const rows = await screenRows('narrow');
      const bar = rows.findIndex((row) => row.includes('100%'));
      expect(rows[bar]).toMatch(/^a-r[^ ]*… \[#{30}\] 100% 2\.0 MiB\/2\.0 MiB$/);
      expect(rows[bar]?.length).toBeLessThan(60);
      expect(rows[bar]).toContain('…');
      // Nothing of the bar spilled onto the rows around it.
      expect(rows.filter((row) => row.includes('MiB'))).toHaveLength(1);
    },
    SLOW,
  );
});

describe('sbx cp without a terminal', () => {
  it(
    'writes no bar, carriage return or escape to a piped stderr, either way',
    async () => {
      const up = await cli.sbx(['cp', path.join(work, 'big.bin'), `${THREAD}:piped.bin`]);
      expect(up).toEqual({ code: 0, stdout: '', stderr: '' });
      const down = await cli.sbx(['cp', `${THREAD}:piped.bin`, path.join(work, 'piped.bin')]);
      expect(down).toEqual({ code: 0, stdout: '', stderr: '' });
      expect(readFileSync(path.join(work, 'piped.bin')).equals(big)).toBe(true);
    },
    SLOW,
  );
});
