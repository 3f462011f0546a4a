// One sandbox shared by an agent and a human binding on one thread, over a real broker
// with real agents: what most SDK tests need (the agent runs processes and writes, the
// human watches and opens shells).
import { BrokerClient, BrokerSession, type SandboxClient } from '../src/index.js';
import { startRealBroker, type RealBroker } from './support.js';

export interface SharedSandbox {
  readonly real: RealBroker;
  readonly broker: BrokerClient;
  readonly agentSession: BrokerSession;
  readonly humanSession: BrokerSession;
  /** The agent binding's client: files and processes. */
  readonly agent: SandboxClient;
  /** The human binding's client on the same sandbox: files, watches and shells. */
  readonly human: SandboxClient;
  close(): Promise<void>;
}

export async function startSharedSandbox(threadId: string, actorSuffix: string): Promise<SharedSandbox> {
  const real = await startRealBroker();
  const broker = new BrokerClient({ baseUrl: real.harness.url, apiKey: real.apiKey });
  const scope = { type: 'thread', id: threadId } as const;
  const agentSession = await BrokerSession.ensure(broker, {
    scope,
    actor: { type: 'agent', id: `agt_${actorSuffix}` },
  });
  const humanSession = await BrokerSession.ensure(broker, {
    scope,
    actor: { type: 'human', id: `usr_${actorSuffix}` },
  });
  return {
    real,
    broker,
    agentSession,
    humanSession,
    agent: agentSession.sandbox(),
    human: humanSession.sandbox(),
    async close() {
      await humanSession.release().catch(() => undefined);
      await agentSession.release().catch(() => undefined);
      await real.close();
    },
  };
}
