// The archives the provider puts into containers, read by the system's tar (what the engine's
// archive endpoint is compatible with), and archives tar writes read back by the provider.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { packTar, unpackTar } from '../../../src/providers/docker/tar-archive.js';

describe('tar archives of the docker provider', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sbx-tar-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('are listed by tar with their owner, mode and content', () => {
    const archive = path.join(dir, 'out.tar');
    writeFileSync(
      archive,
      packTar([
        { name: 'agent.key', content: Buffer.from('k'.repeat(43)), mode: 0o440, uid: 0, gid: 1000 },
        { name: 'sandbox-env.json', content: Buffer.from('{"A":"1"}'), mode: 0o444, uid: 0, gid: 1000 },
      ]),
    );
    const listing = execFileSync('tar', ['--numeric-owner', '-tvf', archive], { encoding: 'utf8' });
    expect(listing).toMatch(/^-r--r----- 0\/1000\s+43 .* agent\.key$/m);
    expect(listing).toMatch(/^-r--r--r-- 0\/1000\s+9 .* sandbox-env\.json$/m);
    const extracted = path.join(dir, 'x');
    mkdirSync(extracted);
    execFileSync('tar', ['-xf', archive, '-C', extracted]);
    expect(readFileSync(path.join(extracted, 'sandbox-env.json'), 'utf8')).toBe('{"A":"1"}');
  });

  it('give each file an mtime with milliseconds, later for every file written', () => {
    const archive = path.join(dir, 'times.tar');
    const file = { content: Buffer.from('x'), mode: 0o444, uid: 0, gid: 0 };
    writeFileSync(
      archive,
      packTar([
        { ...file, name: 'first' },
        { ...file, name: 'second' },
      ]),
    );
    const extracted = path.join(dir, 'times');
    mkdirSync(extracted);
    execFileSync('tar', ['-xf', archive, '-C', extracted]);
    const [first, second] = ['first', 'second'].map((name) => statSync(path.join(extracted, name)).mtimeMs);
    expect(second).toBeGreaterThan(first ?? Infinity);
    expect(Math.abs((second ?? 0) - Date.now())).toBeLessThan(60_000);
  });

  it('written by tar are read back file by file', () => {
    writeFileSync(path.join(dir, 'revocations.json'), '{"version":1,"jtis":{}}');
    const archive = execFileSync('tar', ['-cf', '-', '-C', dir, 'revocations.json']);
    const [entry, ...rest] = unpackTar(archive);
    expect(rest).toEqual([]);
    expect(entry?.name).toBe('revocations.json');
    expect(entry?.content.toString()).toBe('{"version":1,"jtis":{}}');
  });

  it('refuse names that would leave the directory they are put into', () => {
    expect(() => packTar([{ name: '../x', content: Buffer.from(''), mode: 0o444, uid: 0, gid: 0 }])).toThrow(
      'not a plain file name',
    );
  });
});
