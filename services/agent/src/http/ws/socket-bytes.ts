import type { Duplex } from 'node:stream';
import type { AgentMetrics } from '../../domain/metrics/agent-metrics.js';

/** What a socket counts; an upgraded HTTP socket is a net.Socket, which has both. */
interface Counted {
  readonly bytesRead?: number;
  readonly bytesWritten?: number;
}

/**
 * The bytes of one upgraded socket, reported to the metrics as deltas since the last
 * report (frames, headers and the handshake included), so a long-lived shell counts as
 * it goes and its end adds only the rest.
 */
export class SocketBytes {
  #read: number;
  #written: number;

  constructor(
    private readonly socket: Duplex,
    private readonly metrics: Pick<AgentMetrics, 'bytesMoved'> | undefined,
  ) {
    this.#read = 0;
    this.#written = 0;
  }

  report(): void {
    if (this.metrics === undefined) return;
    const counted = this.socket as Duplex & Counted;
    const read = counted.bytesRead ?? this.#read;
    const written = counted.bytesWritten ?? this.#written;
    this.metrics.bytesMoved('in', read - this.#read);
    this.metrics.bytesMoved('out', written - this.#written);
    this.#read = read;
    this.#written = written;
  }
}
