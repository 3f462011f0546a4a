// useBroker with the real local provider: sandboxes are real agents (bubblewrap or none)
// under a data directory of the file's own, removed with its mounts after the tests.
//
//   const broker = useLocalBroker(backend, { isolation: 'none', settings: { provisioningWaitMs: 20_000 } });
import { afterAll } from '@jest/globals';
import type { LocalProvider, LocalProviderOptions } from '../../src/providers/local-provider.js';
import { startLocalKit, type LocalKit } from '../providers/local-provider-kit.js';
import type { TestBackend } from './test-database.js';
import { useBroker, type BrokerFixture, type UseBrokerOptions } from './use-broker.js';

export interface UseLocalBrokerOptions extends Omit<UseBrokerOptions<LocalProvider>, 'provider'> {
  readonly isolation: 'none' | 'bubblewrap';
  /** More of the local provider's options (the data directory is the fixture's own). */
  readonly local?: Partial<Omit<LocalProviderOptions, 'isolation' | 'onAgentExit'>>;
}

export function useLocalBroker(
  backend: TestBackend,
  setup: UseLocalBrokerOptions,
): BrokerFixture<LocalProvider> {
  let kit: LocalKit | undefined;
  const { isolation, local, ...options } = setup;
  const broker = useBroker<LocalProvider>(backend, {
    ...options,
    provider: async (onAgentExit) =>
      (kit = await startLocalKit({ ...local, isolation, onAgentExit })).provider,
  });
  afterAll(async () => {
    await kit?.dispose();
  });
  return broker;
}
