// The HTTP fuzz of a target: generated requests (http-cases.ts) on raw sockets (wire.ts),
// each judged by verdict.ts.
import { CEILING_MS, draw } from './fuzz-settings.js';
import { runFuzz, type RunReport } from './fuzz-run.js';
import { httpCase, type HttpSurface } from './http-cases.js';
import type { Target } from './targets.js';
import { documentedStatuses, judgeHttp } from './verdict.js';
import { send } from './wire.js';

export function runHttpFuzz(
  stream: string,
  target: Target,
  url: string,
  surface: HttpSurface,
  options: { readonly count: number; readonly warmUp: number; readonly concurrency: number },
): Promise<RunReport> {
  const arbitrary = httpCase(surface);
  return runFuzz(target, options, async (index) => {
    const { route, request, description } = draw(arbitrary, stream, index);
    const outcome = await send(url, request, CEILING_MS);
    const documented = documentedStatuses(surface.routes, request.method, request.target);
    return {
      ...judgeHttp(route, request.method, request.framing, outcome, documented, CEILING_MS),
      description,
    };
  });
}
