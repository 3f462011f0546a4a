// HTTP through the relay to a real agent (local provider, isolation none): answers, bytes,
// ranges and refusals pass through unchanged; the caller's own credential never reaches the
// agent; an agent that cannot be reached is a 502 in the broker's error envelope.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SigningKey } from '@sbx/tokens';
import { startLocalKit, tokenFor, type LocalKit } from '../providers/local-provider-kit.js';
import {
  closedPort,
  lastOutcome,
  startRelayServer,
  startSandbox,
  type RelayServer,
  type Sandbox,
} from './relay-harness.js';

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

describe('relayHttp: a real agent behind the relay', () => {
  let kit: LocalKit;
  let sandbox: Sandbox;
  let relay: RelayServer;
  /** A token that would fail on the agent: signed with another key. */
  let foreignToken: string;

  beforeAll(async () => {
    kit = await startLocalKit({ isolation: 'none' });
    sandbox = await startSandbox(kit);
    relay = await startRelayServer(sandbox.target(['fs:rw']));
    foreignToken = tokenFor(sandbox.spec, ['fs:rw'], SigningKey.generate());
  }, 120_000);

  afterAll(async () => {
    await relay.close();
    await kit.dispose();
  });

  it("answers GET /v1/info with the agent's JSON, whatever Authorization the caller sent", async () => {
    // Passed through, this token would be refused (401): the relay puts its own in its place.
    const response = await fetch(`${relay.httpUrl}/dp/v1/info`, {
      headers: { authorization: `Bearer ${foreignToken}`, cookie: 'session=broker-cookie' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
    expect(await response.json()).toMatchObject({ sandbox_id: sandbox.spec.sandboxId });
    const direct = await fetch(`${sandbox.dataplane.httpBaseUrl}/v1/info`, {
      headers: { authorization: `Bearer ${foreignToken}` },
    });
    expect(direct.status).toBe(401);
    expect(await lastOutcome(relay)).toMatchObject({ kind: 'http', status: 200, bytesIn: 0 });
  });

  it('round-trips 5 MiB of random bytes: upload, then download, exactly', async () => {
    const bytes = randomBytes(5 * 1024 * 1024);
    const upload = await fetch(`${relay.httpUrl}/dp/v1/files/upload?path=blob.bin`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: bytes,
    });
    expect(upload.status).toBe(201);
    expect(await lastOutcome(relay)).toMatchObject({ status: 201, bytesIn: bytes.length });

    const download = await fetch(`${relay.httpUrl}/dp/files/blob.bin`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-length')).toBe(String(bytes.length));
    const received = new Uint8Array(await download.arrayBuffer());
    expect(received.length).toBe(bytes.length);
    expect(sha256(received)).toBe(sha256(bytes));
    expect(await lastOutcome(relay)).toMatchObject({ status: 200, bytesOut: bytes.length });

    // A Range request is the agent's to answer: 206 and exactly the bytes asked for.
    const range = await fetch(`${relay.httpUrl}/dp/files/blob.bin`, {
      headers: { range: 'bytes=1000-1999' },
    });
    expect(range.status).toBe(206);
    expect(range.headers.get('content-range')).toBe(`bytes 1000-1999/${bytes.length}`);
    expect(Buffer.from(await range.arrayBuffer()).equals(bytes.subarray(1000, 2000))).toBe(true);

    // So are conditional requests: the ETag the agent gave makes If-None-Match a 304.
    const etag = download.headers.get('etag') ?? '';
    const unchanged = await fetch(`${relay.httpUrl}/dp/files/blob.bin`, {
      headers: { 'if-none-match': etag },
    });
    expect(unchanged.status).toBe(304);
  });

  it("passes the agent's 403 through, body and all, when the broker's token lacks the scope", async () => {
    relay.target = sandbox.target(['fs:ro']);
    try {
      const response = await fetch(`${relay.httpUrl}/dp/v1/files/upload?path=denied.txt`, {
        method: 'POST',
        body: 'no',
      });
      expect(response.status).toBe(403);
      const body = (await response.json()) as { error: { code: string } };
      expect(body.error.code).toBe('CAPABILITY_DENIED');
      expect(await lastOutcome(relay)).toMatchObject({ status: 403 });
    } finally {
      relay.target = sandbox.target(['fs:rw']);
    }
  });

  it('answers 502 in the error envelope when the agent cannot be reached', async () => {
    const port = await closedPort();
    const saved = relay.target;
    relay.target = { ...saved, httpBaseUrl: `http://127.0.0.1:${port}` };
    try {
      const response = await fetch(`${relay.httpUrl}/dp/v1/info`);
      expect(response.status).toBe(502);
      const body = (await response.json()) as { error: Record<string, unknown> };
      expect(body.error).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', retryable: true });
      expect(body.error['request_id']).toBe(response.headers.get('x-request-id'));
      expect(JSON.stringify(body)).not.toContain(saved.token);
      expect(await lastOutcome(relay)).toMatchObject({ status: 502, failure: 'unreachable' });
    } finally {
      relay.target = saved;
    }
  });
});
