// One JSON POST to an agent over kept-alive connections (node:http rather than fetch:
// undici's per-request machinery cost about as much broker CPU as the rest of an
// execute_code call, bench/README.md "execute_code").
import http from 'node:http';
import https from 'node:https';

const agents = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: 256 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 256 }),
};

/** Answer body cap: a code result is at most ~300 KiB of output, JSON-escaped. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export interface JsonAnswer {
  readonly status: number;
  readonly text: string;
}

export function postJson(
  url: URL,
  headers: Readonly<Record<string, string>>,
  body: string,
  timeoutMs: number,
): Promise<JsonAnswer> {
  const secure = url.protocol === 'https:';
  const send = secure ? https.request : http.request;
  const payload = Buffer.from(body, 'utf8');
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: 'POST',
        agent: secure ? agents['https:'] : agents['http:'],
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(payload.length) },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) req.destroy(new Error('answer too large'));
          else chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}
