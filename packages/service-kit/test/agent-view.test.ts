import { describe, expect, it } from '@jest/globals';
import { agentViewCommand } from '../src/agent-view.js';

const pairs = (args: readonly string[], flag: string): string[] =>
  args.flatMap((arg, i) => (arg === flag ? [args[i + 1] ?? ''] : []));

const view = {
  bwrapPath: '/usr/bin/bwrap',
  workspace: '/srv/sbx/workspaces/sb_1',
  hidePaths: ['/srv/sbx', '/tmp/sbx-data'],
  agentCode: '/srv/sbx/agent-bundle',
  hostRoot: [
    { name: 'usr', kind: 'bind' },
    { name: 'srv', kind: 'bind' },
    { name: 'bin', kind: 'symlink', target: 'usr/bin' },
    { name: 'tmp', kind: 'bind' },
  ],
} as const;
const agent = { file: '/usr/bin/node', args: ['/run/sbx-agent/agent.mjs'] };

describe("the agent's view (bubblewrap)", () => {
  it('drops a root caller to the sandbox user before anything is built, keeping no capability', () => {
    const command = agentViewCommand({ ...view, runAs: { uid: 212_345, gid: 212_345 } }, agent);
    expect(command.file).toBe('/usr/bin/setpriv');
    const [, ...rest] = command.args.join(' ').split('--reuid 212345 --regid 212345 --clear-groups');
    expect(rest.join('')).toMatch(
      /^ --inh-caps=-all --bounding-set=-all --no-new-privs -- \/usr\/bin\/bwrap /,
    );
    // bwrap itself then runs unprivileged, in a user namespace of its own, and ends in the agent.
    expect(command.args).toEqual(expect.arrayContaining(['--unshare-user', '--cap-drop', 'ALL']));
    expect(command.args.slice(-3)).toEqual(['--', '/usr/bin/node', '/run/sbx-agent/agent.mjs']);
  });

  it("shows the sandbox's filesystem: host entries read-only, its own /tmp, /run, devpts, workspace", () => {
    const { args } = agentViewCommand(view, agent);
    expect(args[0]).toBe('--unshare-user');
    expect(pairs(args, '--ro-bind')).toEqual(['/usr', '/srv', '/srv/sbx/agent-bundle']);
    expect(args.join(' ')).toContain('--ro-bind /srv/sbx/agent-bundle /run/sbx-agent');
    expect(pairs(args, '--dev')).toEqual(['/dev']);
    expect(pairs(args, '--tmpfs')).toEqual(expect.arrayContaining(['/tmp', '/run', '/dev/shm', '/srv/sbx']));
    // The host's /tmp is never shown, so a hidden path under it needs no mount.
    expect(pairs(args, '--tmpfs')).not.toContain('/tmp/sbx-data');
    expect(args.join(' ')).toContain('--bind /srv/sbx/workspaces/sb_1 /workspace');
    // The workspace is bound after the tmpfs hiding the data directory, the root made read-only last.
    expect(args.indexOf('/srv/sbx')).toBeLessThan(args.indexOf('/srv/sbx/workspaces/sb_1'));
    expect(args.lastIndexOf('--remount-ro')).toBeGreaterThan(args.indexOf('/srv/sbx/workspaces/sb_1'));
    // The agent keeps the host's /proc (it stays in the host's pid namespace).
    expect(args.join(' ')).toContain('--bind /proc /proc');
  });

  it('binds a device only where asked, with a traversable parent', () => {
    const { args } = agentViewCommand(
      { ...view, devices: [{ host: '/srv/sbx/sandboxes/sb_1/net-tun', inside: '/dev/net/tun' }] },
      agent,
    );
    expect(args.join(' ')).toContain(
      '--perms 0755 --dir /dev/net --dev-bind /srv/sbx/sandboxes/sb_1/net-tun /dev/net/tun',
    );
    expect(agentViewCommand(view, agent).args).not.toContain('/dev/net/tun');
  });
});
