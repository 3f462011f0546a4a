import { performance } from 'node:perf_hooks';

export type StepStatus = 'ok' | 'fail' | 'skip';

export interface StepResult {
  readonly name: string;
  readonly status: StepStatus;
  readonly duration_ms: number;
  /** What was seen (ok), what went wrong (fail) or why it did not run (skip). */
  readonly detail: string;
}

/** Returned by a step that found nothing to check (say, no shell granted): not a failure. */
export class Skip {
  constructor(readonly reason: string) {}
}

export interface DoctorStep {
  readonly name: string;
  /** Steps that must have passed first; when one did not, this one is skipped. */
  readonly needs: readonly string[];
  /** Runs whatever happened before (clean-up); it decides itself whether there is work. */
  readonly always?: boolean;
  run(): Promise<string | Skip>;
}

/** A check that ran but saw the wrong thing (a mismatched read, an unexpected exit code). */
export class CheckFailed extends Error {
  override readonly name = 'CheckFailed';
}

export interface DoctorOutcome {
  readonly results: readonly StepResult[];
  /** The first failure's error, for the exit code; undefined when nothing failed. */
  readonly failure: unknown;
}

/** Runs the steps in order, reporting each as it ends. A step never throws out of here. */
export async function runSteps(
  steps: readonly DoctorStep[],
  onResult: (result: StepResult) => void,
): Promise<DoctorOutcome> {
  const results: StepResult[] = [];
  let failure: unknown;
  for (const step of steps) {
    const unmet = step.always === true ? undefined : step.needs.find((need) => !passed(results, need));
    const result =
      unmet === undefined
        ? await timed(step)
        : {
            name: step.name,
            status: 'skip' as const,
            duration_ms: 0,
            detail: `needs ${unmet}`,
            error: undefined,
          };
    if (result.status === 'fail' && failure === undefined) failure = result.error;
    const { error: _error, ...shown } = result;
    results.push(shown);
    onResult(shown);
  }
  return { results, failure };
}

function passed(results: readonly StepResult[], name: string): boolean {
  return results.some((r) => r.name === name && r.status === 'ok');
}

async function timed(step: DoctorStep): Promise<StepResult & { readonly error: unknown }> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  try {
    const outcome = await step.run();
    const skipped = outcome instanceof Skip;
    const detail = skipped ? outcome.reason : outcome;
    return {
      name: step.name,
      status: skipped ? 'skip' : 'ok',
      duration_ms: elapsed(),
      detail,
      error: undefined,
    };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const detail = message.split('\n')[0] ?? message;
    return { name: step.name, status: 'fail', duration_ms: elapsed(), detail, error: err };
  }
}
