// useBroker with the real local provider: sandboxes are real agents (bubblewrap or none)
// under a data directory of the file's own, removed with its mounts after the tests.
//
//   const broker = useLocalBroker(backend, { isolation: 'none', settings: { provisioningWaitMs: 20_000 } });
import { afterAll } from '@jest/globals';
import type { LocalProvider, LocalProviderOptions } from '../../src/providers/local-provider.js';
import { startLocalKit, type LocalKit } from '../providers/local-provider-kit.js';
import type { TestBackend } from './test-database.js';
import { useBroker, type BrokerFixture, type BrokerSetup, type UseBrokerOptions } from './use-broker.js';

export interface UseLocalBrokerOptions extends Omit<UseBrokerOptions<LocalProvider>, 'provider'> {
  readonly isolation: 'none' | 'bubblewrap';
  /** More of the local provider's options (the data directory is the fixture's own). */
  readonly local?: Partial<Omit<LocalProviderOptions, 'isolation' | 'onAgentExit'>>;
}

export function useLocalBroker(
  backend: TestBackend,
  setup: BrokerSetup<UseLocalBrokerOptions>,
): BrokerFixture<LocalProvider> {
  let kit: LocalKit | undefined;
  // A function is read when the broker starts (after the file's earlier beforeAll hooks).
  const broker = useBroker<LocalProvider>(backend, () => {
    const { isolation, local, ...options } = typeof setup === 'function' ? setup() : setup;
    return {
      ...options,
      provider: async (onAgentExit) =>
        (kit = await startLocalKit({ ...local, isolation, onAgentExit })).provider,
    };
  });
  afterAll(async () => {
    await kit?.dispose();
  });
  return broker;
}
