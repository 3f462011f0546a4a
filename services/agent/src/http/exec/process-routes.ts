import express, { type Request, type Router } from 'express';
import {
  parseOrThrow,
  SbxError,
  toTimestamp,
  ProcessSignalRequest,
  ProcessStartRequest,
  ProcessStdinRequest,
  type ProcessList,
  type ProcessStartResponse,
  type ProcessStdinResponse,
} from '@sbx/protocol';
import { jsonBodyOf, type Logger } from '@sbx/service-kit';
import { commandTextOf, type CommandLog } from '../../domain/commands/command-log.js';
import { programLabel } from '../../domain/exec/command.js';
import { decodeData } from '../../domain/exec/byte-encoding.js';
import type { ProcessRegistry } from '../../domain/processes/process-registry.js';
import { capabilityOf, requireCapability } from '../capability.js';
import { beginCommand, loggedStart, outcomeOf } from './command-logging.js';
import type { ResolvedExecOptions } from './exec-options.js';
import { processInfoOf } from './process-view.js';

export interface ProcessRouteDeps {
  readonly registry: ProcessRegistry;
  readonly options: ResolvedExecOptions;
  readonly logger: Logger;
  readonly commandLog: CommandLog;
}

/** The `{id}` of a `/v1/processes/{id}…` path. */
export function processIdOf(req: Request): string {
  const id = req.params['id'];
  if (typeof id !== 'string') throw new SbxError('NOT_FOUND', 'no such process');
  return id;
}

/** Background processes: start, list, inspect, feed stdin, signal, kill. */
export function mountProcessRoutes(router: Router, deps: ProcessRouteDeps): void {
  const { registry } = deps;
  const json = express.json({ limit: deps.options.maxRequestBytes });
  const needsProcess = requireCapability('process');

  router.post('/v1/processes', needsProcess, json, async (req, res) => {
    const body = parseOrThrow(ProcessStartRequest, jsonBodyOf(req));
    const capability = capabilityOf(res);
    const sub = capability.claims.sub;
    const logged = beginCommand(deps.commandLog, capability, {
      route: 'process',
      command: commandTextOf(body),
    });
    const entry = await loggedStart(logged, registry.start({ ...body, startedBy: sub }));
    void entry.exited.then((status) => logged.end(outcomeOf(status, false)));
    deps.logger.info(
      { process_id: entry.id, program: programLabel(body), sub },
      'background process started',
    );
    const started: ProcessStartResponse = {
      process_id: entry.id,
      pid: entry.pid,
      started_at: toTimestamp(entry.info.startedAt),
    };
    res.status(201).json(started);
  });

  router.get('/v1/processes', needsProcess, (_req, res) => {
    const list: ProcessList = { processes: registry.list().map(processInfoOf) };
    res.json(list);
  });

  router.get('/v1/processes/:id', needsProcess, (req, res) => {
    res.json(processInfoOf(registry.get(processIdOf(req))));
  });

  router.post('/v1/processes/:id/stdin', needsProcess, json, (req, res) => {
    const entry = registry.get(processIdOf(req));
    const body = parseOrThrow(ProcessStdinRequest, jsonBodyOf(req));
    const bytes = decodeData(body.data, body.encoding);
    if (!entry.running) throw new SbxError('CONFLICT', 'the process has exited');
    if (bytes.length > 0) entry.writeStdin(bytes);
    if (body.eof === true) entry.endStdin();
    const written: ProcessStdinResponse = {
      process_id: entry.id,
      written_bytes: bytes.length,
      stdin_open: entry.stdinOpen,
    };
    res.json(written);
  });

  router.post('/v1/processes/:id/signal', needsProcess, json, (req, res) => {
    const entry = registry.get(processIdOf(req));
    const body = parseOrThrow(ProcessSignalRequest, jsonBodyOf(req));
    if (!entry.signal(body.signal)) throw new SbxError('CONFLICT', 'the process has exited');
    res.json(processInfoOf(entry));
  });

  router.delete('/v1/processes/:id', needsProcess, async (req, res) => {
    const entry = await registry.remove(processIdOf(req));
    res.json(processInfoOf(entry));
  });
}
