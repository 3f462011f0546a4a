import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { bubblewrapConfinementArgs } from '@sbx/service-kit';
import { providerUnavailable } from './provider.js';

export type IsolationOption = 'auto' | 'bubblewrap' | 'none';
export type LocalIsolation = 'bubblewrap' | 'none';

/**
 * The agent launcher's own flags with the network namespace, around `true`: bwrap can be
 * installed yet unable to create namespaces (some containers), so "the binary exists"
 * proves nothing; running it once does.
 */
const probeArgs = (): string[] => [
  ...bubblewrapConfinementArgs({ workspaceRoot: tmpdir(), network: false }),
  '--new-session',
  '--',
  'true',
];

const PROBE_TIMEOUT_MS = 5000;

/** Resolves with an error message when bwrap cannot confine a process here, undefined when it can. */
function probeBubblewrap(bwrapPath: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(bwrapPath, probeArgs(), { timeout: PROBE_TIMEOUT_MS }, (err, _stdout, stderr) => {
      if (err === null) resolve(undefined);
      else resolve(`${err.message.split('\n')[0] ?? ''} ${stderr.trim()}`.trim());
    });
  });
}

export interface ResolvedIsolation {
  readonly isolation: LocalIsolation;
  /** Why bubblewrap is not used although `auto` would have preferred it. */
  readonly fallbackReason?: string;
}

/** `auto` takes bubblewrap when it works; `bubblewrap` refuses to go on without it. */
export async function resolveIsolation(
  option: IsolationOption,
  bwrapPath: string,
): Promise<ResolvedIsolation> {
  if (option === 'none') return { isolation: 'none' };
  const failure = await probeBubblewrap(bwrapPath);
  if (failure === undefined) return { isolation: 'bubblewrap' };
  if (option === 'bubblewrap')
    throw providerUnavailable(
      `bubblewrap isolation was required but ${bwrapPath} cannot confine processes here`,
      new Error(failure),
    );
  return { isolation: 'none', fallbackReason: failure };
}
