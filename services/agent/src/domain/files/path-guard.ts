import type { BigIntStats } from 'node:fs';
import { realpathSync, statSync } from 'node:fs';
import { lstat, mkdir, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import { SbxError, type ErrorCode } from '@sbx/protocol';
import { errnoOf, fsError } from './fs-errors.js';
import {
  displayOf,
  isFilesystemRoot,
  namesOf,
  parseEncodedPath,
  parseSandboxPath,
  type SandboxPath,
} from './sandbox-path.js';

/** Linux's own limit on symbolic links followed while resolving one path. */
const MAX_LINK_HOPS = 40;

/** Where a sandbox path leads, after every symlink on the way was checked. */
export interface ResolvedPath {
  readonly path: SandboxPath;
  /** Free of symlinks except the entry itself when it is one (entry mode); never a refused path. */
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

/** Kernel interfaces: the agent's own `/proc` is not the sandbox's (it lives in the host's pid namespace). */
const KERNEL_PATHS = ['/proc'];

/** A private path by the name the walk will meet it under (a symlinked name resolved). */
function realPathOf(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

function deviceOf(dir: string): bigint | undefined {
  try {
    return statSync(dir, { bigint: true }).dev;
  } catch {
    return undefined;
  }
}

async function lstatOrUndefined(host: string, shown: string): Promise<BigIntStats | undefined> {
  try {
    return await lstat(host, { bigint: true });
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw fsError(err, shown);
  }
}

/**
 * The one gate between a path of the sandbox and the filesystem, used by every file
 * operation. The agent sees the sandbox's own filesystem as the sandbox's user
 * (docs/architecture.md D21), so the kernel's permissions decide what may be read or
 * written; the guard keeps what is the agent's own out of reach: `/proc` (the agent's
 * own processes, memory and descriptors, not the sandbox's) and `privatePaths` (its
 * code). Paths are walked one component at a time from `/`: a symlink is followed only
 * after its target, read as a process of the sandbox would read it, is proven not to
 * lead there (final or intermediate, broken or looping), and openers re-check the
 * opened descriptor, so a swap in the middle cannot redirect an operation either.
 */
export class PathGuard {
  readonly root = '/';
  readonly #refusedPaths: readonly string[];
  readonly #kernelDevices: ReadonlySet<bigint>;

  constructor(
    /** Where relative paths start, and every process's HOME: absolute and symlink-free. */
    readonly workspace: string,
    privatePaths: readonly string[] = [],
  ) {
    this.#refusedPaths = [...KERNEL_PATHS, ...privatePaths.map(realPathOf)];
    this.#kernelDevices = new Set(
      KERNEL_PATHS.map(deviceOf).filter((dev): dev is bigint => dev !== undefined),
    );
  }

  /** A path given as text: absolute in the sandbox's terms, or relative to the workspace. */
  parse(text: string): SandboxPath {
    return parseSandboxPath(text, this.workspace);
  }

  /** The still-encoded tail of a `/files/<tail>` URL, relative to the workspace. */
  parseUrlTail(rawTail: string): SandboxPath {
    return parseEncodedPath(rawTail, this.workspace);
  }

  /** Whether the file API may reach `hostPath` (absolute, as the agent sees it). */
  contains(hostPath: string): boolean {
    return !this.#refusedPaths.some((p) => hostPath === p || hostPath.startsWith(`${p}/`));
  }

  /** Whether moving or deleting `hostPath` would carry a refused path along with it. */
  holdsRefused(hostPath: string): boolean {
    return this.#refusedPaths.some((p) => hostPath === '/' || p.startsWith(`${hostPath}/`));
  }

  /** Whether stats describe something on a kernel filesystem (`/proc` reached by any name). */
  isKernelFile(stats: { readonly dev: bigint | number }): boolean {
    return this.#kernelDevices.has(BigInt(stats.dev));
  }

  /** An existing file or directory to read, list or stat. */
  async resolveExisting(target: SandboxPath): Promise<ExistingPath> {
    const resolved = await this.#walk(target, {
      final: 'follow',
      createParents: false,
      brokenFinal: 'NOT_FOUND',
    });
    if (resolved.stats === undefined) throw new SbxError('NOT_FOUND', `${target.display} does not exist`);
    return { ...resolved, stats: resolved.stats };
  }

  /** The entry itself, a symlink not followed (though still checked): delete and the source of a move. */
  async resolveEntry(target: SandboxPath): Promise<ExistingPath> {
    if (isFilesystemRoot(target) || target.display === this.workspace) {
      throw new SbxError('BAD_REQUEST', `${target.display} itself cannot be moved or deleted`);
    }
    const resolved = await this.#walk(target, {
      final: 'entry',
      createParents: false,
      brokenFinal: 'NOT_FOUND',
    });
    if (resolved.stats === undefined) throw new SbxError('NOT_FOUND', `${target.display} does not exist`);
    if (this.holdsRefused(resolved.host)) throw refused(target.display);
    return { ...resolved, stats: resolved.stats };
  }

  /** Where a write lands (a final symlink inside the workspace is written through). */
  async resolveWriteTarget(target: SandboxPath, createParents: boolean): Promise<ResolvedPath> {
    return this.#walk(target, { final: 'follow', createParents, brokenFinal: 'CONFLICT' });
  }

  /** The destination of a move or a new directory: the entry itself; its parent must exist unless created. */
  async resolveNewEntry(target: SandboxPath, createParents = false): Promise<ResolvedPath> {
    if (isFilesystemRoot(target)) throw new SbxError('CONFLICT', '/ already exists');
    return this.#walk(target, { final: 'entry', createParents, brokenFinal: 'CONFLICT' });
  }

  async #walk(target: SandboxPath, options: WalkOptions): Promise<ResolvedPath> {
    const resolved = await this.#walkFrom(target, options);
    // Defence in depth: whatever name led there, nothing on a kernel filesystem is served.
    if (resolved.stats !== undefined && this.isKernelFile(resolved.stats)) throw refused(target.display);
    return resolved;
  }

  async #walkFrom(target: SandboxPath, options: WalkOptions): Promise<ResolvedPath> {
    let dir = this.root;
    const names = target.segments;
    if (names.length === 0) {
      const stats = await stat(this.root, { bigint: true });
      return { path: target, host: this.root, dir: this.root, name: '', stats };
    }
    for (const [index, name] of names.entries()) {
      const isLast = index === names.length - 1;
      const shown = displayOf(names.slice(0, index + 1));
      const host = path.join(dir, name);
      if (!this.contains(host)) throw refused(shown);
      let stats = await lstatOrUndefined(host, shown);
      if (stats === undefined && !isLast && options.createParents)
        stats = await this.#makeParent(host, shown);
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
   * A symlink's target: a path the API may reach, or broken; a link into a refused path
   * (`/proc`, the agent's own) is refused. Resolved by hand, not by `realpath`, so every
   * hop of a chain of links is checked before anything is opened.
   */
  async #checkLink(host: string, shown: string): Promise<LinkTarget> {
    let dir = path.dirname(host);
    const pending = [path.basename(host)];
    let hops = 0;
    for (let name = pending.shift(); name !== undefined; name = pending.shift()) {
      if (name === '' || name === '.') continue;
      if (name === '..') {
        dir = path.dirname(dir);
        continue;
      }
      const candidate = path.join(dir, name);
      if (!this.contains(candidate)) throw refused(shown);
      const stats = await lstatOrUndefined(candidate, shown);
      if (stats === undefined) {
        // Broken: judged by where it would point, so a dangling link into a refused path is refused too.
        if (!this.contains(path.resolve(candidate, ...pending))) throw refused(shown);
        return { kind: 'broken' };
      }
      if (stats.isSymbolicLink()) {
        hops += 1;
        if (hops > MAX_LINK_HOPS) throw new SbxError('BAD_REQUEST', `${shown} is a symbolic link loop`);
        const target = await readlink(candidate).catch((err: unknown) => {
          // EINVAL: no longer a symlink (a process swapped it since the lstat).
          if (errnoOf(err) === 'EINVAL' || errnoOf(err) === 'ENOENT')
            throw new SbxError('CONFLICT', `${shown} changed while it was being resolved; try again`);
          throw fsError(err, shown);
        });
        if (target.startsWith('/')) {
          dir = this.root;
          pending.unshift(...namesOf(target));
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

  async #makeParent(host: string, shown: string): Promise<BigIntStats | undefined> {
    try {
      await mkdir(host);
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw fsError(err, shown);
    }
    return lstatOrUndefined(host, shown);
  }
}

function refused(shown: string): SbxError {
  return new SbxError(
    'FORBIDDEN',
    `${shown} leads into /proc or the agent's own files, which the file API does not serve ` +
      `(the agent's /proc is not the sandbox's: read it with exec)`,
  );
}
