// The client policy's injected environment (AGENT_SANDBOX_ENV_FILE): a JSON object of
// variables every user process of the sandbox gets, exec, background processes and
// shells alike (not execute_code, which is pure compute). The provider writes it next
// to the key; it is re-read when it changes (a warm sandbox claimed by a client gets
// its client's variables without a restart). HOME is never taken from it: it must stay
// the workspace through every door. A file that is missing or bad leaves the last good
// variables (none at first), and says so in the log.
import { readFileSync, statSync } from 'node:fs';
import type { Logger } from '@sbx/service-kit';

export type SandboxEnvironment = () => Readonly<Record<string, string>>;

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const RESERVED = new Set(['HOME']);
const NONE: Readonly<Record<string, string>> = Object.freeze({});

export function sandboxEnvironmentFile(
  file: string,
  logger: Logger,
  read: (file: string) => string = (name) => readFileSync(name, 'utf8'),
): SandboxEnvironment {
  let variables = NONE;
  let seen = '';
  return () => {
    let stamp: string;
    try {
      const info = statSync(file);
      stamp = `${info.mtimeMs}:${info.size}:${info.ino}`;
    } catch {
      return variables;
    }
    if (stamp === seen) return variables;
    seen = stamp;
    try {
      variables = parseVariables(JSON.parse(read(file)), logger);
    } catch (err) {
      logger.warn({ err, file }, 'the sandbox environment file is not a JSON object; keeping the last one');
    }
    return variables;
  };
}

function parseVariables(value: unknown, logger: Logger): Readonly<Record<string, string>> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new TypeError('not a JSON object');
  const kept: Record<string, string> = {};
  for (const [name, text] of Object.entries(value)) {
    if (NAME.test(name) && !RESERVED.has(name) && typeof text === 'string' && !text.includes('\0'))
      kept[name] = text;
    else logger.warn({ name }, 'a sandbox environment variable was left out (bad name or value, or HOME)');
  }
  return Object.freeze(kept);
}
