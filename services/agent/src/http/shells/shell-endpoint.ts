import { SbxError, WS_CLOSE_CODES, type ShellStartFrame } from '@sbx/protocol';
import type { ShellRegistry } from '../../domain/shells/shell-registry.js';
import type { ShellSession } from '../../domain/shells/shell-session.js';
import type { ShellViewer } from '../../domain/shells/shell-viewer.js';
import type { EndpointFrame, EndpointHandler, WsRoute, WsSession } from '../ws/ws-session.js';
import { frameOutputSink, stdinBytes, TRY_AGAIN_LATER } from './frame-output-sink.js';

interface Attachment {
  readonly shell: ShellSession;
  readonly viewer: ShellViewer;
}

/**
 * One client of the shell endpoint. `start` opens a shell (needs `shell`) or attaches
 * to one by id (`shell` or `shell:ro`). Input, resize and signals need `shell`, checked
 * per frame against the newest token; an observer's attempt is refused with an error
 * frame and changes nothing. `close` ends the shell for everyone; an observer's `close`
 * only ends its own connection, since it may not end what it cannot type into.
 */
class ShellConnection implements EndpointHandler<'shell'> {
  #attached: Attachment | undefined;
  #starting = false;
  #closed = false;
  /** Frames that arrived while `start` was still opening the shell; applied right after it. */
  #pending: EndpointFrame<'shell'>[] = [];

  constructor(
    private readonly session: WsSession<'shell'>,
    private readonly registry: ShellRegistry,
  ) {}

  async onFrame(frame: EndpointFrame<'shell'>): Promise<void> {
    // Clients pipeline `start` and their first input (docs/protocol.md#shell-socket);
    // keep the order, lose nothing.
    if (this.#starting && frame.type !== 'start') {
      this.#pending.push(frame);
      return;
    }
    switch (frame.type) {
      case 'start':
        await this.#start(frame);
        return;
      case 'stdin':
        this.#interactive('stdin').write(stdinBytes(frame));
        return;
      case 'resize':
        this.#interactive('resize').resize({ cols: frame.cols, rows: frame.rows });
        return;
      case 'signal':
        this.#interactive('signal').signal(frame.signal);
        return;
      case 'close':
        this.#close();
        return;
    }
  }

  onClose(): void {
    this.#closed = true;
    if (this.#attached === undefined) return;
    this.#attached.shell.detach(this.#attached.viewer);
    this.#attached = undefined;
  }

  #interactive(what: string): ShellSession {
    if (!this.session.has('shell')) {
      throw new SbxError('CAPABILITY_DENIED', `${what} needs the shell capability; this token only observes`);
    }
    if (this.#attached === undefined) throw new SbxError('BAD_REQUEST', `send start before ${what}`);
    return this.#attached.shell;
  }

  async #start(frame: ShellStartFrame): Promise<void> {
    if (this.#attached !== undefined || this.#starting) {
      throw new SbxError('CONFLICT', 'this connection already has a shell; open another to start one more');
    }
    this.#starting = true;
    try {
      const shell = frame.shell_session_id === undefined ? await this.#open(frame) : this.#find(frame);
      if (shell === undefined) return;
      if (this.#closed) {
        if (frame.shell_session_id === undefined) shell.terminate();
        return;
      }
      // Same tick as attach: the offset announced is exactly where this client's output begins.
      this.session.send({ type: 'ready', shell_session_id: shell.id, output_offset: shell.replayOffset });
      this.#attached = { shell, viewer: shell.attach(frameOutputSink(this.session, frame.output ?? 'json')) };
    } finally {
      this.#starting = false;
      await this.#applyPending();
    }
  }

  async #applyPending(): Promise<void> {
    const pending = this.#pending;
    this.#pending = [];
    for (const frame of pending) {
      try {
        await this.onFrame(frame);
      } catch (err) {
        this.session.sendError(SbxError.from(err));
      }
    }
  }

  async #open(frame: ShellStartFrame): Promise<ShellSession | undefined> {
    if (!this.session.has('shell')) {
      this.#refuse(
        WS_CLOSE_CODES.CAPABILITY_DENIED,
        new SbxError('CAPABILITY_DENIED', 'starting a shell needs the shell capability; shell:ro may attach'),
      );
      return undefined;
    }
    try {
      return await this.registry.create({
        size: { cols: frame.cols, rows: frame.rows },
        ...(frame.cwd === undefined ? {} : { cwd: frame.cwd }),
        ...(frame.env === undefined ? {} : { env: frame.env }),
        requestedBy: this.session.capability.claims.sub,
      });
    } catch (err) {
      const error = SbxError.from(err);
      if (error.code !== 'RATE_LIMITED') throw error;
      this.#refuse(TRY_AGAIN_LATER, error);
      return undefined;
    }
  }

  #find(frame: ShellStartFrame): ShellSession | undefined {
    const shell = this.registry.get(frame.shell_session_id ?? '');
    if (shell === undefined) {
      this.#refuse(WS_CLOSE_CODES.SHELL_NOT_FOUND, new SbxError('NOT_FOUND', 'no such shell session'));
      return undefined;
    }
    // The newest interactive client's terminal size wins, as with tmux; observers change nothing.
    if (this.session.has('shell')) shell.resize({ cols: frame.cols, rows: frame.rows });
    return shell;
  }

  #close(): void {
    if (this.#attached !== undefined && this.session.has('shell')) {
      // Every attached client, this one included, gets the exit and a normal close.
      this.#attached.shell.terminate();
      return;
    }
    this.session.close(WS_CLOSE_CODES.NORMAL, 'closed by client');
  }

  #refuse(code: number, error: SbxError): void {
    this.session.sendError(error);
    this.session.close(code, error.message);
  }
}

/** `WS /v1/shell/ws` and its alias `/ws` (docs/protocol.md#shell-socket). */
export function shellRoute(registry: ShellRegistry): WsRoute<'shell'> {
  return {
    paths: ['/v1/shell/ws', '/ws'],
    endpoint: 'shell',
    anyOf: ['shell', 'shell:ro'],
    open: (session) => new ShellConnection(session, registry),
  };
}
