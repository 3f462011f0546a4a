import type { BigIntStats } from 'node:fs';
import { lstat, mkdir, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import { SbxError, type ErrorCode } from '@sbx/protocol';
import { errnoOf, fsError } from './fs-errors.js';
import { inheritOwner } from './ownership.js';
import {
  belowRoot,
  displayOf,
  isWorkspaceRoot,
  namesOf,
  parseEncodedPath,
  parseWorkspacePath,
  type WorkspacePath,
} from './workspace-path.js';

/** Linux's own limit on symbolic links followed while resolving one path. */
const MAX_LINK_HOPS = 40;

/** Where a workspace path lives on the host, after every symlink on the way was checked. */
export interface ResolvedPath {
  readonly path: WorkspacePath;
  /** Inside the workspace; free of symlinks except the entry itself when it is one (entry mode). */
  readonly host: string;
  /** Symlink-free directory that holds `host`. */
  readonly dir: string;
  /** `host`'s last component (the link target's name when a final symlink was followed). */
  readonly name: string;
  /** `stat` of what `host` names (`lstat` in entry mode); undefined when nothing is there yet. */
  readonly stats: BigIntStats | undefined;
}

export interface ExistingPath extends ResolvedPath {
  readonly stats: BigIntStats;
}

interface WalkOptions {
  /** `follow`: a final symlink is resolved (reads, writes); `entry`: it is the subject (delete, move). */
  readonly final: 'follow' | 'entry';
  readonly createParents: boolean;
  /** What a broken final symlink is in follow mode: NOT_FOUND to a reader, CONFLICT to a writer. */
  readonly brokenFinal: ErrorCode;
}

type LinkTarget = { readonly kind: 'inside'; readonly real: string } | { readonly kind: 'broken' };

async function lstatOrUndefined(host: string, shown: string): Promise<BigIntStats | undefined> {
  try {
    return await lstat(host, { bigint: true });
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw fsError(err, shown);
  }
}

/**
 * The one gate between a workspace path and the host file system, used by every file
 * operation. `root` is where the workspace is on the agent's side, `sandboxRoot` where
 * processes of the sandbox see it (`/workspace` under bubblewrap). Paths are walked one
 * component at a time from the (symlink-free) root: a symlink is followed only after its
 * target, read as a process of the sandbox would read it, is proven inside the workspace,
 * so links that leave it (final or intermediate, broken or looping) are refused before
 * anything is opened, created or removed. Openers re-check the opened descriptor.
 */
export class PathGuard {
  constructor(
    readonly root: string,
    readonly sandboxRoot: string = root,
  ) {}

  /** A path given as text: absolute in the sandbox's terms, or relative to the workspace. */
  parse(text: string): WorkspacePath {
    return parseWorkspacePath(text, this.sandboxRoot);
  }

  /** The still-encoded tail of a `/files/<tail>` URL, relative to the workspace. */
  parseUrlTail(rawTail: string): WorkspacePath {
    return parseEncodedPath(rawTail, this.sandboxRoot);
  }

  /** The sandbox's name for a host path inside the workspace. */
  toSandbox(hostPath: string): string {
    if (!this.contains(hostPath)) throw new SbxError('INTERNAL', 'a resolved path left the workspace');
    return displayOf(this.sandboxRoot, namesOf(hostPath.slice(this.root.length)));
  }

  contains(hostPath: string): boolean {
    if (this.root === '/') return hostPath.startsWith('/');
    return hostPath === this.root || hostPath.startsWith(`${this.root}/`);
  }

  /** An existing file or directory to read, list or stat. */
  async resolveExisting(target: WorkspacePath): Promise<ExistingPath> {
    const resolved = await this.#walk(target, {
      final: 'follow',
      createParents: false,
      brokenFinal: 'NOT_FOUND',
    });
    if (resolved.stats === undefined) throw new SbxError('NOT_FOUND', `${target.display} does not exist`);
    return { ...resolved, stats: resolved.stats };
  }

  /** The entry itself, a symlink not followed (though still checked): delete and the source of a move. */
  async resolveEntry(target: WorkspacePath): Promise<ExistingPath> {
    if (isWorkspaceRoot(target)) {
      throw new SbxError('BAD_REQUEST', 'the workspace root itself cannot be moved or deleted');
    }
    const resolved = await this.#walk(target, {
      final: 'entry',
      createParents: false,
      brokenFinal: 'NOT_FOUND',
    });
    if (resolved.stats === undefined) throw new SbxError('NOT_FOUND', `${target.display} does not exist`);
    return { ...resolved, stats: resolved.stats };
  }

  /** Where a write lands (a final symlink inside the workspace is written through). */
  async resolveWriteTarget(target: WorkspacePath, createParents: boolean): Promise<ResolvedPath> {
    return this.#walk(target, { final: 'follow', createParents, brokenFinal: 'CONFLICT' });
  }

  /** The destination of a move or a new directory: the entry itself; its parent must exist unless created. */
  async resolveNewEntry(target: WorkspacePath, createParents = false): Promise<ResolvedPath> {
    if (isWorkspaceRoot(target)) throw new SbxError('CONFLICT', 'the workspace root already exists');
    return this.#walk(target, { final: 'entry', createParents, brokenFinal: 'CONFLICT' });
  }

  async #walk(target: WorkspacePath, options: WalkOptions): Promise<ResolvedPath> {
    let dir = this.root;
    const names = target.segments;
    if (names.length === 0) {
      const stats = await stat(this.root, { bigint: true });
      return {
        path: target,
        host: this.root,
        dir: path.dirname(this.root),
        name: path.basename(this.root),
        stats,
      };
    }
    for (const [index, name] of names.entries()) {
      const isLast = index === names.length - 1;
      const shown = displayOf(this.sandboxRoot, names.slice(0, index + 1));
      const host = path.join(dir, name);
      let stats = await lstatOrUndefined(host, shown);
      if (stats === undefined && !isLast && options.createParents)
        stats = await this.#makeParent(host, dir, shown);
      if (stats === undefined) {
        if (isLast) return { path: target, host, dir, name, stats: undefined };
        throw new SbxError('NOT_FOUND', `${shown} does not exist`);
      }
      if (stats.isSymbolicLink()) {
        const link = await this.#checkLink(host, shown);
        if (isLast && options.final === 'entry') return { path: target, host, dir, name, stats };
        if (link.kind === 'broken') {
          const code = isLast ? options.brokenFinal : 'NOT_FOUND';
          throw new SbxError(code, `${shown} is a broken symbolic link`);
        }
        const followed = await stat(link.real, { bigint: true }).catch((err: unknown) => {
          throw fsError(err, shown);
        });
        if (isLast) {
          const real = link.real;
          return {
            path: target,
            host: real,
            dir: path.dirname(real),
            name: path.basename(real),
            stats: followed,
          };
        }
        stats = followed;
        dir = link.real;
      } else if (isLast) {
        return { path: target, host, dir, name, stats };
      } else {
        dir = host;
      }
      if (!stats.isDirectory()) throw new SbxError('CONFLICT', `${shown} is not a directory`);
    }
    throw new SbxError('INTERNAL', 'path walk ended without a result');
  }

  /**
   * A symlink's target: inside the workspace, or broken; anything leaving it is refused.
   * Resolved by hand, not by `realpath`: an absolute target is a sandbox path (a link to
   * `/workspace/a` made inside the sandbox means the workspace's `a`, whatever the host has
   * at `/workspace`), and a relative one climbs no higher than the workspace root.
   */
  async #checkLink(host: string, shown: string): Promise<LinkTarget> {
    let dir = path.dirname(host);
    const pending = [path.basename(host)];
    let hops = 0;
    for (let name = pending.shift(); name !== undefined; name = pending.shift()) {
      if (name === '' || name === '.') continue;
      if (name === '..') {
        if (dir === this.root) throw outside(shown);
        dir = path.dirname(dir);
        continue;
      }
      const candidate = path.join(dir, name);
      const stats = await lstatOrUndefined(candidate, shown);
      if (stats === undefined) {
        // Broken: judged by where it would point, so a dangling link out of the workspace is refused too.
        if (!this.contains(path.resolve(candidate, ...pending))) throw outside(shown);
        return { kind: 'broken' };
      }
      if (stats.isSymbolicLink()) {
        hops += 1;
        if (hops > MAX_LINK_HOPS) throw new SbxError('BAD_REQUEST', `${shown} is a symbolic link loop`);
        const target = await readlink(candidate);
        if (target.startsWith('/')) {
          const below = belowRoot(this.sandboxRoot, namesOf(target));
          if (below === undefined) throw outside(shown);
          dir = this.root;
          pending.unshift(...below);
        } else {
          pending.unshift(...target.split('/'));
        }
        continue;
      }
      if (pending.length > 0 && !stats.isDirectory())
        throw new SbxError('CONFLICT', `a parent of ${shown} is not a directory`);
      dir = candidate;
    }
    return { kind: 'inside', real: dir };
  }

  async #makeParent(host: string, dir: string, shown: string): Promise<BigIntStats | undefined> {
    try {
      await mkdir(host);
      await inheritOwner(host, dir);
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw fsError(err, shown);
    }
    return lstatOrUndefined(host, shown);
  }
}

function outside(shown: string): SbxError {
  return new SbxError('FORBIDDEN', `${shown} is a symbolic link that leads outside the workspace`);
}
