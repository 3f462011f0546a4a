// The sandbox resources (docs/sandboxes.md): list, inspect, create, rename, start, stop
// and delete, each behind the caller scope of its kind of operation. The data-plane
// routes (files, commands, logs, sessions) are in sandbox-relay-routes.ts.
import express, { Router } from 'express';
import {
  CreateSandboxRequest,
  SandboxListQuery,
  SandboxPathParams,
  UpdateSandboxRequest,
  parseOrThrow,
} from '@sbx/protocol';
import type { SandboxResources } from '../../domain/sandboxes/sandbox-resources.js';
import { principalOf } from '../auth/caller-auth-middleware.js';
import { bodyOf, callContext, pathOf, rateLimit, type SessionHttpDeps } from '../sessions/route-kit.js';
import { needs } from './caller-scope.js';

export interface SandboxRoutesDeps extends SessionHttpDeps {
  readonly resources: SandboxResources;
}

const ONE = '/v1/sandboxes/:id';
const id = (req: express.Request): string => pathOf(SandboxPathParams, req).id;

export function sandboxRoutes(deps: SandboxRoutesDeps): Router {
  const { resources, authenticate } = deps;
  const router = Router();
  const limit = rateLimit(deps, 'session', 'session.get');

  router.get('/v1/sandboxes', authenticate, limit, needs('read:sandbox'), async (req, res) => {
    const query = parseOrThrow(SandboxListQuery, { ...req.query }, 'query');
    res.json(await resources.list(principalOf(res), query));
  });
  router.post(
    '/v1/sandboxes',
    authenticate,
    rateLimit(deps, 'negotiate', 'session.negotiate'),
    needs('write:sandbox'),
    async (req, res) => {
      res.status(201).json(await resources.create(callContext(res), bodyOf(CreateSandboxRequest, req)));
    },
  );
  router.get(ONE, authenticate, limit, needs('read:sandbox'), async (req, res) => {
    res.json(await resources.get(principalOf(res), id(req)));
  });
  router.patch(ONE, authenticate, limit, needs('write:sandbox'), async (req, res) => {
    res.json(await resources.update(principalOf(res), id(req), bodyOf(UpdateSandboxRequest, req)));
  });
  router.post(`${ONE}/start`, authenticate, limit, needs('write:sandbox'), async (req, res) => {
    res.json(await resources.start(callContext(res), id(req)));
  });
  router.post(`${ONE}/stop`, authenticate, limit, needs('write:sandbox'), async (req, res) => {
    res.json(await resources.stop(callContext(res), id(req)));
  });
  router.delete(ONE, authenticate, limit, needs('write:sandbox'), async (req, res) => {
    await resources.delete(callContext(res), id(req));
    res.status(204).end();
  });
  return router;
}
