// A GET of an agent's JSON over node:http rather than fetch. fetch goes through undici's
// global dispatcher, which keeps a connection pool per origin for as long as the process
// lives (undici 6, Node 20: its Agent drops none until it is closed), and every sandbox's
// agent is an origin of its own (its port): the broker's heap grew by ~25 KiB for every
// sandbox it ever probed, 233 pools after 240 sandboxes, 5 MiB per 200 sessions
// (reliability/load). node:http's agent forgets an origin once it holds no socket for it.
import http from 'node:http';
import https from 'node:https';

export interface AgentAnswer {
  readonly status: number;
  /** The parsed body; undefined when it was not JSON. */
  readonly body: unknown;
}

/** A health answer is a few KiB; anything past this is not one. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** Rejects on a connection error, a body past the cap or no whole answer within `timeoutMs`. */
export function getAgentJson(
  url: string,
  headers: Readonly<Record<string, string>>,
  timeoutMs: number,
): Promise<AgentAnswer> {
  const target = new URL(url);
  const get = target.protocol === 'https:' ? https.get : http.get;
  return new Promise((resolve, reject) => {
    // One connection per probe (agent: false): probes are rare, and a kept socket is one more
    // thing to leave behind when the agent goes.
    const req = get(target, { headers, agent: false, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) req.destroy(new Error(`the answer of ${target.origin} is too large`));
        else chunks.push(chunk);
      });
      res.on('error', reject);
      res.on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
  });
}
