// A FAKE of the Docker Engine API (no engine runs here): a real HTTP server on a unix socket in a
// temporary directory, answering just the endpoints the provider's dockerode calls use, as the
// engine documents them, and recording every request so tests assert on what the engine was asked.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import { packTar, unpackTar } from '../../../src/providers/docker/tar-archive.js';
import { EngineFault, FakeContainers } from './fake-docker-containers.js';

export interface EngineRequest {
  readonly method: string;
  /** Without the API version prefix and the query. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly body: Buffer;
}

type Reply = { status: number; json?: unknown; tar?: Buffer; text?: string };
type Route = (match: RegExpMatchArray, req: EngineRequest) => Promise<Reply> | Reply;

/** The engine's `label` filter: every `key` or `key=value` given must match. */
function hasLabels(labels: Record<string, string> | undefined, req: EngineRequest): boolean {
  const wanted = (JSON.parse(req.query.get('filters') ?? '{}') as { label?: string[] }).label ?? [];
  return wanted.every((w) => {
    const [key = '', value] = w.split('=');
    return value === undefined ? key in (labels ?? {}) : labels?.[key] === value;
  });
}

export class FakeDockerEngine {
  readonly requests: EngineRequest[] = [];
  readonly state = new FakeContainers();
  readonly #faults: { method: string; pattern: RegExp; status: number; message: string }[] = [];
  readonly #dir: string;
  readonly #server: http.Server;
  readonly #routes: [string, RegExp, Route][];

  private constructor(dir: string) {
    this.#dir = dir;
    this.#server = http.createServer((req, res) => void this.#handle(req, res));
    this.#routes = this.#table();
  }

  static async start(): Promise<FakeDockerEngine> {
    const engine = new FakeDockerEngine(mkdtempSync(path.join(tmpdir(), 'sbx-fake-docker-')));
    await new Promise<void>((resolve) => engine.#server.listen(engine.socketPath, resolve));
    return engine;
  }

  get socketPath(): string {
    return path.join(this.#dir, 'docker.sock');
  }

  get dockerHost(): string {
    return `unix://${this.socketPath}`;
  }

  /** The next request matching answers `status` with `message`, as a failing engine would. */
  failNext(method: string, pattern: RegExp, status: number, message: string): void {
    this.#faults.push({ method, pattern, status, message });
  }

  /** Requests of one kind, e.g. ('POST', /^\/containers\/create$/). */
  requestsTo(method: string, pattern: RegExp): EngineRequest[] {
    return this.requests.filter((r) => r.method === method && pattern.test(r.path));
  }

  /** The create bodies the engine received, in order. */
  createdContainers(): (Docker.ContainerCreateOptions & { name: string })[] {
    return this.requestsTo('POST', /^\/containers\/create$/).map((r) => ({
      ...(JSON.parse(r.body.toString()) as Docker.ContainerCreateOptions),
      name: r.query.get('name') ?? '',
    }));
  }

  async close(): Promise<void> {
    await this.state.closeAll();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    rmSync(this.#dir, { recursive: true, force: true });
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://docker');
    const request: EngineRequest = {
      method: req.method ?? 'GET',
      path: url.pathname.replace(/^\/v\d+\.\d+/, ''),
      query: url.searchParams,
      body: Buffer.concat(chunks),
    };
    this.requests.push(request);
    const reply: Reply = await this.#reply(request).catch((err: unknown): Reply =>
      err instanceof EngineFault
        ? { status: err.status, json: { message: err.message } }
        : { status: 500, json: { message: String(err) } },
    );
    if (reply.tar !== undefined)
      res.writeHead(reply.status, { 'content-type': 'application/x-tar' }).end(reply.tar);
    else if (reply.json !== undefined)
      res.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.json));
    else res.writeHead(reply.status, { 'content-type': 'text/plain' }).end(reply.text ?? '');
  }

  async #reply(request: EngineRequest): Promise<Reply> {
    const fault = this.#faults.findIndex((f) => f.method === request.method && f.pattern.test(request.path));
    if (fault !== -1) {
      const [removed] = this.#faults.splice(fault, 1);
      if (removed !== undefined) return { status: removed.status, json: { message: removed.message } };
    }
    for (const [method, pattern, route] of this.#routes) {
      const match = request.path.match(pattern);
      if (method === request.method && match !== null) return route(match, request);
    }
    return { status: 404, json: { message: `page not found: ${request.method} ${request.path}` } };
  }

  #table(): [string, RegExp, Route][] {
    const s = this.state;
    const body = (req: EngineRequest): unknown => JSON.parse(req.body.toString());
    const container = (m: RegExpMatchArray) => s.find(decodeURIComponent(m[1] ?? ''));
    return [
      ['GET', /^\/_ping$/, () => ({ status: 200, text: 'OK' })],
      [
        'GET',
        /^\/networks\/([^/]+)$/,
        (m) => {
          const network = s.networks.get(decodeURIComponent(m[1] ?? ''));
          return network === undefined
            ? { status: 404, json: { message: 'network not found' } }
            : { status: 200, json: network };
        },
      ],
      [
        'POST',
        /^\/networks\/create$/,
        (_m, req) => {
          const { Name, Internal } = body(req) as { Name: string; Internal?: boolean };
          s.networks.set(Name, { Id: `net-${Name}`, Name, Internal: Internal === true });
          return { status: 201, json: { Id: `net-${Name}`, Warning: '' } };
        },
      ],
      [
        'POST',
        /^\/containers\/create$/,
        (_m, req) => {
          const created = s.create(req.query.get('name') ?? '', body(req) as Docker.ContainerCreateOptions);
          return { status: 201, json: { Id: created.id, Warnings: [] } };
        },
      ],
      [
        'GET',
        /^\/containers\/json$/,
        (_m, req) => {
          const labelled = [...s.byId.values()].filter((c) => hasLabels(c.body.Labels, req));
          return {
            status: 200,
            json: labelled.map((c) => ({
              Id: c.id,
              Names: [`/${c.name}`],
              Labels: c.body.Labels ?? {},
              State: c.status,
            })),
          };
        },
      ],
      [
        'GET',
        /^\/volumes$/,
        (_m, req) => {
          const volumes = [...s.volumes.values()].filter((v) => hasLabels(v.labels, req));
          return {
            status: 200,
            json: { Volumes: volumes.map((v) => ({ Name: v.name, Labels: v.labels })), Warnings: [] },
          };
        },
      ],
      ['GET', /^\/containers\/([^/]+)\/json$/, (m) => ({ status: 200, json: s.inspect(container(m)) })],
      ['POST', /^\/containers\/([^/]+)\/start$/, async (m) => (await s.start(container(m)), { status: 204 })],
      ['POST', /^\/containers\/([^/]+)\/stop$/, async (m) => (await s.stop(container(m)), { status: 204 })],
      [
        'DELETE',
        /^\/containers\/([^/]+)$/,
        async (m, req) => (await s.remove(container(m), req.query.get('force') === 'true'), { status: 204 }),
      ],
      [
        'PUT',
        /^\/containers\/([^/]+)\/archive$/,
        (m, req) => {
          const volume = s.volumeAt(container(m), req.query.get('path') ?? '');
          for (const entry of unpackTar(req.body)) volume.files.set(entry.name, entry);
          return { status: 200 };
        },
      ],
      [
        'GET',
        /^\/containers\/([^/]+)\/archive$/,
        (m, req) => {
          const file = req.query.get('path') ?? '';
          const entry = s.fileOf(container(m), file);
          if (entry === undefined)
            return { status: 404, json: { message: `Could not find the file ${file}` } };
          return { status: 200, tar: packTar([{ ...entry, name: path.basename(file) }]) };
        },
      ],
      [
        'DELETE',
        /^\/volumes\/([^/]+)$/,
        (m) => (s.removeVolume(decodeURIComponent(m[1] ?? '')), { status: 204 }),
      ],
    ];
  }
}
