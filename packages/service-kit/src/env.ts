import { z } from 'zod';

/** Raised when the environment does not parse; names every bad variable at once. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly problems: readonly string[];

  constructor(service: string, problems: readonly string[]) {
    super(`${service}: invalid configuration\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

export type Environment = Readonly<Record<string, string | undefined>>;

/** Empty strings count as unset, as shells and compose files produce them for `FOO=`. */
function withoutEmpty(env: Environment): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined && value !== '') out[name] = value;
  return out;
}

/** A rule over several variables, checked on the raw values so it reports alongside per-variable problems. */
export type EnvRule = (env: Readonly<Record<string, string>>) => string | undefined;

/**
 * Parses the environment with a zod object schema whose keys are variable names.
 * Messages name the variable but never echo its value: values may be secrets.
 */
export function parseEnv<S extends z.ZodType>(
  service: string,
  schema: S,
  env: Environment,
  rules: readonly EnvRule[] = [],
): z.infer<S> {
  const raw = withoutEmpty(env);
  const result = schema.safeParse(raw);
  const problems = result.success
    ? []
    : result.error.issues.map((issue) => {
        const name = issue.path.length > 0 ? issue.path.join('.') : '(environment)';
        return `${name}: ${issue.message}`;
      });
  for (const rule of rules) {
    const problem = rule(raw);
    if (problem !== undefined) problems.push(problem);
  }
  if (result.success && problems.length === 0) return result.data;
  throw new ConfigError(service, problems);
}

/** `true/false/1/0/yes/no`, as operators write booleans in environment files. */
export const envBoolean = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
    .default(fallback ? 'true' : 'false')
    .transform((value) => value === 'true' || value === '1' || value === 'yes');

/** A TCP port; 0 asks the OS for a free one. */
export const envPort = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const envLogLevel = z.enum(LOG_LEVELS).default('info');

/** Base64url text that decodes to at least `minBytes` bytes (keys). The value is never echoed. */
export const envKeyMaterial = (minBytes: number) =>
  z
    .string()
    .refine((text) => /^[A-Za-z0-9_-]+$/.test(text) && Buffer.from(text, 'base64url').length >= minBytes, {
      message: `must be unpadded base64url encoding at least ${minBytes} bytes`,
    });
