import { startLocalKit } from './local-provider-kit.js';
import { runProviderContract } from './provider-contract.js';

runProviderContract('local (real agent processes)', async () => {
  const kit = await startLocalKit();
  return { provider: kit.provider, dispose: () => kit.dispose() };
});
