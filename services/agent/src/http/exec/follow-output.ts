import type { Response } from 'express';
import { Utf8StreamEncoder, trimCutStart, type EncodedBytes } from '../../domain/exec/byte-encoding.js';
import type { OutputStream } from '../../domain/exec/process-group.js';
import type { BackgroundProcess } from '../../domain/processes/background-process.js';

export interface FollowOptions {
  readonly streams: readonly OutputStream[];
  /** Newest bytes of each stream sent first; everything buffered when absent. */
  readonly tail: number | undefined;
  /** A reader this far behind is cut off (the ring buffer, not the reader, sets the pace). */
  readonly maxQueuedBytes: number;
}

/**
 * Streams a process's output as NDJSON until it exits: the buffered backlog, then
 * `{stream,data,encoding}` lines as output arrives, then one `{exit_code,signal}` line.
 */
export function followOutput(res: Response, entry: BackgroundProcess, options: FollowOptions): void {
  const encoders: Record<OutputStream, Utf8StreamEncoder> = {
    stdout: new Utf8StreamEncoder(),
    stderr: new Utf8StreamEncoder(),
  };
  const writeLine = (line: object): void => {
    if (res.destroyed || res.writableEnded) return;
    res.write(`${JSON.stringify(line)}\n`);
    if (res.writableLength > options.maxQueuedBytes) res.destroy();
  };
  const emit = (stream: OutputStream, encoded: EncodedBytes | undefined): void => {
    if (encoded !== undefined) writeLine({ stream, data: encoded.data, encoding: encoded.encoding });
  };

  res.status(200);
  res.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.flushHeaders();
  for (const stream of options.streams) {
    const buffer = entry.output.buffer(stream);
    const backlog = buffer.tail(options.tail ?? buffer.size);
    emit(stream, encoders[stream].push(buffer.totalBytes > backlog.length ? trimCutStart(backlog) : backlog));
  }
  const stop = entry.output.follow({
    onOutput(stream, chunk) {
      if (options.streams.includes(stream)) emit(stream, encoders[stream].push(chunk));
    },
    onExit(status) {
      for (const stream of options.streams) emit(stream, encoders[stream].flush());
      writeLine({ exit_code: status.exitCode, signal: status.signal });
      if (!res.destroyed) res.end();
    },
  });
  res.on('close', stop);
}
