import { describe, expect, it } from '@jest/globals';
import { bubblewrapConfinementArgs, readHostRoot } from '../src/bubblewrap.js';

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

  it('builds the root from the host’s entries, read-only, with the workspace at /workspace', () => {
    const args = bubblewrapConfinementArgs({
      workspaceRoot: '/srv/data/ws-1',
      hostRoot: [
        { name: 'usr', kind: 'bind' },
        { name: 'bin', kind: 'symlink', target: 'usr/bin' },
        { name: 'tmp', kind: 'bind' },
        { name: 'workspace', kind: 'bind' },
      ],
    });
    expect(pairs(args, '--ro-bind')).toEqual(['/usr']);
    expect(args.join(' ')).toContain('--symlink usr/bin /bin');
    // The host's /tmp and any /workspace of its own never reach the sandbox.
    expect(pairs(args, '--tmpfs')).toContain('/tmp');
    expect(args.join(' ')).toContain('--bind /srv/data/ws-1 /workspace');
    // The root is made read-only once everything is mounted on it.
    expect(args.indexOf('--remount-ro')).toBeGreaterThan(args.lastIndexOf('--bind'));
    expect(pairs(args, '--remount-ro')).toEqual(['/']);
  });

  it('reads the host’s top level when not told, never including what the sandbox has its own of', () => {
    const entries = readHostRoot().map((entry) => entry.name);
    expect(entries).toContain('usr');
    for (const own of ['proc', 'dev', 'tmp', 'run']) expect(entries).not.toContain(own);
  });
});
