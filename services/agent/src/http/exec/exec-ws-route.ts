import { SbxError, WS_CLOSE_CODES } from '@sbx/protocol';
import { commandTextOf, type CommandLog } from '../../domain/commands/command-log.js';
import { decodeData } from '../../domain/exec/byte-encoding.js';
import type { EndpointFrame, EndpointHandler, WsRoute, WsSession } from '../ws/ws-session.js';
import { beginCommand, loggedStart, outcomeOf } from './command-logging.js';
import { WsProcessStream, type WsProcessStreamDeps } from './ws-process-stream.js';

export interface ExecWsDeps extends WsProcessStreamDeps {
  readonly defaultTimeoutMs: number;
  readonly commandLog: CommandLog;
}

type StartFrame = Extract<EndpointFrame<'exec'>, { type: 'start' }>;

function requireStarted(stream: WsProcessStream | undefined): WsProcessStream {
  if (stream === undefined) throw new SbxError('BAD_REQUEST', 'send a start frame first');
  return stream;
}

/** One exec socket: a single `start`, then stdin/signal/close frames until the program exits. */
class ExecSocketHandler implements EndpointHandler<'exec'> {
  #stream: WsProcessStream | undefined;
  /** Set while `start` is in progress: frames sent right behind it wait for it, in order. */
  #starting: Promise<void> | undefined;

  constructor(
    private readonly session: WsSession<'exec'>,
    private readonly deps: ExecWsDeps,
  ) {}

  async onFrame(frame: EndpointFrame<'exec'>): Promise<void> {
    if (frame.type === 'start') {
      await this.#start(frame);
      return;
    }
    const stream = await this.#startedStream();
    switch (frame.type) {
      case 'stdin':
        requireStarted(stream).writeStdin(decodeData(frame.data, frame.encoding), frame.eof === true);
        return;
      case 'signal':
        requireStarted(stream).signal(frame.signal);
        return;
      case 'close':
        if (stream === undefined) this.session.close(WS_CLOSE_CODES.NORMAL, 'closed by client');
        else stream.kill();
        return;
    }
  }

  onClose(): void {
    this.#stream?.onSocketClosed();
  }

  async #start(frame: StartFrame): Promise<void> {
    if (this.#stream !== undefined) throw new SbxError('CONFLICT', 'this socket already runs a process');
    const stream = new WsProcessStream(this.session, this.deps);
    this.#stream = stream;
    const logged = beginCommand(this.deps.commandLog, this.session.capability, {
      route: 'exec_ws',
      command: commandTextOf(frame),
    });
    const start = stream.start(
      { argv: frame.argv, cmd: frame.cmd, cwd: frame.cwd, env: frame.env },
      frame.timeout_ms ?? this.deps.defaultTimeoutMs,
      frame.stdin === undefined ? undefined : Buffer.from(frame.stdin, 'utf8'),
    );
    this.#starting = loggedStart(logged, start);
    try {
      await this.#starting;
      void stream.ended().then(({ status, timedOut }) => logged.end(outcomeOf(status, timedOut)));
    } catch (err) {
      // Nothing started (a refused cwd, no free slot): the client may send another start.
      this.#stream = undefined;
      throw err;
    } finally {
      this.#starting = undefined;
    }
  }

  /** The started program's stream, once a `start` in progress has settled; undefined when none started. */
  async #startedStream(): Promise<WsProcessStream | undefined> {
    await this.#starting?.catch(() => undefined);
    return this.#stream?.started === true ? this.#stream : undefined;
  }
}

/** `WS /v1/exec/ws`: run one program and stream its output (docs/protocol.md#exec-socket). */
export function execWsRoute(deps: ExecWsDeps): WsRoute<'exec'> {
  return {
    paths: ['/v1/exec/ws'],
    endpoint: 'exec',
    anyOf: ['process'],
    open: (session) => new ExecSocketHandler(session, deps),
  };
}
