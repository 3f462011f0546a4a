import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const tsx = `${root}node_modules/.bin/tsx`;

/** Runs a service's entry point as operators do and returns how it stopped. */
function start(entry: string, env: Record<string, string>): { status: number | null; stderr: string } {
  const result = spawnSync(tsx, [entry], {
    cwd: root,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: result.status, stderr: result.stderr };
}

describe('services refuse a bad environment at start', () => {
  it('the agent names every bad variable, echoes no value, prints no stack trace', () => {
    const { status, stderr } = start('services/agent/src/main.ts', {
      SANDBOX_ID: 'bad id',
      SANDBOX_SIGNING_KEY: 'dG9vLXNob3J0',
      PORT: 'eighty',
    });
    expect(status).toBe(1);
    expect(stderr).toMatch(/SANDBOX_ID/);
    expect(stderr).toMatch(/SANDBOX_SIGNING_KEY/);
    expect(stderr).toMatch(/PORT/);
    expect(stderr).not.toContain('dG9vLXNob3J0');
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it('the broker names every bad variable and stops', () => {
    const { status, stderr } = start('services/broker/src/main.ts', {
      DATABASE_URL: 'mysql://db/x',
      LOCAL_ISOLATION: 'docker',
      REDIS_URL: 'nope',
    });
    expect(status).toBe(1);
    for (const name of ['DATABASE_URL', 'LOCAL_ISOLATION', 'REDIS_URL', 'BROKER_MASTER_KEY'])
      expect(stderr).toMatch(name);
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it('the broker that cannot start says why, its cause included, in one line', () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'sbx-startup-'));
    try {
      // Where the agent's code is built: a file, so the build fails with a cause of its own.
      writeFileSync(path.join(dataDir, 'agent-bundle'), 'not a directory');
      const { status, stderr } = start('services/broker/src/main.ts', {
        BROKER_DATA_DIR: dataDir,
        PORT: '0',
      });
      expect(status).toBe(1);
      expect(stderr).toMatch(/could not build the sandbox agent: .*(ENOTDIR|EEXIST|not a directory)/);
      expect(stderr).not.toMatch(/\n\s+at /);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 150_000);
});
