import type { Router } from 'express';
import { parseOrThrow, ProcessOutputQuery, type ProcessOutputResponse } from '@sbx/protocol';
import { encodeCutBytes } from '../../domain/exec/byte-encoding.js';
import type { OutputStream } from '../../domain/exec/process-group.js';
import type { BackgroundProcess } from '../../domain/processes/background-process.js';
import type { ProcessRegistry } from '../../domain/processes/process-registry.js';
import { requireCapability } from '../capability.js';
import { followOutput } from './follow-output.js';
import { processIdOf } from './process-routes.js';

function streamOutput(entry: BackgroundProcess, stream: OutputStream, tail: number | undefined) {
  const buffer = entry.output.buffer(stream);
  const bytes = buffer.tail(tail ?? buffer.size);
  const encoded = encodeCutBytes(bytes, { start: buffer.totalBytes > bytes.length, end: entry.running });
  return { ...encoded, bytes: buffer.totalBytes, dropped_bytes: buffer.droppedBytes };
}

function outputSnapshot(
  entry: BackgroundProcess,
  streams: readonly OutputStream[],
  tail: number | undefined,
): ProcessOutputResponse {
  const status = entry.status;
  return {
    process_id: entry.id,
    status: status === undefined ? 'running' : 'exited',
    exit_code: status?.exitCode ?? null,
    signal: status?.signal ?? null,
    ...(streams.includes('stdout') ? { stdout: streamOutput(entry, 'stdout', tail) } : {}),
    ...(streams.includes('stderr') ? { stderr: streamOutput(entry, 'stderr', tail) } : {}),
  };
}

/** `GET /v1/processes/{id}/output?stream=&tail=&follow=`: buffered output, or NDJSON until exit. */
export function mountProcessOutputRoute(
  router: Router,
  deps: { readonly registry: ProcessRegistry; readonly followBufferBytes: number },
): void {
  router.get('/v1/processes/:id/output', requireCapability('process'), (req, res) => {
    const entry = deps.registry.get(processIdOf(req));
    const query = parseOrThrow(ProcessOutputQuery, req.query, 'query');
    const streams: OutputStream[] = query.stream === 'both' ? ['stdout', 'stderr'] : [query.stream];
    if (query.follow) {
      followOutput(res, entry, { streams, tail: query.tail, maxQueuedBytes: deps.followBufferBytes });
      return;
    }
    res.json(outputSnapshot(entry, streams, query.tail));
  });
}
