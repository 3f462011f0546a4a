import { SbxError } from '@sbx/protocol';
import { TransportError } from '@sbx/client';
import { loggedIn, type CliContext, type LoggedIn } from '../context.js';
import { probeKey } from '../commands/whoami.js';

const HEALTH_TIMEOUT_MS = 10_000;

/** The login the CLI would use (config.json, or SBX_BROKER_URL / SBX_API_KEY). */
export function checkLogin(ctx: CliContext): { login: LoggedIn; detail: string } {
  const login = loggedIn(ctx);
  return { login, detail: `${login.config.broker_url} as ${login.config.actor_id}` };
}

/**
 * `GET /readyz` (no credentials): the broker answers, and its own probes (database,
 * coordination, migrations) pass. A 503 names the probes that did not. (`/healthz` is
 * liveness only: it answers 200 whatever the dependencies do.)
 */
export async function checkBrokerHealth(brokerUrl: string): Promise<string> {
  const url = new URL('readyz', brokerUrl.endsWith('/') ? brokerUrl : `${brokerUrl}/`).toString();
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
  } catch (err) {
    if (err instanceof Error && err.name === 'TimeoutError')
      throw new SbxError('TIMEOUT', `the broker at ${url} did not answer within ${HEALTH_TIMEOUT_MS} ms`);
    const cause = causeOf(err);
    throw new TransportError(`cannot reach the broker at ${url} (${cause})`, {
      cause: err,
    });
  }
  const body = await response.json().catch(() => undefined);
  const health = isRecord(body) ? body : {};
  if (!response.ok) {
    const failing = isRecord(health['checks'])
      ? Object.entries(health['checks']).flatMap(([name, state]) => (state === 'ok' ? [] : [name]))
      : [];
    const which = failing.length > 0 ? `: ${failing.join(', ')} unavailable` : '';
    throw new SbxError('BACKEND_UNAVAILABLE', `the broker answered HTTP ${response.status}${which}`);
  }
  const checks = isRecord(health['checks']) ? Object.keys(health['checks']) : [];
  return checks.length > 0 ? `ready (${checks.join(', ')} ok)` : 'ready';
}

/** The key is accepted (the same probe `sbx whoami` uses). */
export async function checkAuthenticated(login: LoggedIn): Promise<string> {
  await probeKey(login.broker);
  return 'the broker accepted the credentials';
}

/** fetch's "fetch failed" hides the reason (ECONNREFUSED, ENOTFOUND …) in `cause`. */
function causeOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause: unknown = err.cause;
  if (cause instanceof Error) {
    if (cause.message !== '') return cause.message;
    if ('code' in cause && typeof cause.code === 'string') return cause.code;
  }
  return err.message;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
