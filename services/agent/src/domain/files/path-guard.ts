import type { BigIntStats } from 'node:fs';
import { lstat, mkdir, readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { SbxError, type ErrorCode } from '@sbx/protocol';
import { errnoOf, fsError } from './fs-errors.js';
import { inheritOwner } from './ownership.js';
import { isWorkspaceRoot, type WorkspacePath } from './workspace-path.js';

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
 * operation. Paths are walked one component at a time from the (symlink-free) root:
 * a symlink is followed only after `realpath` proves its target inside the workspace,
 * so links that leave it (final or intermediate, broken or looping) are refused before
 * anything is opened, created or removed. Openers re-check the opened descriptor.
 */
export class PathGuard {
  constructor(readonly root: string) {}

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
      const shown = `/${names.slice(0, index + 1).join('/')}`;
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

  /** A symlink's target: inside the workspace, or broken; anything leaving the workspace is refused. */
  async #checkLink(host: string, shown: string): Promise<LinkTarget> {
    let real: string;
    try {
      real = await realpath(host);
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'ELOOP') throw new SbxError('BAD_REQUEST', `${shown} is a symbolic link loop`);
      if (code !== 'ENOENT') throw fsError(err, shown);
      // Broken: judged by where it would point, so a dangling link out of the workspace is refused too.
      const lexical = path.resolve(path.dirname(host), await readlink(host));
      if (!this.contains(lexical)) throw outside(shown);
      return { kind: 'broken' };
    }
    if (!this.contains(real)) throw outside(shown);
    return { kind: 'inside', real };
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
