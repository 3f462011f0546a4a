// Stands in for the agents inside the fake cluster's pods: one real HTTP server on port 0
// answering `/agents/<name>/healthz` the way the agent does — 200 naming its sandbox to a
// bearer signed with the key in the sandbox's Secret (as the pod would read it), 401 to any
// other token — but only while a pod of that sandbox runs in the fake API, and only when the
// pod lets the image's agent (uid and gid 1001) read the Secret's files. The provider is
// given `agentAddress` pointing here instead of the Service's cluster DNS name.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createVerifier, signingKeyFromBase64url } from '@sbx/tokens';
import type { AgentTarget } from '../../../src/providers/kubernetes/kube-settings.js';
import type { FakeKubeApi } from './fake-kube-api.js';
import type { KubeObject } from './fake-kube-store.js';

const HEALTH = /^\/agents\/([^/]+)\/healthz$/;
/** The image's agent reads its own files with its real ids, `sbx-agent` 1001:1001 (D22). */
const AGENT_ID = 1001;

interface PodSpecPart {
  securityContext?: { fsGroup?: number };
  volumes?: { name: string; secret?: { defaultMode?: number } }[];
}

/**
 * As kubelet writes a Secret volume: files owned by root, group the pod's fsGroup (root's
 * without one), mode `defaultMode` (0644 without one). Readable to uid and gid 1001?
 */
function agentReadsItsKey(pod: KubeObject): boolean {
  const spec = pod['spec'] as PodSpecPart;
  const mode = spec.volumes?.find((v) => v.name === 'keys')?.secret?.defaultMode ?? 0o644;
  const group = spec.securityContext?.fsGroup ?? 0;
  return group === AGENT_ID ? (mode & 0o040) !== 0 : (mode & 0o004) !== 0;
}

export class StandInAgent {
  /** Sandboxes (by resource name) whose agent never answers, as if it hung at start. */
  readonly silent = new Set<string>();
  readonly #server: Server;
  #url = '';

  private constructor(private readonly api: FakeKubeApi) {
    this.#server = createServer((req, res) => {
      const name = HEALTH.exec(req.url ?? '')?.[1];
      const status =
        name === undefined ? { code: 404, body: {} } : this.#health(name, req.headers.authorization);
      res.writeHead(status.code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(status.body));
    });
  }

  static async start(api: FakeKubeApi): Promise<StandInAgent> {
    const agent = new StandInAgent(api);
    agent.#server.listen(0, '127.0.0.1');
    await once(agent.#server, 'listening');
    agent.#url = `http://127.0.0.1:${(agent.#server.address() as AddressInfo).port}`;
    return agent;
  }

  /** The provider's `agentAddress`. */
  readonly address = (target: AgentTarget): string => `${this.#url}/agents/${target.name}`;

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    this.#server.close();
    await once(this.#server, 'close');
  }

  #health(name: string, authorization: string | undefined): { code: number; body: object } {
    const secret = this.api.store.get('core/secrets', name);
    const sandboxId = secret?.metadata.annotations?.['sbx.dev/sandbox-id'];
    const running = this.api.store
      .list('core/pods')
      .find(
        (pod) =>
          pod.metadata.annotations?.['sbx.dev/sandbox-id'] === sandboxId &&
          (pod['status'] as { phase?: string } | undefined)?.phase === 'Running',
      );
    if (secret === undefined || sandboxId === undefined || running === undefined || this.silent.has(name))
      return { code: 503, body: { error: 'no agent' } };
    // The image's agent cannot read a key its own ids may not: it would never become healthy.
    if (!agentReadsItsKey(running)) return { code: 503, body: { error: 'the agent cannot read its key' } };
    const data = secret['data'] as Record<string, string>;
    const record = JSON.parse(secret.metadata.annotations?.['sbx.dev/record'] ?? '{}') as {
      tokenIssuer: string;
    };
    const key = signingKeyFromBase64url(Buffer.from(data['agent.key'] ?? '', 'base64').toString('utf8'));
    try {
      createVerifier({
        keys: key,
        issuer: record.tokenIssuer,
        audience: sandboxId,
        maxTtlSeconds: 3600,
      }).verify((authorization ?? '').replace(/^Bearer /, ''));
      return { code: 200, body: { sandbox_id: sandboxId } };
    } catch {
      return { code: 401, body: { error: 'unauthorized' } };
    }
  }
}
