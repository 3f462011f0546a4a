import { access, constants } from 'node:fs/promises';
import { providerUnavailable } from './provider.js';
import { probeConfinement, type ProbeSetup } from './isolation-probe.js';

export type IsolationOption = 'auto' | 'bubblewrap' | 'none';
export type LocalIsolation = 'bubblewrap' | 'none';

export interface ResolvedIsolation {
  readonly isolation: LocalIsolation;
  /** Why bubblewrap is not used although `auto` would have preferred it. */
  readonly fallbackReason?: string;
  /** Under bubblewrap: whether sandboxes may have outbound network (slirp4netns works here). */
  readonly userNetwork: boolean;
  /** Why network-on sandboxes are refused, when they are. */
  readonly userNetworkReason?: string;
}

/**
 * `auto` takes bubblewrap when a probe proves, from inside a sandbox, that it confines
 * (see isolation-probe.ts); `bubblewrap` refuses to go on otherwise. The user-mode
 * network is probed on its own: without it, sandboxes whose policy allows network are
 * refused rather than given the host's (docs/security.md).
 */
export async function resolveIsolation(
  option: IsolationOption,
  setup: ProbeSetup,
): Promise<ResolvedIsolation> {
  if (option === 'none') return { isolation: 'none', userNetwork: false };
  const failure = await probeConfinement(setup, false);
  if (failure !== undefined) {
    if (option === 'bubblewrap')
      throw providerUnavailable(
        `bubblewrap isolation was required but ${setup.bwrapPath} cannot confine processes here`,
        new Error(failure),
      );
    return { isolation: 'none', fallbackReason: failure, userNetwork: false };
  }
  const missing = await access(setup.slirp4netnsPath, constants.X_OK).then(
    () => undefined,
    () => `${setup.slirp4netnsPath} is not installed`,
  );
  const networkFailure = missing ?? (await probeConfinement(setup, true));
  return networkFailure === undefined
    ? { isolation: 'bubblewrap', userNetwork: true }
    : { isolation: 'bubblewrap', userNetwork: false, userNetworkReason: networkFailure };
}
