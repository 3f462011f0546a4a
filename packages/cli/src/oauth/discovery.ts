import { SbxError } from '@sbx/protocol';
import { insecureUrlProblem, isRecord, issuerRequest, unexpectedAnswer } from './issuer-http.js';

/** What the device login needs of an issuer's discovery document. */
export interface IssuerEndpoints {
  readonly issuer: string;
  readonly deviceAuthorizationEndpoint: string;
  readonly tokenEndpoint: string;
}

const withoutSlash = (url: string): string => url.replace(/\/+$/, '');

/**
 * Reads `<issuer>/.well-known/openid-configuration` (OpenID Connect Discovery 1.0). The
 * document must name the issuer it was fetched from (§4.3: a document that names another
 * issuer could send our codes elsewhere), and both endpoints must be https (or loopback).
 */
export async function discoverIssuer(issuer: string): Promise<IssuerEndpoints> {
  const what = `read the discovery document of ${issuer}`;
  const url = `${withoutSlash(issuer)}/.well-known/openid-configuration`;
  const answer = await issuerRequest(url, what);
  if (answer.status !== 200 || !isRecord(answer.body)) throw unexpectedAnswer(what, answer);
  const document = answer.body;
  if (typeof document['issuer'] !== 'string' || withoutSlash(document['issuer']) !== withoutSlash(issuer)) {
    throw new SbxError('BAD_REQUEST', `${what}: it names another issuer (${String(document['issuer'])})`);
  }
  return {
    issuer: document['issuer'],
    deviceAuthorizationEndpoint: endpoint(document, 'device_authorization_endpoint', what),
    tokenEndpoint: endpoint(document, 'token_endpoint', what),
  };
}

function endpoint(document: Record<string, unknown>, field: string, what: string): string {
  const value = document[field];
  if (typeof value !== 'string') {
    throw new SbxError('BAD_REQUEST', `${what}: no ${field} (the issuer does not offer the device flow)`);
  }
  const problem = insecureUrlProblem(value);
  if (problem !== undefined) throw new SbxError('BAD_REQUEST', `${what}: ${field} ${problem}`);
  return value;
}
