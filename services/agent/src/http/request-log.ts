import type { RequestHandler } from 'express';
import { requestIdOf, type Logger } from '@sbx/service-kit';
import type { AgentMetrics } from '../domain/metrics/agent-metrics.js';
import { findCapability } from './capability.js';

/** One line per request: who (jti, sub), what (route), outcome (status, bytes, duration). Never the token. */
export function requestLog(
  logger: Logger,
  now: () => number,
  metrics?: Pick<AgentMetrics, 'bytesMoved'>,
): RequestHandler {
  return (req, res, next) => {
    const started = now();
    // Socket counters include headers and work for streamed bodies; requests on one socket do not overlap.
    const readAtStart = req.socket.bytesRead;
    const writtenAtStart = req.socket.bytesWritten;
    res.on('finish', () => {
      const capability = findCapability(res);
      const bytesIn = req.socket.bytesRead - readAtStart;
      const bytesOut = req.socket.bytesWritten - writtenAtStart;
      metrics?.bytesMoved('in', bytesIn);
      metrics?.bytesMoved('out', bytesOut);
      logger.info(
        {
          request_id: requestIdOf(res),
          method: req.method,
          route: req.path,
          status: res.statusCode,
          bytes_in: bytesIn,
          bytes_out: bytesOut,
          duration_ms: now() - started,
          jti: capability?.claims.jti,
          sub: capability?.claims.sub,
        },
        'request',
      );
    });
    next();
  };
}
