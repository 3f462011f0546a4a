import { readdirSync, readFileSync } from 'node:fs';
import { WebSocket, type RawData } from 'ws';
import { rawText } from './shell-client.js';

const START = '<<S>>';

/**
 * Counts, without keeping the output, the `char`s between `<<S>>` and the next `<`
 * in a stream of text chunks; anything else in that run is counted as `others`.
 * Commands print the markers with `printf '<<%s>>' S` so their echo never matches.
 */
export class MarkedRunCounter {
  state: 'before' | 'inside' | 'after' = 'before';
  count = 0;
  others = 0;
  #carry = '';

  constructor(private readonly char: string) {}

  feed(chunk: string): void {
    let text = chunk;
    if (this.state === 'before') {
      const joined = this.#carry + text;
      const at = joined.indexOf(START);
      if (at < 0) {
        this.#carry = joined.slice(-(START.length - 1));
        return;
      }
      this.state = 'inside';
      text = joined.slice(at + START.length);
    }
    if (this.state !== 'inside') return;
    const end = text.indexOf('<');
    const run = end < 0 ? text : text.slice(0, end);
    const code = this.char.charCodeAt(0);
    let matched = 0;
    for (let i = 0; i < run.length; i++) if (run.charCodeAt(i) === code) matched++;
    this.count += matched;
    this.others += run.length - matched;
    if (end >= 0) this.state = 'after';
  }
}

/** Bytes written so far by the child of `parentPid` named `name` (Linux /proc), or undefined. */
export function childBytesWritten(parentPid: number, name: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (comm !== name || ppid !== parentPid) continue;
      const io = readFileSync(`/proc/${entry}/io`, 'utf8');
      return Number(/^wchar: (\d+)$/m.exec(io)?.[1]);
    } catch {
      // The process ended while we looked.
    }
  }
  return undefined;
}

/** A shell client that keeps nothing but counters, for output too large to hold. */
export class CountingShellClient {
  readonly ws: WebSocket;
  readonly frameTypes: string[] = [];
  bytes = 0;
  /** The first 64 KiB of output, for small answers such as a pid. */
  head = '';
  exit: Record<string, unknown> | undefined;
  shellId = '';
  closeCode: number | undefined;
  readonly closed: Promise<number>;
  #listeners: Array<() => void> = [];

  constructor(
    url: string,
    readonly counter: MarkedRunCounter,
  ) {
    this.ws = new WebSocket(url);
    this.ws.on('error', () => {});
    this.closed = new Promise((resolve) =>
      this.ws.on('close', (code: number) => {
        this.closeCode = code;
        resolve(code);
        this.#notify();
      }),
    );
    this.ws.on('message', (data: RawData) => this.#onMessage(data));
  }

  async start(token: string, start: Record<string, unknown> = {}): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.ws.send(JSON.stringify({ type: 'auth', token }));
    this.ws.send(JSON.stringify({ type: 'start', cols: 80, rows: 24, ...start }));
    await this.until(() => this.shellId !== '', 10_000);
  }

  type(line: string): void {
    this.ws.send(JSON.stringify({ type: 'stdin', data: `${line}\n` }));
  }

  /** Stops (or resumes) reading from the TCP socket, as a stalled client would. */
  setReading(reading: boolean): void {
    const socket: unknown = Reflect.get(this.ws, '_socket');
    if (typeof socket !== 'object' || socket === null) throw new Error('no underlying socket');
    const method: unknown = Reflect.get(socket, reading ? 'resume' : 'pause');
    if (typeof method !== 'function') throw new Error('socket cannot pause');
    Reflect.apply(method, socket, []);
  }

  async until(condition: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`timed out; frames ${this.frameTypes.slice(-5).join(',')}`);
      if (this.closeCode !== undefined) throw new Error(`closed with ${this.closeCode}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 100);
        this.#listeners.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  #onMessage(data: RawData): void {
    const frame = JSON.parse(rawText(data)) as Record<string, unknown>;
    const type = String(frame['type']);
    if (this.frameTypes.at(-1) !== type) this.frameTypes.push(type);
    if (type === 'ready') this.shellId = String(frame['shell_session_id']);
    if (type === 'exit') this.exit = frame;
    if (type === 'stdout') {
      const chunk =
        frame['encoding'] === 'base64'
          ? Buffer.from(String(frame['data']), 'base64').toString('latin1')
          : String(frame['data']);
      this.bytes += chunk.length;
      if (this.head.length < 65_536) this.head += chunk;
      this.counter.feed(chunk);
    }
    this.#notify();
  }

  #notify(): void {
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const wake of listeners) wake();
  }
}
