import type { Router } from 'express';
import { CommandLogQuery, parseOrThrow } from '@sbx/protocol';
import type { CommandLog } from '../../domain/commands/command-log.js';
import { requireCapability } from '../capability.js';
import { commandLogPageOf } from './command-logging.js';

/**
 * `GET /v1/commands/log?after=&limit=`: the programs this agent started, oldest first
 * (docs/command-log.md). Either `fs:ro` or `process` may read it.
 */
export function mountCommandLogRoute(router: Router, log: CommandLog): void {
  router.get('/v1/commands/log', requireCapability('fs:ro', 'process'), (req, res) => {
    const query = parseOrThrow(CommandLogQuery, req.query, 'query');
    res.json(commandLogPageOf(log.page(query)));
  });
}
