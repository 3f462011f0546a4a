import { afterAll, beforeAll } from '@jest/globals';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';

export interface ShellAgent {
  readonly agent: TestAgent;
  /** The shell endpoint, `/v1/shell/ws`. */
  readonly url: string;
}

/** One agent serving shells for the tests of the calling file, started before and closed after them. */
export function useShellAgent(): ShellAgent {
  let started: TestAgent | undefined;
  beforeAll(async () => {
    started = await startTestAgent({ features: (ctx) => [shellsFeature(ctx)] });
  });
  afterAll(async () => {
    await started?.close();
  });
  const agent = (): TestAgent => {
    if (started === undefined) throw new Error('the shell agent is used before beforeAll started it');
    return started;
  };
  return {
    get agent() {
      return agent();
    },
    get url() {
      return `${agent().wsUrl}/v1/shell/ws`;
    },
  };
}
