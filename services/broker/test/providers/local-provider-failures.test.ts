import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { LocalProvider } from '../../src/providers/local-provider.js';
import { contractSpec, expectSbxError } from './provider-contract.js';
import {
  agentPidsOf,
  captureLogger,
  newDataDir,
  newDataDirOutsideTmp,
  startLocalKit,
  tokenFor,
  type LocalKit,
} from './local-provider-kit.js';

const node = (script: string): { file: string; args: string[] } => ({
  file: process.execPath,
  args: ['-e', script],
});

/** Announces a URL like the agent does, but its /healthz never answers 200. */
const UNHEALTHY_AGENT = `
const server = require('node:http').createServer((_req, res) => { res.statusCode = 503; res.end(); });
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ msg: 'agent listening', url: 'http://127.0.0.1:' + server.address().port }));
});`;

async function withKit(
  options: Parameters<typeof startLocalKit>[0],
  body: (kit: LocalKit) => Promise<void>,
): Promise<void> {
  const kit = await startLocalKit(options);
  try {
    await body(kit);
  } finally {
    await kit.dispose();
  }
}

function causeChain(err: unknown): string {
  const messages: string[] = [];
  for (let at: unknown = err; at instanceof Error; at = at.cause) messages.push(at.message);
  return messages.join(' <- ');
}

describe('local provider: isolation', () => {
  it('refuses to start when bubblewrap is required but missing', async () => {
    const dataDir = newDataDir();
    try {
      const error = await expectSbxError(
        LocalProvider.open({
          dataDir,
          logger: captureLogger([]),
          isolation: 'bubblewrap',
          bwrapPath: '/nonexistent/bwrap',
        }),
        'PROVIDER_UNAVAILABLE',
      );
      expect(error.message).toContain('/nonexistent/bwrap');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses a bubblewrap that runs, but not with every flag the agent confines processes with', async () => {
    // A bwrap that cannot make an IPC namespace (as in some containers) but does everything else.
    // The agent runs it in its view: neither under /tmp (the sandbox's own) nor the data directory.
    const dataDir = newDataDir();
    const bin = mkdtempSync('/var/tmp/sbx-fake-bwrap-');
    chmodSync(bin, 0o755);
    const bwrap = path.join(bin, 'bwrap-without-ipc');
    writeFileSync(
      bwrap,
      '#!/bin/sh\nfor a in "$@"; do [ "$a" = --unshare-ipc ] && { echo "no ipc namespace" >&2; exit 1; }; done\nexec bwrap "$@"\n',
      { mode: 0o755 },
    );
    try {
      const error = await expectSbxError(
        LocalProvider.open({ dataDir, logger: captureLogger([]), isolation: 'bubblewrap', bwrapPath: bwrap }),
        'PROVIDER_UNAVAILABLE',
      );
      expect(causeChain(error)).toContain('no ipc namespace');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('refuses a bubblewrap whose sandboxes would see the data directory: the probe reads it from inside', async () => {
    // As a misconfigured or tampered bwrap would: everything but the tmpfs that hides the data directory.
    // Outside /tmp, which every sandbox (and agent) gets as its own tmpfs anyway.
    const dataDir = newDataDirOutsideTmp();
    const bin = mkdtempSync('/var/tmp/sbx-fake-bwrap-');
    const bwrap = path.join(bin, 'bwrap-showing-data');
    writeFileSync(
      bwrap,
      [
        '#!/bin/sh',
        `hide='${dataDir}'; held=`,
        'for arg do',
        '  shift',
        '  if [ -n "$held" ]; then held=; [ "$arg" = "$hide" ] && continue; set -- "$@" --tmpfs; fi',
        '  if [ "$arg" = --tmpfs ]; then held=yes; continue; fi',
        '  set -- "$@" "$arg"',
        'done',
        'exec /usr/bin/bwrap "$@"',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    chmodSync(bin, 0o755);
    try {
      const error = await expectSbxError(
        LocalProvider.open({ dataDir, logger: captureLogger([]), isolation: 'bubblewrap', bwrapPath: bwrap }),
        'PROVIDER_UNAVAILABLE',
      );
      expect(causeChain(error)).toContain('confinement does not hold inside the sandbox: data-dir');
      const logs: string[] = [];
      const fallback = await LocalProvider.open({
        dataDir,
        logger: captureLogger(logs),
        isolation: 'auto',
        bwrapPath: bwrap,
      });
      expect(fallback.isolation).toBe('none');
      expect(logs.join('')).toContain('data-dir');
      await fallback.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('falls back to no isolation under auto, and then refuses network-off sandboxes', async () => {
    await withKit({ isolation: 'auto', bwrapPath: '/nonexistent/bwrap' }, async (kit) => {
      expect(kit.provider.isolation).toBe('none');
      expect(kit.logs.join('')).toContain('user processes run without namespaces');
      const closed = contractSpec({ network: 'off' });
      await expectSbxError(kit.provider.create(closed), 'PROVIDER_UNAVAILABLE');
      expect(await kit.provider.status(closed.sandboxId)).toBe('missing');

      const open = contractSpec({ network: 'on' });
      const { dataplane } = await kit.provider.create(open);
      const headers = { authorization: `Bearer ${tokenFor(open, ['shell:ro'])}` };
      const health = (await (await fetch(`${dataplane.httpBaseUrl}/healthz`, { headers })).json()) as Record<
        string,
        unknown
      >;
      expect(health['launcher']).toBe('direct');
    });
  });
});

describe('local provider: agents that do not come up', () => {
  it('turns an agent that exits at start into PROVIDER_UNAVAILABLE and leaves nothing behind', async () => {
    const exits: unknown[] = [];
    const command = node("process.stderr.write('refusing: bad key\\n'); process.exit(1)");
    await withKit({ agentCommand: command, onAgentExit: (...args) => exits.push(args) }, async (kit) => {
      const spec = contractSpec();
      const error = await expectSbxError(kit.provider.create(spec), 'PROVIDER_UNAVAILABLE');
      expect(causeChain(error)).toMatch(/exited with code 1: refusing: bad key/);
      expect(await kit.provider.status(spec.sandboxId)).toBe('missing');
      expect(existsSync(path.join(kit.dataDir, 'workspaces', spec.sandboxId))).toBe(false);
      expect(existsSync(path.join(kit.dataDir, 'sandboxes', spec.sandboxId))).toBe(false);
      // The failed create is the report; no crash callback for an agent that never ran.
      expect(exits).toEqual([]);
    });
  });

  it('kills an agent that never announces its port once the start timeout passes', async () => {
    await withKit({ agentCommand: node('setInterval(() => {}, 1000)'), startTimeoutMs: 400 }, async (kit) => {
      const spec = contractSpec();
      // The cause names the start timeout (400 ms here, not the default): no clock needed.
      const error = await expectSbxError(kit.provider.create(spec), 'PROVIDER_UNAVAILABLE');
      expect(causeChain(error)).toContain('took too long');
      expect(agentPidsOf(spec.sandboxId)).toEqual([]);
    });
  });

  it('kills an agent whose health check keeps failing', async () => {
    // Long enough for node to start and announce its port on a loaded machine; the health
    // checks then fail until the timeout.
    await withKit({ agentCommand: node(UNHEALTHY_AGENT), startTimeoutMs: 10_000 }, async (kit) => {
      const spec = contractSpec();
      const error = await expectSbxError(kit.provider.create(spec), 'PROVIDER_UNAVAILABLE');
      expect(causeChain(error)).toContain('did not pass its health check');
      expect(agentPidsOf(spec.sandboxId)).toEqual([]);
    });
  });

  it('reports a program that cannot be run', async () => {
    await withKit({ agentCommand: { file: '/nonexistent/agent', args: [] } }, async (kit) => {
      const error = await expectSbxError(kit.provider.create(contractSpec()), 'PROVIDER_UNAVAILABLE');
      // Started through prlimit (the sandbox's rlimits), which names what it could not run.
      expect(causeChain(error)).toMatch(/could not be started|failed to execute \/nonexistent\/agent/);
    });
  });

  it('marks a sandbox failed, workspace kept, when its agent refuses to resume', async () => {
    await withKit({ isolation: 'none' }, async (kit) => {
      const spec = contractSpec();
      await kit.provider.create(spec);
      await kit.provider.stop(spec.sandboxId);
      writeFileSync(path.join(kit.dataDir, 'sandboxes', spec.sandboxId, 'agent.key'), 'too-short');
      await expectSbxError(kit.provider.start(spec.sandboxId), 'PROVIDER_UNAVAILABLE');
      expect(await kit.provider.status(spec.sandboxId)).toBe('failed');
      expect(existsSync(path.join(kit.dataDir, 'workspaces', spec.sandboxId))).toBe(true);
    });
  });
});
