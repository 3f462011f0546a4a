// docs/README.md is the index of the documentation by reader: every page in docs/ must be
// linked from it, and every relative link it holds must lead to a file that exists. The
// README links the index and the troubleshooting page.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './readme-blocks.js';

const DOCS = path.join(ROOT, 'docs');
const index = readFileSync(path.join(DOCS, 'README.md'), 'utf8');

/** The targets of the markdown links `[text](target)` in `markdown`, without their `#anchor`. */
function linkTargets(markdown: string): string[] {
  return [...markdown.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => (match[1] ?? '').split('#')[0] ?? '')
    .filter((target) => target !== '' && !/^[a-z]+:/.test(target));
}

describe('docs/README.md, the index by reader', () => {
  it('links every page in docs/', () => {
    const linked = new Set(linkTargets(index).map((target) => path.resolve(DOCS, target)));
    const pages = readdirSync(DOCS).filter((name) => name.endsWith('.md') && name !== 'README.md');
    expect(pages.length).toBeGreaterThan(20);
    expect(pages.filter((name) => !linked.has(path.join(DOCS, name)))).toEqual([]);
  });

  it('has no link to a file that does not exist', () => {
    const broken = linkTargets(index).filter((target) => !existsSync(path.resolve(DOCS, target)));
    expect(broken).toEqual([]);
  });

  it('is linked from the README, with the troubleshooting page', () => {
    const targets = linkTargets(readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
    expect(targets).toEqual(expect.arrayContaining(['docs/README.md', 'docs/troubleshooting.md']));
  });
});
