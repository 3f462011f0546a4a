// Before the first user code in a sandbox's agent, prove its output redactor works
// (docs/execute-code.md "Readiness"): run a snippet that prints a freshly made
// token-shaped secret, assembled at run time so it appears in the output only,
// and require it to come back redacted. An agent that fails never runs user code.
import { randomBytes } from 'node:crypto';
import type { CodeRunner } from './code-runner.js';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const PROVEN_AGENTS_KEPT = 10_000;

/** A GitHub-shaped token nobody holds: `ghp_` and 36 random letters and digits. */
function canary(): { prefix: string; body: string } {
  const bytes = randomBytes(36);
  let body = '';
  for (const byte of bytes) body += ALPHANUMERIC[byte % ALPHANUMERIC.length] ?? 'A';
  return { prefix: 'ghp_', body };
}

export type Readiness = { readonly ready: true } | { readonly ready: false; readonly reason: string };

export class RedactorReadiness {
  /** Agents already proven, by sandbox and address (a restarted agent is proven again). */
  readonly #proven = new Set<string>();

  constructor(private readonly runner: CodeRunner) {}

  async check(sandboxId: string, httpBaseUrl: string, token: string): Promise<Readiness> {
    const key = `${sandboxId} ${httpBaseUrl}`;
    if (this.#proven.has(key)) return { ready: true };
    const secret = canary();
    const outcome = await this.runner.run(httpBaseUrl, token, {
      language: 'bash',
      code: `printf 'readiness %s%s\\n' '${secret.prefix}' '${secret.body}'`,
      timeoutMs: 10_000,
      memoryLimitMb: 64,
    });
    const leaked = outcome.stdout.includes(secret.prefix + secret.body);
    if (outcome.exit_status !== 'ok' || leaked || outcome.redactions < 1)
      return {
        ready: false,
        reason: leaked
          ? 'the sandbox output redactor is not active: a readiness secret came back in clear'
          : `the sandbox output redactor did not pass its readiness check (${outcome.exit_status})`,
      };
    if (this.#proven.size >= PROVEN_AGENTS_KEPT) this.#proven.clear();
    this.#proven.add(key);
    return { ready: true };
  }
}
