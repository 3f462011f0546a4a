import type { CodeLanguage } from '@sbx/protocol';

/** How one snippet runs: the program (under the memory limit) and what it reads on stdin. */
export interface LanguageCommand {
  readonly argv: readonly string[];
  readonly stdin: Buffer;
}

/**
 * Everything a snippet's program sees besides PATH, HOME (the workspace) and LANG, which
 * every user process gets (command.ts `childEnvironment`). Nothing comes from the agent's
 * own environment: the code runs as pure compute, without credentials.
 */
export const CODE_ENVIRONMENT: Readonly<Record<string, string>> = {
  PYTHONUNBUFFERED: '1',
  PYTHONDONTWRITEBYTECODE: '1',
  TMPDIR: '/tmp',
};

/** Address space a node process gets on top of its heap: V8 reserves far more than it uses. */
const NODE_RESERVE_MIB = 1024;

/**
 * bash reads its script from stdin (`-s`) a byte at a time, so a command of the snippet
 * that reads stdin (`cat`, `read`, `python3`) would eat the rest of the snippet. This
 * first line reads the whole snippet instead, points stdin at /dev/null and runs it.
 */
export const BASH_PRELUDE = '__sbx_code=$(cat); exec </dev/null; eval "unset __sbx_code; $__sbx_code"\n';

/** `ulimit -v` (KiB of address space, inherited by children), then the program itself. */
function underMemoryLimit(kib: number, program: readonly string[]): string[] {
  return ['/bin/sh', '-c', `ulimit -v ${kib}; exec "$@"`, 'sh', ...program];
}

/** Per language: KiB of address space, the program, and the stdin it reads before the code. */
const LANGUAGES: Readonly<
  Record<CodeLanguage, (mb: number) => { kib: number; program: readonly string[]; prelude?: string }>
> = {
  python: (mb) => ({ kib: mb * 1024, program: ['python3', '-'] }),
  javascript: (mb) => ({
    kib: (mb + NODE_RESERVE_MIB) * 1024,
    program: ['node', `--max-old-space-size=${mb}`, '-'],
  }),
  bash: (mb) => ({ kib: mb * 1024, program: ['bash', '-s'], prelude: BASH_PRELUDE }),
};

/**
 * The code travels on the program's stdin (`python3 -`, `node -`, `bash -s`), so its
 * size meets no argv limit and it never appears in a process listing.
 */
export function languageCommand(
  language: CodeLanguage,
  memoryLimitMb: number,
  code: string,
): LanguageCommand {
  const { kib, program, prelude } = LANGUAGES[language](memoryLimitMb);
  const source = Buffer.from(code, 'utf8');
  return {
    argv: underMemoryLimit(kib, program),
    stdin: prelude === undefined ? source : Buffer.concat([Buffer.from(prelude), source]),
  };
}
