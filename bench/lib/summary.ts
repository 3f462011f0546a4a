/**
 * One table for a whole `pnpm bench`: bench/results/latest.json (written by
 * scripts/run-bench.mjs from each suite's results) rendered as bench/results/latest.md, with
 * the machine and its load. A row is every line with a target and every line a suite marked
 * for the table (`Verdict.table`); the rest stays in the JSON.
 *
 * `--publish` copies the last latest.md to docs/performance.md and puts its table into the
 * README between the performance markers: the committed copy of one run.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatValue, type TableCells } from './measure.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LATEST_JSON = path.join(ROOT, 'bench/results/latest.json');
const LATEST_MD = path.join(ROOT, 'bench/results/latest.md');
const PUBLISHED = path.join(ROOT, 'docs/performance.md');
const README = path.join(ROOT, 'README.md');
const START = '<!-- bench-table:start (scripts/run-bench.mjs --publish) -->';
const END = '<!-- bench-table:end -->';
const GIB = 1024 ** 3;

/** A verdict as JSON holds it: a NaN value (did not complete) became null. */
interface StoredVerdict {
  readonly metric: string;
  readonly value: number | null;
  readonly unit: string;
  readonly target: string;
  readonly pass: boolean;
  readonly table?: TableCells;
}

interface SuiteRecord {
  readonly suite: string;
  readonly exit_code: number | null;
  readonly seconds: number;
  readonly load_before: readonly number[];
  readonly load_after: readonly number[];
  readonly verdicts: readonly StoredVerdict[];
}

interface Latest {
  readonly started_at: string;
  readonly finished_at: string;
  readonly tree?: string;
  readonly machine: {
    readonly cores: number;
    readonly model: string;
    readonly memory_bytes: number;
    readonly kernel: string;
    readonly node: string;
  };
  readonly load_before: readonly number[];
  readonly load_after: readonly number[];
  readonly suites: readonly SuiteRecord[];
}

/** Report-only lines carry `(report)`, `(floor)` or another parenthesized note as target. */
const isRow = (v: StoredVerdict): boolean =>
  v.table !== undefined || (v.target !== '' && !v.target.startsWith('('));

const cell = (text: string): string => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

function cellsOf(v: StoredVerdict): Required<TableCells> {
  const shown = v.value === null ? 'did not complete' : formatValue(v.value, v.unit);
  const plain =
    v.unit === '×' ? { value: '—', floor: '—', ratio: shown } : { value: shown, floor: '—', ratio: '—' };
  return { ...plain, ...v.table };
}

function rows(latest: Latest): string[] {
  const lines = [
    '| suite | measurement | value | floor | ratio | target | result |',
    '| ----- | ----------- | ----- | ----- | ----- | ------ | ------ |',
  ];
  for (const record of latest.suites) {
    for (const v of record.verdicts.filter(isRow)) {
      const c = cellsOf(v);
      const target = v.target.startsWith('(') ? 'report' : v.target.trim();
      const result = v.pass ? 'PASS' : '**FAIL**';
      lines.push(
        `| ${[record.suite, v.metric, c.value, c.floor, c.ratio, target].map(cell).join(' | ')} | ${result} |`,
      );
    }
  }
  return lines;
}

const loadText = (load: readonly number[]): string => load.map((value) => value.toFixed(2)).join(' / ');

function machineLines(latest: Latest): string[] {
  const { machine } = latest;
  const minutes = Math.round((Date.parse(latest.finished_at) - Date.parse(latest.started_at)) / 60_000);
  const perSuite = latest.suites
    .map((s) => `${s.suite} ${s.load_before[0]?.toFixed(1)} → ${s.load_after[0]?.toFixed(1)}`)
    .join(', ');
  return [
    `- **Date:** ${latest.started_at.replace('T', ' ').slice(0, 16)} UTC, ${minutes} min` +
      (latest.tree === undefined ? '' : `; tree \`${latest.tree}\``),
    `- **CPU:** ${machine.cores} cores, ${machine.model}`,
    `- **Memory:** ${(machine.memory_bytes / GIB).toFixed(1)} GiB; **kernel:** ${machine.kernel}; **node:** ${machine.node}`,
    `- **Load average (1 / 5 / 15 min):** ${loadText(latest.load_before)} before, ${loadText(latest.load_after)} after`,
    `- **Load average (1 min) per suite, before → after:** ${perSuite}`,
  ];
}

function render(latest: Latest): string {
  const verdicts = latest.suites.flatMap((s) => s.verdicts.filter(isRow));
  const targets = verdicts.filter((v) => !v.target.startsWith('('));
  const met = targets.filter((v) => v.pass).length;
  return [
    '# Benchmark results',
    '',
    ...machineLines(latest),
    '',
    'Each ratio is the subject against its floor measured in the same run (bench/README.md',
    'says what each floor is). `report` rows have no target.',
    '',
    ...rows(latest),
    '',
    `${met} of ${targets.length} targets met. Every line of every suite is in \`bench/results/latest.json\`.`,
    'Regenerate with `npx -y pnpm@12.4.2 bench`, then publish with `node scripts/run-bench.mjs --publish`.',
    '',
  ].join('\n');
}

/** docs/performance.md is the last latest.md; the README gets its machine lines and table. */
function publish(): void {
  const markdown = readFileSync(LATEST_MD, 'utf8');
  writeFileSync(PUBLISHED, markdown);
  const readme = readFileSync(README, 'utf8');
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md has no ${START} … ${END} section`);
  // Everything after the title: the machine, the table and the count of targets met.
  const body = markdown.slice(markdown.indexOf('\n') + 1).trim();
  writeFileSync(README, `${readme.slice(0, start + START.length)}\n\n${body}\n\n${readme.slice(end)}`);
  // As `pnpm format` would leave them (aligned table columns), so format:check stays clean.
  const prettier = path.join(ROOT, 'node_modules/.bin/prettier');
  const formatted = spawnSync(prettier, ['--write', PUBLISHED, README], { cwd: ROOT, stdio: 'inherit' });
  if (formatted.status !== 0) throw new Error('prettier failed on the published files');
  console.log(`wrote ${path.relative(ROOT, PUBLISHED)} and the table in README.md`);
}

if (process.argv.includes('--publish')) {
  publish();
} else {
  const latest = JSON.parse(readFileSync(LATEST_JSON, 'utf8')) as Latest;
  writeFileSync(LATEST_MD, render(latest));
  console.log(`\nwrote ${path.relative(ROOT, LATEST_MD)}`);
}
