// One real sandbox (a real broker, a real bubblewrap agent) reached through a TCP proxy the
// test controls (tcp-proxy.ts), and the SDK's clients on both sides of it: `through` goes
// by the proxy, `direct` does not (to look at the sandbox while the proxy is down).
import {
  SandboxClient,
  type BrokerSession,
  type KeepAlive,
  type RetryPolicy,
  type Shell,
} from '../../packages/client/src/index.js';
import { startSharedSandbox, type SharedSandbox } from '../../packages/client/test/shared-sandbox.js';
import { eventually } from '../../packages/client/test/wait-for.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/** SBX_RELIABILITY=long: the suites' long forms (reliability/README.md). */
export const LONG = process.env['SBX_RELIABILITY'] === 'long';

/** Dead connections noticed within a second, so a partition costs the tests little time. */
export const KEEP_ALIVE: KeepAlive = { idleMs: 250, timeoutMs: 750 };
/** Reconnects keep trying for about 20 s while the proxy refuses: longer than any outage here. */
export const RETRY: RetryPolicy = { maxAttempts: 40, baseDelayMs: 50, maxDelayMs: 500 };

export interface ProxiedSandbox {
  readonly shared: SharedSandbox;
  readonly proxy: TcpProxy;
  /** Through the proxy: the human (shells, files) and the agent (exec). */
  readonly through: { readonly human: SandboxClient; readonly agent: SandboxClient };
  /** Straight to the agent. */
  readonly direct: { readonly human: SandboxClient; readonly agent: SandboxClient };
  close(): Promise<void>;
}

function throughProxy(session: BrokerSession, proxy: TcpProxy): SandboxClient {
  return new SandboxClient({
    httpBaseUrl: `http://127.0.0.1:${proxy.port}`,
    wsBaseUrl: `ws://127.0.0.1:${proxy.port}`,
    tokens: session.credentials,
    retry: RETRY,
    timeoutMs: 15_000,
    keepAlive: KEEP_ALIVE,
  });
}

export async function startProxiedSandbox(threadId: string, suffix: string): Promise<ProxiedSandbox> {
  const shared = await startSharedSandbox(threadId, suffix);
  const agentAt = new URL(shared.agentSession.endpoints.httpBaseUrl);
  const proxy = await startTcpProxy({ host: agentAt.hostname, port: Number(agentAt.port) });
  return {
    shared,
    proxy,
    through: {
      human: throughProxy(shared.humanSession, proxy),
      agent: throughProxy(shared.agentSession, proxy),
    },
    direct: { human: shared.human, agent: shared.agent },
    async close() {
      await proxy.close();
      await shared.close();
    },
  };
}

/** `prefix` + 1 … n, as a shell prints them. */
export function numbered(prefix: string, n: number, width = 0): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${String(i + 1).padStart(width, '0')}`);
}

const BEGIN = 'BEGIN-42';

/**
 * A shell that prints only what its commands print: no echo, no prompt, no line editing.
 * `lines()` are the complete lines it printed since, in order, exactly as the client got them.
 */
export async function quietShell(client: SandboxClient): Promise<{ shell: Shell; lines: () => string[] }> {
  const shell = await client.openShell();
  const lines: string[] = [];
  let begun = false;
  let pending = '';
  shell.onData((data) => {
    const parts = (pending + data.toString('utf8')).split('\n');
    pending = parts.pop() ?? '';
    for (const part of parts) {
      const line = part.endsWith('\r') ? part.slice(0, -1) : part;
      if (begun && line !== '') lines.push(line);
      // The marker may follow the escape sequence that ends bracketed paste, before line editing is off.
      else if (line.endsWith(BEGIN)) begun = true;
    }
  });
  shell.write(`stty -echo; set +o emacs +o vi; PS1=''; PS2=''; echo BEGIN-$((6*7))\n`);
  await eventually(() => begun, 'the quiet shell');
  return { shell, lines: () => lines };
}

/** Types each line as a command printing it. */
export function typeLines(shell: Shell, lines: readonly string[]): void {
  for (const line of lines) shell.write(`echo ${line}\n`);
}

/** Resolves once `lines()` ends with `last` (generous deadline: reconnects back off). */
export async function seen(lines: () => string[], last: string, timeoutMs = 60_000): Promise<void> {
  await eventually(() => lines().at(-1) === last, `the line ${last}`, timeoutMs);
}

/** The client noticed the drop: the shell has no connection (it is reattaching). */
export async function noticed(shell: Shell, timeoutMs = 20_000): Promise<void> {
  await eventually(() => shell.socket === undefined, 'the shell to notice the drop', timeoutMs);
}

/** Resolves once `path` exists in the sandbox (asked straight, not through the proxy). */
export async function fileAppears(client: SandboxClient, path: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await client.files.stat(path).then(
      () => true,
      () => false,
    );
    if (found) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${path}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
