// One fake cluster (fake-kube-api.ts), stand-in agents (stand-in-agent.ts) and a
// KubernetesProvider pointed at both, for the provider's contract tests.
import { setTimeout as sleep } from 'node:timers/promises';
import { SigningKey } from '@sbx/tokens';
import {
  KubernetesProvider,
  type KubernetesProviderOptions,
} from '../../../src/providers/kubernetes/kubernetes-provider.js';
import type { SandboxSpec } from '../../../src/providers/provider.js';
import { captureLogger } from '../../support/broker-harness.js';
import { FakeKubeApi } from './fake-kube-api.js';
import type { KubeObject } from './fake-kube-store.js';
import { StandInAgent } from './stand-in-agent.js';

export const NAMESPACE = 'sbx-test';

export interface KubeKit {
  readonly api: FakeKubeApi;
  readonly agent: StandInAgent;
  readonly provider: KubernetesProvider;
  readonly exits: { readonly sandboxId: string; readonly code: number | null }[];
  readonly logLines: string[];
  dispose(): Promise<void>;
}

export async function startKubeKit(overrides: Partial<KubernetesProviderOptions> = {}): Promise<KubeKit> {
  const api = await FakeKubeApi.start();
  const agent = await StandInAgent.start(api);
  const exits: { sandboxId: string; code: number | null }[] = [];
  const logLines: string[] = [];
  const provider = await KubernetesProvider.open({
    logger: captureLogger(logLines),
    kubeConfig: api.kubeConfig(),
    namespace: NAMESPACE,
    agentAddress: agent.address,
    startTimeoutMs: 15_000,
    pollIntervalMs: 20,
    requestTimeoutMs: 2000,
    onAgentExit: (sandboxId, code) => exits.push({ sandboxId, code }),
    ...overrides,
  });
  return {
    api,
    agent,
    provider,
    exits,
    logLines,
    async dispose() {
      await provider.close();
      await agent.close();
      await api.close();
    },
  };
}

let counter = 0;

export function kubeSpec(overrides: Partial<SandboxSpec> = {}): SandboxSpec {
  counter += 1;
  return {
    sandboxId: `sb_kube_${process.pid}_${counter}`,
    tenantId: 'tenant_kube',
    signingKey: SigningKey.generate(),
    tokenIssuer: 'sbx-broker-test',
    network: 'on',
    ...overrides,
  };
}

/** Objects of `collection` in the fake cluster that belong to `sandboxId`. */
export function objectsOf(api: FakeKubeApi, collection: string, sandboxId: string): KubeObject[] {
  return api.store
    .list(collection)
    .filter((o) => o.metadata.annotations?.['sbx.dev/sandbox-id'] === sandboxId);
}

/** Polls `check` every 20 ms until it holds; fails after a generous ceiling. */
export async function eventually(check: () => boolean, what: string, ceilingMs = 10_000): Promise<void> {
  const deadline = Date.now() + ceilingMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export const decodeData = (object: KubeObject | undefined, key: string): string =>
  Buffer.from((object?.['data'] as Record<string, string> | undefined)?.[key] ?? '', 'base64').toString(
    'utf8',
  );
