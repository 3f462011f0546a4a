import { runProviderContract } from '../provider-contract.js';
import { startDockerKit } from './docker-kit.js';

// The behaviour every provider shares, against a fake of the Docker engine whose containers'
// agents are real HTTP servers checking the delivered key.
runProviderContract('contract: docker (fake engine)', async () => {
  const kit = await startDockerKit();
  return { provider: kit.provider, dispose: () => kit.dispose() };
});
