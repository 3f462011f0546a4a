// A FAKE Kubernetes API server for the provider's contract tests (no cluster here): a real
// HTTP server on port 0 serving the REST paths client-node calls — core/v1 pods, secrets,
// services and persistentvolumeclaims of a namespace, the agent-sandbox groups — with
// label-selected lists, a `?watch=true` pod stream, optimistic concurrency on replace, and
// injected failures. It also plays kubelet (init containers complete or fail, then pods go
// Running, or fail, or hang in Pending) and the agent-sandbox controller (a Sandbox at 1 replica gets a pod from its template).
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { FakeKubeStore, statusBody, type KubeObject, type StoreEvent } from './fake-kube-store.js';

/** `init-fails`: the pod's first init container ends with an error, so the pod fails. */
export type KubeletMode = 'run' | 'pending' | 'fail' | 'init-fails';

interface Failure {
  readonly method: string;
  readonly pathPart: string;
  readonly status: number | 'hang';
}

export interface LoggedRequest {
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
}

const CORE = /^\/api\/v1\/namespaces\/([^/]+)\/(pods|secrets|services|persistentvolumeclaims)(?:\/([^/]+))?$/;
const CUSTOM = /^\/apis\/([^/]+)\/([^/]+)\/namespaces\/([^/]+)\/([^/]+)(?:\/([^/]+))?$/;

export class FakeKubeApi {
  readonly store = new FakeKubeStore();
  readonly requests: LoggedRequest[] = [];
  kubelet: KubeletMode = 'run';
  readonly #server: Server;
  readonly #failures: Failure[] = [];
  readonly #watchers = new Set<{ res: ServerResponse; selector: string | null }>();
  readonly #hung = new Set<ServerResponse>();
  #url = '';

  private constructor() {
    this.#server = createServer((req, res) => void this.#handle(req, res));
    this.store.onEvent((event) => this.#broadcast(event));
    this.store.onEvent((event) => this.#actAsController(event));
  }

  static async start(): Promise<FakeKubeApi> {
    const api = new FakeKubeApi();
    api.#server.listen(0, '127.0.0.1');
    await once(api.#server, 'listening');
    api.#url = `http://127.0.0.1:${(api.#server.address() as AddressInfo).port}`;
    return api;
  }

  kubeConfig(): KubeConfig {
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'fake', server: this.#url, skipTLSVerify: true }],
      users: [{ name: 'broker', token: 'fake-service-account-token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'broker' }],
      currentContext: 'fake',
    });
    return config;
  }

  /** The next request whose method matches and whose path contains `pathPart` gets `status` (or never an answer). */
  failNext(method: string, pathPart: string, status: number | 'hang'): void {
    this.#failures.push({ method, pathPart, status });
  }

  /** Ends every watch stream, as an API server does at its timeout or restart. */
  dropWatches(): void {
    for (const { res } of this.#watchers) res.end();
  }

  get watcherCount(): number {
    return this.#watchers.size;
  }

  /** Bodies sent with `method` to paths containing `pathPart`, oldest first. */
  sent(method: string, pathPart: string): unknown[] {
    return this.requests.filter((r) => r.method === method && r.path.includes(pathPart)).map((r) => r.body);
  }

  async close(): Promise<void> {
    for (const { res } of this.#watchers) res.end();
    for (const res of this.#hung) res.destroy();
    this.#server.closeAllConnections();
    this.#server.close();
    await once(this.#server, 'close');
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.#url);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body: unknown = text === '' ? undefined : JSON.parse(text);
    const method = req.method ?? 'GET';
    this.requests.push({ method, path: url.pathname, body });
    const failure = this.#failures.findIndex((f) => f.method === method && url.pathname.includes(f.pathPart));
    if (failure >= 0) {
      const [injected] = this.#failures.splice(failure, 1);
      if (injected?.status === 'hang') return void this.#hung.add(res);
      return reply(res, injected?.status ?? 500, statusBody(injected?.status ?? 500, 'injected failure'));
    }
    const route = routeOf(url.pathname);
    if (route === undefined) return reply(res, 404, statusBody(404, `no route ${url.pathname}`));
    if (url.searchParams.get('watch') === 'true')
      return this.#watch(res, url.searchParams.get('labelSelector'));
    const { status, object } = this.store.apply(method, route, body, url.searchParams.get('labelSelector'));
    reply(res, status, object);
  }

  #watch(res: ServerResponse, selector: string | null): void {
    res.writeHead(200, { 'content-type': 'application/json' });
    const watcher = { res, selector };
    this.#watchers.add(watcher);
    res.on('close', () => this.#watchers.delete(watcher));
    for (const pod of this.store.list('core/pods', selector))
      res.write(`${JSON.stringify({ type: 'ADDED', object: pod })}\n`);
  }

  #broadcast(event: StoreEvent): void {
    if (event.collection !== 'core/pods') return;
    for (const { res, selector } of this.#watchers)
      if (FakeKubeStore.matches(event.object, selector))
        res.write(`${JSON.stringify({ type: event.type, object: event.object })}\n`);
  }

  #actAsController(event: StoreEvent): void {
    const name = event.object.metadata.name;
    if (event.collection === 'core/pods' && event.type === 'ADDED') {
      setImmediate(() => this.#kubeletRuns(name));
      return;
    }
    if (event.collection !== 'agents.x-k8s.io/sandboxes') return;
    const spec = event.object['spec'] as {
      replicas?: number;
      podTemplate: { metadata?: KubeObject['metadata']; spec: unknown };
    };
    const wantsPod = event.type !== 'DELETED' && (spec.replicas ?? 1) === 1;
    const hasPod = this.store.get('core/pods', name) !== undefined;
    if (wantsPod && !hasPod)
      this.store.put('core/pods', {
        metadata: { ...spec.podTemplate.metadata, name },
        spec: spec.podTemplate.spec,
      });
    if (!wantsPod && hasPod) this.store.remove('core/pods', name);
  }

  #kubeletRuns(name: string): void {
    const pod = this.store.get('core/pods', name);
    if (pod === undefined || this.kubelet === 'pending') return;
    const spec = pod['spec'] as { containers: { name: string }[]; initContainers?: { name: string }[] };
    const initFails = this.kubelet === 'init-fails';
    const running = this.kubelet === 'run';
    this.store.setStatus('core/pods', name, {
      phase: running ? 'Running' : 'Failed',
      podIP: '10.0.0.7',
      initContainerStatuses: (spec.initContainers ?? []).map((c, i) => ({
        name: c.name,
        state: !initFails
          ? { terminated: { exitCode: 0, reason: 'Completed' } }
          : i === 0
            ? { terminated: { exitCode: 1, reason: 'Error' } }
            : { waiting: { reason: 'PodInitializing' } },
      })),
      containerStatuses: spec.containers.map((c) => ({
        name: c.name,
        state: initFails
          ? { waiting: { reason: 'PodInitializing' } }
          : running
            ? { running: {} }
            : { terminated: { exitCode: 1, reason: 'Error' } },
      })),
    });
  }

  /** kubelet saw the agent container end (crash, OOM kill). */
  endPod(name: string, exitCode: number, reason = 'Error'): void {
    this.store.setStatus('core/pods', name, {
      phase: 'Failed',
      containerStatuses: [{ name: 'agent', state: { terminated: { exitCode, reason } } }],
    });
  }
}

function routeOf(path: string): { collection: string; name: string | undefined } | undefined {
  const core = CORE.exec(path);
  if (core !== null) return { collection: `core/${core[2] ?? ''}`, name: core[3] };
  const custom = CUSTOM.exec(path);
  if (custom !== null) return { collection: `${custom[1] ?? ''}/${custom[4] ?? ''}`, name: custom[5] };
  return undefined;
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
