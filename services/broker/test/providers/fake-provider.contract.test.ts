import { FakeProvider } from '../../src/providers/fake-provider.js';
import { runProviderContract } from './provider-contract.js';

runProviderContract('fake', async () => {
  const provider = new FakeProvider({ delays: { create: 5, start: 5 } });
  return { provider, dispose: () => provider.close() };
});
