import { homedir } from 'node:os';
import path from 'node:path';

/**
 * The CLI's only reader of the environment (read once, in main):
 *
 * - `SBX_HOME`: where `config.json` and `threads.json` live; default `~/.config/sbx`.
 * - `SBX_BROKER_URL`, `SBX_API_KEY`: override the logged-in broker URL and key for one
 *   invocation (scripts, CI), without touching `config.json`.
 */
export interface CliEnv {
  readonly home: string;
  readonly brokerUrl: string | undefined;
  readonly apiKey: string | undefined;
}

export function readCliEnv(env: NodeJS.ProcessEnv = process.env): CliEnv {
  return {
    home: nonEmpty(env['SBX_HOME']) ?? path.join(homedir(), '.config', 'sbx'),
    brokerUrl: nonEmpty(env['SBX_BROKER_URL']),
    apiKey: nonEmpty(env['SBX_API_KEY']),
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
