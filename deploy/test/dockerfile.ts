// A small Dockerfile reader for the deploy tests: enough of the format (comments, parser
// directives, line continuations, exec and shell forms, --flags, stages) to assert what the
// images promise without a Docker engine. Not a general parser: heredocs are not supported.
import { readFileSync } from 'node:fs';

export interface Instruction {
  /** Upper-cased: FROM, RUN, USER … */
  readonly keyword: string;
  /** Leading `--name=value` options (HEALTHCHECK --interval=…, COPY --from=…). */
  readonly flags: Readonly<Record<string, string>>;
  /** The rest of the instruction, continuations joined with a space. */
  readonly args: string;
  /** The JSON array of the exec form, when the arguments are one. */
  readonly exec: readonly string[] | undefined;
  /** 1-based line the instruction starts on, for messages. */
  readonly line: number;
}

export interface Stage {
  /** `FROM <image>` */
  readonly image: string;
  /** `FROM … AS <name>`; undefined for an unnamed stage. */
  readonly name: string | undefined;
  readonly instructions: readonly Instruction[];
}

export interface Dockerfile {
  /** `ARG`s before the first FROM. */
  readonly globalArgs: readonly Instruction[];
  readonly stages: readonly Stage[];
}

const FLAG = /^--([a-z-]+)=(\S*)\s*/;

function execForm(args: string): readonly string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  try {
    const parsed: unknown = JSON.parse(args);
    return Array.isArray(parsed) && parsed.every((part) => typeof part === 'string') ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function instructionOf(text: string, line: number): Instruction {
  const match = /^(\S+)\s*([\s\S]*)$/.exec(text);
  if (match === null) throw new Error(`line ${line}: not an instruction: ${text}`);
  const keyword = (match[1] ?? '').toUpperCase();
  let rest = (match[2] ?? '').trim();
  const flags: Record<string, string> = {};
  for (let flag = FLAG.exec(rest); flag !== null; flag = FLAG.exec(rest)) {
    flags[flag[1] ?? ''] = flag[2] ?? '';
    rest = rest.slice(flag[0].length);
  }
  return { keyword, flags, args: rest, exec: execForm(rest), line };
}

/** Logical lines: comments and blank lines dropped, `\` continuations joined. */
function logicalLines(text: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let pending: { text: string; line: number } | undefined;
  text.split(/\r?\n/).forEach((raw, index) => {
    const trimmed = raw.trim();
    if (trimmed.startsWith('#') || trimmed === '') return;
    const continues = trimmed.endsWith('\\');
    const part = continues ? trimmed.slice(0, -1).trim() : trimmed;
    pending =
      pending === undefined
        ? { text: part, line: index + 1 }
        : { ...pending, text: `${pending.text} ${part}` };
    if (!continues) {
      out.push(pending);
      pending = undefined;
    }
  });
  if (pending !== undefined) throw new Error(`line ${pending.line}: continuation never ends`);
  return out;
}

export function parseDockerfile(text: string): Dockerfile {
  const globalArgs: Instruction[] = [];
  const stages: { image: string; name: string | undefined; instructions: Instruction[] }[] = [];
  for (const { text: lineText, line } of logicalLines(text)) {
    const instruction = instructionOf(lineText, line);
    if (instruction.keyword === 'FROM') {
      const [image, as, name] = instruction.args.split(/\s+/);
      if (image === undefined || (as !== undefined && as.toUpperCase() !== 'AS'))
        throw new Error(`line ${line}: FROM ${instruction.args}`);
      stages.push({ image, name, instructions: [] });
    } else if (stages.length === 0) {
      if (instruction.keyword !== 'ARG') throw new Error(`line ${line}: ${instruction.keyword} before FROM`);
      globalArgs.push(instruction);
    } else {
      stages.at(-1)?.instructions.push(instruction);
    }
  }
  return { globalArgs, stages };
}

export function readDockerfile(file: string): Dockerfile {
  return parseDockerfile(readFileSync(file, 'utf8'));
}

export function finalStage(dockerfile: Dockerfile): Stage {
  const stage = dockerfile.stages.at(-1);
  if (stage === undefined) throw new Error('no FROM');
  return stage;
}

export function instructions(stage: Stage, keyword: string): readonly Instruction[] {
  return stage.instructions.filter((instruction) => instruction.keyword === keyword);
}

/** The last instruction of a kind wins (USER, ENTRYPOINT, CMD, HEALTHCHECK, WORKDIR). */
export function lastInstruction(stage: Stage, keyword: string): Instruction | undefined {
  return instructions(stage, keyword).at(-1);
}

/** `ENV a=b c=d` and the legacy `ENV a b`, as name → value (quotes removed). */
export function envOf(stage: Stage): Map<string, string> {
  const env = new Map<string, string>();
  for (const { args } of instructions(stage, 'ENV')) {
    if (!args.includes('=')) {
      const [name, ...value] = args.split(/\s+/);
      if (name !== undefined) env.set(name, value.join(' '));
      continue;
    }
    for (const pair of args.match(/[^\s=]+=("[^"]*"|'[^']*'|\S*)/g) ?? []) {
      const at = pair.indexOf('=');
      env.set(pair.slice(0, at), pair.slice(at + 1).replace(/^(["'])(.*)\1$/, '$2'));
    }
  }
  return env;
}
