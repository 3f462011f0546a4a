// What runs "inside" a fake container: a real HTTP server answering `/healthz` like the agent does,
// verifying the bearer with the key the provider delivered into the container's key volume.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SigningKey, createVerifier } from '@sbx/tokens';

export type AgentBehaviour = 'healthy' | 'silent' | 'exits';

export interface FakeAgentSetup {
  readonly sandboxId: string;
  readonly issuer: string;
  /** Reads the key file now (a rotation is seen at the next request). */
  readonly readKey: () => string | undefined;
  readonly host: string;
  readonly port: number;
  readonly behaviour: AgentBehaviour;
}

function healthReport(sandboxId: string, bootId: string) {
  return {
    sandbox_id: sandboxId,
    boot_id: bootId,
    usage: { commands_run: 0, file_bytes_in: 0, file_bytes_out: 0 },
    activity: { processes: [], shells: [] },
  };
}

function answer(setup: FakeAgentSetup, bootId: string, authorization: string | undefined): [number, unknown] {
  if (setup.behaviour === 'silent') return [503, { status: 'starting' }];
  if (authorization === undefined) return [200, { status: 'ok' }];
  const text = setup.readKey();
  if (text === undefined) return [401, { error: 'no key' }];
  try {
    createVerifier({
      keys: SigningKey.fromBase64url(text),
      issuer: setup.issuer,
      audience: setup.sandboxId,
      maxTtlSeconds: 3600,
    }).verify(authorization.replace(/^Bearer /, ''));
    return [200, healthReport(setup.sandboxId, bootId)];
  } catch {
    return [401, { error: 'unauthorized' }];
  }
}

/** Listening on `host:port` (port 0: any); resolves with the port it got. */
export async function startFakeAgent(setup: FakeAgentSetup): Promise<{ server: http.Server; port: number }> {
  const bootId = randomUUID();
  const server = http.createServer((req, res) => {
    const [status, body] =
      req.url === '/healthz'
        ? answer(setup, bootId, req.headers.authorization)
        : [404, { error: 'not found' }];
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(setup.port, setup.host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}

export async function stopFakeAgent(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
