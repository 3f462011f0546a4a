import { randomBytes } from 'node:crypto';
import { SbxError, WS_CLOSE_CODES } from '@sbx/protocol';
import { Utf8StreamEncoder, type EncodedBytes } from '../../domain/exec/byte-encoding.js';
import type { CommandRequest } from '../../domain/exec/command.js';
import { shellExitCode, type ExitStatus } from '../../domain/exec/exit-status.js';
import type { OutputStream, ProcessGroup } from '../../domain/exec/process-group.js';
import type { ProcessSupervisor } from '../../domain/exec/process-supervisor.js';
import type { WsSession } from '../ws/ws-session.js';

/** Socket bytes queued before the program's output is paused, and the level at which it resumes. */
const HIGH_WATER_BYTES = 1024 * 1024;
const LOW_WATER_BYTES = 256 * 1024;

export interface WsProcessStreamDeps {
  readonly supervisor: ProcessSupervisor;
  readonly killGraceMs: number;
}

/**
 * One program streamed over an exec socket: output as `stdout`/`stderr` frames (utf8,
 * or base64 when the bytes are not UTF-8; characters split between reads are held
 * back), then `exit` and close 1000. When the socket falls behind, the program's
 * output is paused (it blocks on its pipe) rather than buffered without bound.
 */
export class WsProcessStream {
  readonly processId = `proc_${randomBytes(12).toString('base64url')}`;
  #group: ProcessGroup | undefined;
  #timer: NodeJS.Timeout | undefined;
  #paused = false;
  #socketGone = false;
  #timedOut = false;
  /** Output that came before `ready` went out (a program that failed to start says so at once). */
  #early: Array<[OutputStream, Buffer]> | undefined = [];
  readonly #encoders: Record<OutputStream, Utf8StreamEncoder> = {
    stdout: new Utf8StreamEncoder(),
    stderr: new Utf8StreamEncoder(),
  };

  constructor(
    private readonly session: WsSession<'exec'>,
    private readonly deps: WsProcessStreamDeps,
  ) {}

  get started(): boolean {
    return this.#group !== undefined;
  }

  async start(request: CommandRequest, timeoutMs: number, initialStdin?: Buffer): Promise<void> {
    const group = await this.deps.supervisor.start(request, (stream, chunk) => this.#onOutput(stream, chunk));
    this.#group = group;
    if (this.#socketGone) group.kill();
    void group.exited.then((status) => this.#onExit(status));
    this.session.send({ type: 'ready', process_id: this.processId });
    const early = this.#early ?? [];
    this.#early = undefined;
    for (const [stream, chunk] of early) this.#onOutput(stream, chunk);
    if (initialStdin !== undefined && initialStdin.length > 0) this.writeStdin(initialStdin);
    this.#timer = setTimeout(() => {
      this.#timedOut = true;
      this.session.sendError(
        new SbxError('TIMEOUT', `the process ran longer than timeout_ms (${timeoutMs})`),
      );
      group.terminate(this.deps.killGraceMs);
    }, timeoutMs);
  }

  /** Once started: how the program ended, and whether the timeout ended it (the command log). */
  async ended(): Promise<{ readonly status: ExitStatus; readonly timedOut: boolean }> {
    const status = await this.#running().exited;
    return { status, timedOut: this.#timedOut };
  }

  writeStdin(bytes: Buffer, eof = false): void {
    const group = this.#running();
    if (eof) {
      group.endStdin(bytes.length > 0 ? bytes : undefined);
      return;
    }
    if (!group.writeStdin(bytes)) {
      // Stop reading the socket until the program has taken what it was sent.
      this.session.socket.pause();
      group.onStdinDrain(() => this.session.socket.resume());
    }
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.#running().signal(signal)) throw new SbxError('CONFLICT', 'the process has exited');
  }

  /** Ends the program (its whole group); `exit` and close follow as usual. */
  kill(): void {
    this.#group?.kill();
  }

  /** The socket is gone, whoever closed it: nothing may keep running for it. */
  onSocketClosed(): void {
    this.#socketGone = true;
    clearTimeout(this.#timer);
    this.#group?.kill();
  }

  #running(): ProcessGroup {
    if (this.#group === undefined) throw new SbxError('BAD_REQUEST', 'send a start frame first');
    return this.#group;
  }

  #onOutput(stream: OutputStream, chunk: Buffer): void {
    if (this.#early !== undefined) {
      this.#early.push([stream, chunk]);
      return;
    }
    this.#send(stream, this.#encoders[stream].push(chunk));
  }

  #send(stream: OutputStream, encoded: EncodedBytes | undefined): void {
    if (encoded === undefined || !this.session.isOpen) return;
    this.session.send({ type: stream, data: encoded.data, encoding: encoded.encoding }, () =>
      this.#maybeResume(),
    );
    if (!this.#paused && this.session.bufferedAmount > HIGH_WATER_BYTES) {
      this.#paused = true;
      this.#group?.pauseOutput();
    }
  }

  #maybeResume(): void {
    if (this.#paused && this.session.bufferedAmount < LOW_WATER_BYTES) {
      this.#paused = false;
      this.#group?.resumeOutput();
    }
  }

  #onExit(status: ExitStatus): void {
    clearTimeout(this.#timer);
    this.#send('stdout', this.#encoders.stdout.flush());
    this.#send('stderr', this.#encoders.stderr.flush());
    if (!this.session.isOpen) return;
    this.session.send({
      type: 'exit',
      code: shellExitCode(status),
      ...(status.signal === null ? {} : { signal: status.signal }),
    });
    this.session.close(WS_CLOSE_CODES.NORMAL, 'process exited');
  }
}
