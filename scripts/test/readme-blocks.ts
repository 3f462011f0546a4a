// Reads the shell blocks of README.md's walkthrough, so that a test runs exactly what a reader
// types (scripts/test/readme-walkthrough.test.ts) and the README cannot drift from the system.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ShellBlock {
  /** The `##` section and the `###` subsection the block is in. */
  readonly section: string;
  readonly subsection: string;
  readonly code: string;
}

export function readReadme(): string {
  return readFileSync(path.join(ROOT, 'README.md'), 'utf8');
}

/** Every fenced block with the info string `sh`, in document order, with its headings. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  let section = '';
  let subsection = '';
  let open: { info: string; lines: string[] } | undefined;
  for (const line of markdown.split('\n')) {
    if (open !== undefined) {
      if (line.startsWith('```')) {
        if (open.info === 'sh') blocks.push({ section, subsection, code: open.lines.join('\n') });
        open = undefined;
      } else open.lines.push(line);
      continue;
    }
    if (line.startsWith('```')) open = { info: line.slice(3).trim(), lines: [] };
    else if (line.startsWith('## ')) [section, subsection] = [line.slice(3).trim(), ''];
    else if (line.startsWith('### ')) subsection = line.slice(4).trim();
  }
  return blocks;
}

/** A block a person must type into a terminal (it says so on its first line). */
export function isInteractive(block: ShellBlock): boolean {
  return /^# Interactive\b/.test(block.code);
}

/** Replaces the one line `NAME=…` of the block with `NAME=value`; throws when it is not there once. */
export function substitute(code: string, name: string, value: string): string {
  const pattern = new RegExp(`^${name}=\\S+`, 'gm');
  const found = code.match(pattern) ?? [];
  if (found.length !== 1) throw new Error(`expected one line ${name}=… in the block, found ${found.length}`);
  return code.replace(pattern, `${name}=${value}`);
}

/**
 * The sample output a block shows as comments after `after` (`#    line`, `…` standing for
 * anything), as regular expressions to find in the real output, in order.
 */
export function sampleOutput(code: string, after: RegExp): RegExp[] {
  const lines = code.split('\n');
  const start = lines.findIndex((line) => after.test(line));
  if (start < 0) throw new Error(`no line ${String(after)} in the block`);
  const samples: RegExp[] = [];
  for (const line of lines.slice(start + 1)) {
    const sample = /^#\s{4}(.+)$/.exec(line)?.[1];
    if (sample === undefined) break;
    const escaped = sample
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('\\S*');
    samples.push(new RegExp(`^${escaped}$`, 'm'));
  }
  return samples;
}
