// The stdio server's configuration, read from the environment once, here only.
import { z } from 'zod';

const NonEmpty = z.string().trim().min(1);

const StdioEnv = z.object({
  SBX_BROKER_URL: NonEmpty,
  /** An API key or an OIDC access token of the user who starts the server. */
  SBX_API_KEY: NonEmpty,
  /** The agent id the server's sessions act as; absent: the broker's default for the caller. */
  SBX_MCP_ACTOR: NonEmpty.optional().catch(undefined),
});

export interface StdioConfig {
  readonly brokerUrl: string;
  readonly credential: string;
  readonly actorId: string | undefined;
}

/** The configuration, or the names of the variables that are missing or empty. */
export function loadStdioConfig(
  env: Readonly<Record<string, string | undefined>> = process.env,
): StdioConfig | { readonly missing: string[] } {
  const parsed = StdioEnv.safeParse(env);
  if (!parsed.success)
    return { missing: [...new Set(parsed.error.issues.map((issue) => String(issue.path[0])))] };
  return {
    brokerUrl: parsed.data.SBX_BROKER_URL,
    credential: parsed.data.SBX_API_KEY,
    actorId: parsed.data.SBX_MCP_ACTOR,
  };
}
