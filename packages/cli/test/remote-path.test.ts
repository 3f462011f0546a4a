// `<thread>:<path>`: a sandbox path, as the sandbox's own processes read it (relative to the
// workspace, or absolute anywhere in the sandbox); and the absolute form the agent's answers use.
import { describe, expect, it } from '@jest/globals';
import { absoluteRemote, joinRemote, parseRemotePath, requireRemotePath } from '../src/remote-path.js';
import { UsageError } from '../src/exit-codes.js';

describe('parseRemotePath', () => {
  it('keeps a relative path relative: it lands in the workspace', () => {
    expect(parseRemotePath('t1:a')).toEqual({ thread: 't1', path: 'a' });
    expect(parseRemotePath('t1:src/main.py')).toEqual({ thread: 't1', path: 'src/main.py' });
    expect(parseRemotePath('t1:dir/')).toEqual({ thread: 't1', path: 'dir/' });
  });

  it('`thread:` alone is the workspace itself', () => {
    expect(parseRemotePath('t1:')).toEqual({ thread: 't1', path: '.' });
  });

  it('keeps an absolute path as written, in the workspace or anywhere in the sandbox', () => {
    expect(parseRemotePath('t1:/workspace/x')).toEqual({ thread: 't1', path: '/workspace/x' });
    expect(parseRemotePath('t1:/tmp/f')).toEqual({ thread: 't1', path: '/tmp/f' });
    expect(parseRemotePath('t1:/etc/passwd')).toEqual({ thread: 't1', path: '/etc/passwd' });
  });

  it('a slash before the colon, or no colon, is a local path (as scp)', () => {
    expect(parseRemotePath('./x:y')).toBeUndefined();
    expect(parseRemotePath('/tmp/a:b')).toBeUndefined();
    expect(parseRemotePath('plain')).toBeUndefined();
    expect(parseRemotePath(':a')).toBeUndefined();
  });

  it('usage errors show the relative form', () => {
    expect(() => requireRemotePath('cat', 'local.txt')).toThrow(UsageError);
    expect(() => requireRemotePath('cat', undefined)).toThrow(/e\.g\. thr_1:src\/main\.py$/);
  });
});

describe('joinRemote', () => {
  it('puts a name in a directory given either way', () => {
    expect(joinRemote('.', 'a.txt')).toBe('a.txt');
    expect(joinRemote('./', 'a.txt')).toBe('a.txt');
    expect(joinRemote('dir', 'a.txt')).toBe('dir/a.txt');
    expect(joinRemote('dir//', 'a.txt')).toBe('dir/a.txt');
    expect(joinRemote('/workspace', 'a.txt')).toBe('/workspace/a.txt');
    expect(joinRemote('/workspace/', 'a.txt')).toBe('/workspace/a.txt');
  });
});

describe('absoluteRemote', () => {
  it('resolves a relative path against the workspace, as the agent answers it', () => {
    expect(absoluteRemote('/workspace', '.')).toBe('/workspace');
    expect(absoluteRemote('/workspace', './')).toBe('/workspace');
    expect(absoluteRemote('/workspace', 'proj')).toBe('/workspace/proj');
    expect(absoluteRemote('/workspace', './proj//sub/')).toBe('/workspace/proj/sub');
    // LOCAL_ISOLATION=none: the workspace is a host path.
    expect(absoluteRemote('/var/lib/sbx/sb_1/workspace', 'proj')).toBe('/var/lib/sbx/sb_1/workspace/proj');
  });

  it('tidies an absolute path without moving it, and leaves `..` for the agent to refuse', () => {
    expect(absoluteRemote('/workspace', '/workspace/proj/')).toBe('/workspace/proj');
    expect(absoluteRemote('/workspace', '/workspace/./proj')).toBe('/workspace/proj');
    expect(absoluteRemote('/workspace', '/etc')).toBe('/etc');
    expect(absoluteRemote('/workspace', 'a/../b')).toBe('/workspace/a/../b');
  });
});
