import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestAgent } from '../support/agent-harness.js';
import { expectError, send, startFilesAgent, uploadTemporaries } from './files-test-kit.js';

/**
 * A full disk is simulated with a 256 KiB tmpfs mounted inside the workspace. Mounting
 * needs root (CAP_SYS_ADMIN); where the tests cannot mount, this suite is skipped.
 */
function canMountTmpfs(): boolean {
  const probe = mkdtempSync(path.join(tmpdir(), 'sbx-files-mount-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmdirSync(probe);
  }
}

const describeWithTmpfs = canMountTmpfs() ? describe : describe.skip;

describeWithTmpfs('a full disk (ENOSPC)', () => {
  let agent: TestAgent;
  let small: string;

  beforeAll(async () => {
    agent = await startFilesAgent();
    small = path.join(agent.workspace, 'small');
    mkdirSync(small);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', small]);
    writeFileSync(path.join(small, 'old.txt'), 'old');
  });
  afterAll(async () => {
    execFileSync('umount', [small]);
    await agent.close();
  });

  it('answers 507 INSUFFICIENT_STORAGE, keeps the old file and removes the temporary one', async () => {
    const res = await send(agent, {
      method: 'PUT',
      path: '/files/small/old.txt',
      token: agent.token(['fs:rw']),
      body: Buffer.alloc(1024 * 1024, 1),
    });
    expect(expectError(res, 'INSUFFICIENT_STORAGE', 507)).toMatch(/no space left.*\/small\/old\.txt/);
    expect(readFileSync(path.join(small, 'old.txt'), 'utf8')).toBe('old');
    expect(uploadTemporaries(small)).toEqual([]);
    const fits = await send(agent, {
      method: 'PUT',
      path: '/files/small/old.txt',
      token: agent.token(['fs:rw']),
      body: 'new',
    });
    expect(fits.status).toBe(200);
  });
});
