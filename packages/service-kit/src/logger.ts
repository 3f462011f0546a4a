import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { REDACTED, scrubText, scrubValue } from './redact.js';
import { currentRequestId } from './request-context.js';

export type { DestinationStream, Logger } from 'pino';

export interface LoggerConfig {
  readonly service: string;
  readonly level: string;
  /** Where lines go; standard output when absent. Tests pass a stream to read them back. */
  readonly destination?: DestinationStream;
}

function scrubError(err: unknown): unknown {
  if (!(err instanceof Error)) return scrubValue(err);
  return {
    type: err.name,
    message: scrubText(err.message),
    stack: err.stack === undefined ? undefined : scrubText(err.stack),
    ...(err.cause === undefined ? {} : { cause: scrubError(err.cause) }),
  };
}

/** pino JSON logs that never contain a token: structured fields, URLs and messages are scrubbed. */
export function createLogger(config: LoggerConfig): Logger {
  const options: LoggerOptions = {
    name: config.service,
    level: config.level,
    base: { service: config.service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', '*.token'],
      censor: REDACTED,
    },
    serializers: { err: scrubError, error: scrubError },
    // Every line written while a request is served names it (request-context.ts).
    mixin: () => {
      const id = currentRequestId();
      return id === undefined ? {} : { request_id: id };
    },
    hooks: {
      logMethod(args, method) {
        // pino's first argument is a merging object or the message; either may carry a token.
        const scrubbed = args.map((arg: unknown) => (arg instanceof Error ? arg : scrubValue(arg)));
        Reflect.apply(method, this, scrubbed);
      },
    },
  };
  // Standard output is written asynchronously: a synchronous write per request line was a
  // measurable share of a small request's latency. Services flush before they exit.
  return pino(options, config.destination ?? pino.destination({ dest: 1, sync: false }));
}

/**
 * A destination that turns each JSON line into pino-pretty's human-readable form on `output`.
 * The line was redacted and scrubbed before it got here, so pretty output is as clean as JSON.
 * Loaded on demand: the agent, JSON only, does not pay pino-pretty's import at every start.
 * Synchronous on purpose: a terminal is written synchronously anyway, and a line is never
 * left behind at exit. `colorize` defaults to pino-pretty's guess (a terminal, NO_COLOR).
 */
export async function prettyDestination(
  output: NodeJS.WritableStream,
  options: { readonly colorize?: boolean } = {},
): Promise<DestinationStream> {
  const { prettyFactory } = await import('pino-pretty');
  const prettify = prettyFactory({
    ...options,
    // `name` already says which service; pid and hostname are not in the records.
    ignore: 'service',
    translateTime: 'SYS:HH:MM:ss.l',
  });
  return { write: (line: string) => void output.write(prettify(line)) };
}
