// A Docker provider on a fake engine (fake-docker-engine.ts), with its log captured.
import net from 'node:net';
import { DockerProvider, type DockerProviderOptions } from '../../../src/providers/docker/docker-provider.js';
import { captureLogger } from '../local-provider-kit.js';
import { FakeDockerEngine } from './fake-docker-engine.js';

export interface DockerKit {
  readonly engine: FakeDockerEngine;
  readonly provider: DockerProvider;
  readonly logs: string[];
  /** Another provider on the same engine: a broker that restarted. */
  reopen(options?: Partial<DockerProviderOptions>): Promise<DockerProvider>;
  dispose(): Promise<void>;
}

export async function startDockerKit(options: Partial<DockerProviderOptions> = {}): Promise<DockerKit> {
  const engine = await FakeDockerEngine.start();
  const logs: string[] = [];
  const opened: DockerProvider[] = [];
  const open = async (more: Partial<DockerProviderOptions>) => {
    const provider = await DockerProvider.open({
      logger: captureLogger(logs),
      dockerHost: engine.dockerHost,
      image: 'sbx-agent:test',
      agentAddress: 'published',
      startTimeoutMs: 10_000,
      stopGraceSeconds: 1,
      ...options,
      ...more,
    });
    opened.push(provider);
    return provider;
  };
  const provider = await open({});
  return {
    engine,
    provider,
    logs,
    reopen: open,
    async dispose() {
      await Promise.all(opened.map((p) => p.close()));
      await engine.close();
    },
  };
}

/** A port free on loopback now, for the agent port of "container" addressing. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
