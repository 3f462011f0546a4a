import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { ID_PATTERN } from '@sbx/protocol';
import { parseCommand, printJson, type CliContext, type LoggedIn } from '../context.js';
import { EXIT, UsageError, exitCodeOf } from '../exit-codes.js';
import { checkAuthenticated, checkBrokerHealth, checkLogin } from '../doctor/broker-checks.js';
import { SandboxChecks } from '../doctor/sandbox-checks.js';
import { runSteps, type DoctorStep, type StepResult } from '../doctor/step-runner.js';

/**
 * An end-to-end check of a deployment, for operators: login, broker health, the key,
 * a session on a throwaway thread, a file written and read back, a command, a shell, and
 * the release, which is tried whatever failed before. Exit 0 when nothing failed; else
 * the exit code of the first failure (5 unreachable, 3 key rejected, 4 not found, 1 other).
 */
export async function doctor(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values } = parseCommand('doctor', args, { thread: { type: 'string' }, json: { type: 'boolean' } });
  const thread = values.thread ?? `doctor-${randomBytes(4).toString('hex')}`;
  if (!ID_PATTERN.test(thread))
    throw new UsageError('doctor: --thread may contain only letters, digits and _ - . : @');
  const json = values.json === true;
  let login: LoggedIn | undefined;
  const current = (): LoggedIn => {
    if (login === undefined) throw new Error('not logged in: the login step did not pass');
    return login;
  };
  const steps = doctorSteps(ctx, thread, current, (loaded) => (login = loaded));
  if (!json) ctx.stdout.write(`sbx doctor: checking with thread ${thread}\n`);
  const started = performance.now();
  const outcome = await runSteps(steps, (result) => {
    if (!json) ctx.stdout.write(`${stepLine(result)}\n`);
  });
  const durationMs = Math.round(performance.now() - started);
  const code = outcome.failure === undefined ? EXIT.ok : exitCodeOf(outcome.failure);
  const failed = outcome.results.find((r) => r.status === 'fail');
  if (json) {
    printJson(ctx, {
      ok: failed === undefined,
      thread,
      broker_url: login?.config.broker_url ?? null,
      steps: outcome.results,
      duration_ms: durationMs,
      exit_code: code,
    });
  } else ctx.stdout.write(`${summaryLine(outcome.results, durationMs)}\n`);
  if (failed !== undefined) ctx.stderr.write(`sbx: doctor: ${failed.name} failed: ${failed.detail}\n`);
  return code;
}

function doctorSteps(
  ctx: CliContext,
  thread: string,
  current: () => LoggedIn,
  loaded: (login: LoggedIn) => void,
): DoctorStep[] {
  const sandbox = new SandboxChecks(current, thread);
  return [
    {
      name: 'login',
      needs: [],
      run: async () => {
        const checked = checkLogin(ctx);
        loaded(checked.login);
        return checked.detail;
      },
    },
    { name: 'broker', needs: ['login'], run: () => checkBrokerHealth(current().config.broker_url) },
    { name: 'auth', needs: ['broker'], run: () => checkAuthenticated(current()) },
    { name: 'ensure', needs: ['auth'], run: () => sandbox.ensure() },
    { name: 'write', needs: ['ensure'], run: () => sandbox.write() },
    { name: 'read', needs: ['write'], run: () => sandbox.read() },
    { name: 'exec', needs: ['ensure'], run: () => sandbox.exec() },
    { name: 'shell', needs: ['ensure'], run: () => sandbox.shell() },
    { name: 'release', needs: [], always: true, run: () => sandbox.release() },
  ];
}

/** `  ok    broker      12 ms  healthy, version 0.1.0` */
function stepLine(r: StepResult): string {
  const status = r.status === 'fail' ? 'FAIL' : r.status;
  const duration = r.status === 'skip' && r.duration_ms === 0 ? '' : `${r.duration_ms} ms`;
  return `  ${status.padEnd(5)} ${r.name.padEnd(8)} ${duration.padStart(8)}  ${r.detail}`;
}

function summaryLine(results: readonly StepResult[], durationMs: number): string {
  const count = (status: StepResult['status']): number => results.filter((r) => r.status === status).length;
  const verdict = count('fail') === 0 ? 'all checks passed' : 'FAILED';
  return `${verdict}: ${count('ok')} ok, ${count('fail')} failed, ${count('skip')} skipped in ${(durationMs / 1000).toFixed(1)} s`;
}
