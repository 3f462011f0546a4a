import { describe, expect, it } from '@jest/globals';
import { bubblewrapConfinementArgs, readHostRoot } from '../src/bubblewrap.js';

const pairs = (args: string[], flag: string): string[] =>
  args.flatMap((arg, i) => (arg === flag ? [args[i + 1] ?? ''] : []));

describe('bubblewrap confinement flags', () => {
  it("never binds the host's terminals; in the shared view, the agent's own devpts and scratch space", () => {
    const alone = bubblewrapConfinementArgs({ workspaceRoot: '/srv/ws' });
    expect(pairs(alone, '--dev-bind')).not.toContain('/dev/pts');
    expect(pairs(alone, '--dev-bind')).not.toContain('/dev/ptmx');
    expect(pairs(alone, '--tmpfs')).toEqual(expect.arrayContaining(['/tmp', '/run', '/dev/shm']));
    // In the agent's view /dev/pts is a devpts instance of the sandbox's own (agent-view.ts).
    const shared = bubblewrapConfinementArgs({ workspaceRoot: '/workspace', sharedView: true });
    expect(pairs(shared, '--dev-bind')).toContain('/dev/pts');
    expect(shared.join(' ')).toContain('--symlink pts/ptmx /dev/ptmx');
    expect(pairs(shared, '--bind')).toEqual(expect.arrayContaining(['/tmp', '/run', '/dev/shm']));
    expect(pairs(shared, '--tmpfs')).not.toContain('/tmp');
    // The agent's code, bound in its view under /run, is covered for user code.
    expect(pairs(shared, '--tmpfs')).toContain('/run/sbx-agent');
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

  it('builds the root from the host’s entries, read-only, with the workspace where the agent sees it', () => {
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
    // An agent started alone sees the workspace at its host path, and so do its processes.
    expect(args.join(' ')).toContain('--bind /srv/data/ws-1 /srv/data/ws-1');
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
