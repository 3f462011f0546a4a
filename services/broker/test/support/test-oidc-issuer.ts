// A small OIDC issuer for tests: a real HTTP server on 127.0.0.1:0 serving
// discovery and a JWKS of RS256 and ES256 keys made with node:crypto, signing
// access tokens with them. It counts JWKS requests, can publish, rotate and
// withdraw keys, and can make its JWKS endpoint fail. More endpoints (the RFC
// 8628 device flow, /token) plug in with addRoute and discoveryExtras.
import { createHmac, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type TestAlgorithm = 'RS256' | 'ES256';

export interface TestKey {
  readonly kid: string;
  readonly alg: TestAlgorithm;
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
}

export interface SignOptions {
  /** The key to sign with; default the first published key of `alg` (default RS256). */
  readonly key?: TestKey;
  readonly alg?: TestAlgorithm;
  /** Header fields added to or replacing alg/kid/typ (a kid naming another key, say). */
  readonly header?: Record<string, unknown>;
}

export type RouteHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface TestOidcIssuer {
  readonly issuer: string;
  readonly jwksUri: string;
  readonly audience: string;
  /** JWKS requests served so far (failed ones included). */
  readonly jwksRequests: number;
  /** The first published key of `alg` (what `sign` uses by default). */
  key(alg: TestAlgorithm): TestKey;
  /** Creates a key (RSA: 2048 bits unless told); published in the JWKS unless `publish` is false. */
  addKey(alg: TestAlgorithm, options?: { publish?: boolean; modulusLength?: number }): TestKey;
  publish(key: TestKey): void;
  withdraw(key: TestKey): void;
  /** A signed access token: iss, aud, sub, iat and exp (+5 min) by default; a claim set to undefined is left out. */
  sign(claims?: Record<string, unknown>, options?: SignOptions): string;
  /** Answer JWKS requests with this HTTP status (undefined: serve the keys again). */
  failJwks(status: number | undefined): void;
  addRoute(method: string, path: string, handler: RouteHandler): void;
  /** Extra fields of the discovery document (device_authorization_endpoint …). */
  readonly discoveryExtras: Record<string, unknown>;
  close(): Promise<void>;
}

function newKey(alg: TestAlgorithm, modulusLength = 2048): TestKey {
  const pair =
    alg === 'RS256'
      ? generateKeyPairSync('rsa', { modulusLength })
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { kid: `${alg.toLowerCase()}-${randomUUID()}`, alg, ...pair };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

const segment = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A compact JWS with any header; `sign` gets the signing input (tests build attack tokens with it). */
export function compactJws(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  signer: (input: Buffer) => Buffer,
): string {
  const input = `${segment(header)}.${segment(claims)}`;
  return `${input}.${signer(Buffer.from(input, 'ascii')).toString('base64url')}`;
}

export function signWithKey(key: TestKey, input: Buffer): Buffer {
  return key.alg === 'RS256'
    ? sign('sha256', input, key.privateKey)
    : sign('sha256', input, { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
}

/** HMAC with the PEM of a public key as the secret: the classic algorithm-confusion forgery. */
export function hmacWithPublicKey(key: TestKey, input: Buffer): Buffer {
  const pem = key.publicKey.export({ format: 'pem', type: 'spki' });
  return createHmac('sha256', pem).update(input).digest();
}

export async function startTestOidcIssuer(options: { audience?: string } = {}): Promise<TestOidcIssuer> {
  const keys: TestKey[] = [];
  const published = new Set<string>();
  const routes = new Map<string, RouteHandler>();
  const discoveryExtras: Record<string, unknown> = {};
  let jwksRequests = 0;
  let jwksFailure: number | undefined;

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const handler = routes.get(`${req.method} ${url.pathname}`);
    if (handler === undefined) json(res, 404, { error: 'not_found' });
    else handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}`;
  const jwksUri = `${issuer}/jwks.json`;
  const audience = options.audience ?? 'https://broker.test';

  const jwk = (key: TestKey) => ({
    ...key.publicKey.export({ format: 'jwk' }),
    kid: key.kid,
    alg: key.alg,
    use: 'sig',
  });
  routes.set('GET /.well-known/openid-configuration', (_req, res) =>
    json(res, 200, {
      issuer,
      jwks_uri: jwksUri,
      id_token_signing_alg_values_supported: ['RS256', 'ES256'],
      ...discoveryExtras,
    }),
  );
  routes.set('GET /jwks.json', (_req, res) => {
    jwksRequests += 1;
    if (jwksFailure !== undefined) json(res, jwksFailure, { error: 'unavailable' });
    else json(res, 200, { keys: keys.filter((k) => published.has(k.kid)).map(jwk) });
  });

  const defaultKey = (alg: TestAlgorithm): TestKey => {
    const key = keys.find((k) => k.alg === alg && published.has(k.kid));
    if (key === undefined) throw new Error(`the test issuer publishes no ${alg} key`);
    return key;
  };

  const self: TestOidcIssuer = {
    issuer,
    jwksUri,
    audience,
    get jwksRequests() {
      return jwksRequests;
    },
    key: defaultKey,
    addKey(alg, { publish = true, modulusLength } = {}) {
      const key = newKey(alg, modulusLength);
      keys.push(key);
      if (publish) published.add(key.kid);
      return key;
    },
    publish: (key) => void published.add(key.kid),
    withdraw: (key) => void published.delete(key.kid),
    sign(claims = {}, signOptions = {}) {
      const key = signOptions.key ?? defaultKey(signOptions.alg ?? 'RS256');
      const now = Math.floor(Date.now() / 1000);
      const body = { iss: issuer, aud: audience, sub: 'user-1', iat: now, exp: now + 300, ...claims };
      const header = { alg: key.alg, kid: key.kid, typ: 'at+jwt', ...signOptions.header };
      return compactJws(header, body, (input) => signWithKey(key, input));
    },
    failJwks: (status) => {
      jwksFailure = status;
    },
    addRoute: (method, path, handler) => void routes.set(`${method.toUpperCase()} ${path}`, handler),
    discoveryExtras,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err === undefined ? resolve() : reject(err)));
        server.closeAllConnections();
      }),
  };
  self.addKey('RS256');
  self.addKey('ES256');
  return self;
}
