import { describe, expect, it } from '@jest/globals';
import { bubblewrapConfinementArgs } from '../src/bubblewrap.js';

const pairs = (args: string[], flag: string): string[] =>
  args.flatMap((arg, i) => (arg === flag ? [args[i + 1] ?? ''] : []));

describe('bubblewrap confinement flags', () => {
  it("binds the host's terminals only for sandboxes with a host user of their own", () => {
    // Sandboxes sharing one user (a broker that is not root) could write to each other's shells.
    const shared = bubblewrapConfinementArgs({ workspaceRoot: '/srv/ws' });
    expect(pairs(shared, '--dev-bind')).not.toEqual(expect.arrayContaining(['/dev/pts']));
    expect(pairs(shared, '--dev-bind')).not.toContain('/dev/ptmx');
    const own = bubblewrapConfinementArgs({ workspaceRoot: '/srv/ws', hostTerminals: true });
    expect(pairs(own, '--dev-bind')).toEqual(expect.arrayContaining(['/dev/pts', '/dev/ptmx']));
  });

  it('makes user code an unprivileged user of its own namespaces and hides what it must not see', () => {
    const args = bubblewrapConfinementArgs({ workspaceRoot: '/srv/ws', hidePaths: ['/srv'] });
    expect(args).toEqual(expect.arrayContaining(['--unshare-user', '--unshare-pid', '--unshare-net']));
    expect(pairs(args, '--uid')).toEqual(['1000']);
    expect(pairs(args, '--cap-drop')).toEqual(['ALL']);
    expect(pairs(args, '--tmpfs')).toEqual(expect.arrayContaining(['/tmp', '/srv', '/sys/fs/cgroup']));
    // The workspace is bound back after the hiding tmpfs, or it would be hidden too.
    expect(args.indexOf('/srv')).toBeLessThan(args.lastIndexOf('--bind'));
  });
});
