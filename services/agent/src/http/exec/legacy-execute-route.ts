import { SbxError, validationError, WS_CLOSE_CODES, LegacyExecuteRequest } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import { codeLineOf, type CommandLog } from '../../domain/commands/command-log.js';
import type { EndpointHandler, WsRoute, WsSession } from '../ws/ws-session.js';
import { beginCommand, loggedStart, outcomeOf } from './command-logging.js';
import { WsProcessStream, type WsProcessStreamDeps } from './ws-process-stream.js';

export interface LegacyExecuteDeps extends WsProcessStreamDeps {
  readonly interpreter: string;
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly commandLog: CommandLog;
}

function parseBody(text: string): LegacyExecuteRequest {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new SbxError('BAD_REQUEST', 'message is not valid JSON');
  }
  const parsed = LegacyExecuteRequest.safeParse(json);
  if (!parsed.success) throw validationError(parsed.error, 'message');
  return parsed.data;
}

/**
 * Legacy streaming code execution (docs/protocol.md#legacy-endpoints). Identity is the token's
 * `sub`; a `user_id` in the body is ignored. The code runs as `<interpreter> -c <code>`.
 */
class LegacyExecuteHandler implements EndpointHandler<'exec'> {
  #stream: WsProcessStream | undefined;

  constructor(
    private readonly session: WsSession<'exec'>,
    private readonly deps: LegacyExecuteDeps,
  ) {}

  onFrame(): void {
    // Raw route: every message arrives through onText.
  }

  async onText(text: string): Promise<void> {
    if (this.#stream !== undefined) throw new SbxError('CONFLICT', 'this socket already runs code');
    let body: LegacyExecuteRequest;
    try {
      body = parseBody(text);
    } catch (err) {
      this.session.sendError(SbxError.from(err));
      this.session.close(WS_CLOSE_CODES.POLICY_VIOLATION, 'Invalid payload');
      return;
    }
    const stream = new WsProcessStream(this.session, this.deps);
    this.#stream = stream;
    this.deps.logger.info(
      {
        sub: this.session.capability.claims.sub,
        jti: this.session.capability.claims.jti,
        process_id: stream.processId,
      },
      'legacy execute',
    );
    // The code itself is not logged whole: the interpreter and the snippet's first line.
    const logged = beginCommand(this.deps.commandLog, this.session.capability, {
      route: 'legacy',
      command: `${this.deps.interpreter} -c ${codeLineOf(body.code)}`,
    });
    const start = stream.start({ argv: [this.deps.interpreter, '-c', body.code] }, this.deps.timeoutMs);
    await loggedStart(logged, start);
    void stream.ended().then(({ status, timedOut }) => logged.end(outcomeOf(status, timedOut)));
  }

  onClose(): void {
    this.#stream?.onSocketClosed();
  }
}

/** `WS /execute?token=…`, served only when legacy endpoints are enabled. */
export function legacyExecuteRoute(deps: LegacyExecuteDeps): WsRoute<'exec'> {
  return {
    paths: ['/execute'],
    endpoint: 'exec',
    anyOf: ['process'],
    auth: 'query',
    rawFrames: true,
    open: (session) => new LegacyExecuteHandler(session, deps),
  };
}
