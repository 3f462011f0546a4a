// cgroup v2 cannot run here (this machine is v1; the v1 path is exercised for real by
// local-provider-limits.test.ts): the v2 layout is checked against a model of the tree in a
// temporary directory, with the files the kernel would provide created by the test.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { detectCgroups } from '../../src/providers/sandbox-cgroups.js';

const LIMITS = {
  maxProcesses: 100,
  memoryBytes: 256 * 1024 * 1024,
  cpuMillicores: 1500,
  maxFileBytes: 1,
  diskBytes: 1,
};

describe('sandbox cgroups on cgroup v2 (model tree, no v2 host here)', () => {
  let root = '';
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  function modelTree(controllers: string): void {
    root = mkdtempSync(path.join(tmpdir(), 'sbx-cgroup-v2-'));
    for (const dir of [root, path.join(root, 'sbx')]) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'cgroup.controllers'), `${controllers}\n`);
      writeFileSync(path.join(dir, 'cgroup.subtree_control'), '');
    }
    mkdirSync(path.join(root, 'sbx', 'sb_1'));
    writeFileSync(path.join(root, 'sbx', 'sb_1', 'memory.swap.max'), 'max');
  }

  it('enables the controllers on every level and writes the limits of one sandbox', async () => {
    modelTree('cpuset cpu io memory hugetlb pids');
    const cgroups = await detectCgroups(root);
    expect(cgroups?.version).toBe('v2');
    expect(await cgroups?.create('sb_1', LIMITS)).toEqual([path.join(root, 'sbx', 'sb_1')]);
    const read = (...parts: string[]): string => readFileSync(path.join(root, ...parts), 'utf8');
    expect(read('cgroup.subtree_control')).toBe('+pids +memory +cpu');
    expect(read('sbx', 'cgroup.subtree_control')).toBe('+pids +memory +cpu');
    expect(read('sbx', 'sb_1', 'pids.max')).toBe('100');
    expect(read('sbx', 'sb_1', 'memory.max')).toBe(String(256 * 1024 * 1024));
    expect(read('sbx', 'sb_1', 'memory.swap.max')).toBe('0');
    expect(read('sbx', 'sb_1', 'cpu.max')).toBe('150000 100000');
  });

  it('refuses a tree that lacks a controller rather than leave a limit unenforced', async () => {
    modelTree('cpu io pids');
    const cgroups = await detectCgroups(root);
    await expect(cgroups?.create('sb_1', LIMITS)).rejects.toThrow(/lacks controllers/);
  });

  it('finds no cgroups where it may not write (rlimits alone then hold)', async () => {
    root = mkdtempSync(path.join(tmpdir(), 'sbx-cgroup-none-'));
    expect(await detectCgroups(root)).toBeUndefined();
  });
});
