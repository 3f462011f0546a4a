/**
 * The SDK's only reader of the environment. A library must not read `process.env` from
 * everywhere; option fallbacks are looked up here, once per client, and only for options
 * the caller left out.
 *
 * - `SBX_BROKER_URL`: the broker's base URL, e.g. `https://broker.example.com`.
 * - `SBX_API_KEY`: the API key (or OIDC access token) sent as `Authorization: Bearer`.
 */
export interface EnvDefaults {
  readonly brokerUrl: string | undefined;
  readonly apiKey: string | undefined;
}

export function readEnvDefaults(env: NodeJS.ProcessEnv = process.env): EnvDefaults {
  return {
    brokerUrl: nonEmpty(env['SBX_BROKER_URL']),
    apiKey: nonEmpty(env['SBX_API_KEY']),
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
