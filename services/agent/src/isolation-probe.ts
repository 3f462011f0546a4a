// `agent --isolation-probe <data-dir file> <other workspace>`: the broker's isolation probe
// (services/broker/src/providers/isolation-probe.ts) starts the agent exactly as it starts a
// sandbox's, and the agent makes the sandbox's namespaces and attacks them from inside.
import { execFile } from 'node:child_process';
import { AGENT_CODE_DIR, SANDBOX_WORKSPACE, SandboxNamespace } from '@sbx/service-kit';
import type { AgentConfig } from './config.js';

/** Each line `name:ok` when the attack it names fails from inside the sandbox. */
const PROBE_SCRIPT = `
[ "$(id -u)" != 0 ] && echo uid:ok
grep -Eq '^CapEff:[[:space:]]*0+$' /proc/self/status && echo capabilities:ok
umount -l /tmp 2>/dev/null || echo umount:ok
mount -t tmpfs none /tmp 2>/dev/null || echo mount:ok
cat "$1" >/dev/null 2>&1 || echo data-dir:ok
ls "$2" >/dev/null 2>&1 || echo other-workspaces:ok
touch /sbx-probe 2>/dev/null || echo read-only-root:ok
[ -e ${AGENT_CODE_DIR}/agent.mjs ] || echo agent-code:ok
[ -c /dev/pts/ptmx ] && echo terminals:ok
[ "$(pwd)" = ${SANDBOX_WORKSPACE} ] && touch .sbx-probe && rm .sbx-probe && echo workspace:ok
`;
const CHECKS = [
  'uid',
  'capabilities',
  'umount',
  'mount',
  'data-dir',
  'other-workspaces',
  'read-only-root',
  'agent-code',
  'terminals',
  'workspace',
];
const PROBE_TIMEOUT_MS = 15_000;

/** Prints `probe: ok`, or `probe: ` and what did not hold. */
export async function runIsolationProbe(config: AgentConfig, targets: readonly string[]): Promise<void> {
  const launcher = config.launcher;
  if (launcher.kind !== 'bubblewrap') throw new Error('the isolation probe needs AGENT_LAUNCHER=bubblewrap');
  const namespace = await SandboxNamespace.start({
    bwrapPath: launcher.bwrapPath,
    slirp4netnsPath: launcher.slirp4netnsPath,
    workspaceRoot: config.workspaceRoot,
    network: launcher.network,
    sharedView: launcher.sharedView,
  });
  try {
    const plan = namespace.joinPlan({
      file: '/bin/sh',
      args: ['-c', PROBE_SCRIPT, 'sbx-probe', ...targets],
      cwd: SANDBOX_WORKSPACE,
      env: { PATH: '/usr/bin:/bin' },
    });
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(plan.file, plan.args, { ...plan, timeout: PROBE_TIMEOUT_MS }, (err, out, stderr) => {
        if (err !== null && out === '') reject(new Error(`${err.message.split('\n')[0] ?? ''} ${stderr}`));
        else resolve(out);
      });
    });
    const held = new Set(stdout.split('\n').map((line) => line.replace(/:ok$/, '')));
    const failed = CHECKS.filter((check) => !held.has(check));
    process.stdout.write(`probe: ${failed.length === 0 ? 'ok' : failed.join(', ')}\n`);
  } finally {
    await namespace.close();
  }
}
