// The agent's programs (docs/protocol.md#exec-and-processes, services/agent/src/http/exec):
// one-shot exec, code snippets, background processes and the command log.
import { z } from 'zod';
import type { AgentRouteSpec } from './agent-route-spec.js';
import { CodeRunRequest, CodeRunResponse } from './code-run.js';
import { CommandLogPage, CommandLogQuery } from './command-log.js';
import {
  ExecRequest,
  ExecResponse,
  FollowExitLine,
  FollowOutputLine,
  ProcessInfo,
  ProcessList,
  ProcessOutputQuery,
  ProcessOutputResponse,
  ProcessPathParams,
  ProcessSignalRequest,
  ProcessStartRequest,
  ProcessStartResponse,
  ProcessStdinRequest,
  ProcessStdinResponse,
} from './dataplane-exec.js';
import type { ErrorCode } from './errors.js';

const NoParams = z.strictObject({});

const AUTH = ['UNAUTHENTICATED', 'CAPABILITY_DENIED', 'BACKEND_UNAVAILABLE'] as const;
/**
 * Starting a program: a bad body or cwd (400), a cwd the kernel or the guard refuses (403) or
 * that does not exist (404), a body over the limit (413), no free process slot (429).
 */
const START = [
  'BAD_REQUEST',
  ...AUTH,
  'FORBIDDEN',
  'NOT_FOUND',
  'PAYLOAD_TOO_LARGE',
  'RATE_LIMITED',
] as const satisfies readonly ErrorCode[];
/** A process by id: unknown or forgotten (404). */
const BY_ID = [...AUTH, 'NOT_FOUND'] as const satisfies readonly ErrorCode[];
/** Stdin and signals: a bad body (400, 413), the process has exited (409). */
const TO_PROCESS = [
  'BAD_REQUEST',
  ...BY_ID,
  'CONFLICT',
  'PAYLOAD_TOO_LARGE',
] as const satisfies readonly ErrorCode[];

export const AGENT_EXEC_ROUTES = {
  exec: {
    method: 'POST',
    path: '/v1/exec',
    summary: 'Run one program to completion (argv directly, or cmd with sh -c) and answer its output',
    scopes: ['process'],
    params: NoParams,
    body: ExecRequest,
    response: ExecResponse,
    errors: START,
  },
  runCode: {
    method: 'POST',
    path: '/v1/code',
    summary: 'Run a Python, JavaScript or bash snippet as pure compute and answer its redacted output',
    scopes: ['process'],
    params: NoParams,
    body: CodeRunRequest,
    response: CodeRunResponse,
    errors: START,
  },
  startProcess: {
    method: 'POST',
    path: '/v1/processes',
    summary: 'Start a background process',
    scopes: ['process'],
    params: NoParams,
    body: ProcessStartRequest,
    response: ProcessStartResponse,
    statuses: [201],
    errors: START,
  },
  listProcesses: {
    method: 'GET',
    path: '/v1/processes',
    summary: 'Background processes, running and recently exited',
    scopes: ['process'],
    params: NoParams,
    response: ProcessList,
    errors: AUTH,
  },
  getProcess: {
    method: 'GET',
    path: '/v1/processes/{id}',
    summary: 'One background process',
    scopes: ['process'],
    params: ProcessPathParams,
    response: ProcessInfo,
    errors: BY_ID,
  },
  processOutput: {
    method: 'GET',
    path: '/v1/processes/{id}/output',
    summary: 'Buffered output; with follow=true NDJSON output lines until one exit line',
    scopes: ['process'],
    params: ProcessPathParams,
    query: ProcessOutputQuery,
    response: ProcessOutputResponse,
    produces: { 'application/x-ndjson': z.union([FollowOutputLine, FollowExitLine]) },
    errors: ['BAD_REQUEST', ...BY_ID],
  },
  processStdin: {
    method: 'POST',
    path: '/v1/processes/{id}/stdin',
    summary: "Write to a running process's stdin; eof=true closes it",
    scopes: ['process'],
    params: ProcessPathParams,
    body: ProcessStdinRequest,
    response: ProcessStdinResponse,
    errors: TO_PROCESS,
  },
  signalProcess: {
    method: 'POST',
    path: '/v1/processes/{id}/signal',
    summary: "Send a signal to a running process's group",
    scopes: ['process'],
    params: ProcessPathParams,
    body: ProcessSignalRequest,
    response: ProcessInfo,
    errors: TO_PROCESS,
  },
  removeProcess: {
    method: 'DELETE',
    path: '/v1/processes/{id}',
    summary: 'Kill the process if it runs, wait for it, and forget it',
    scopes: ['process'],
    params: ProcessPathParams,
    response: ProcessInfo,
    errors: BY_ID,
  },
  commandLog: {
    method: 'GET',
    path: '/v1/commands/log',
    summary: 'The programs this agent started, oldest first, paginated by seq',
    scopes: ['fs:ro', 'process'],
    params: NoParams,
    query: CommandLogQuery,
    response: CommandLogPage,
    errors: ['BAD_REQUEST', ...AUTH],
  },
} as const satisfies Record<string, AgentRouteSpec>;
