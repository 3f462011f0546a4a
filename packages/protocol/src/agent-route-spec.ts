import type { z } from 'zod';
import type { ErrorCode } from './errors.js';
import type { WsEndpoint } from './frames.js';
import type { CapabilityScope } from './scopes.js';

/**
 * One HTTP route of the agent (the data plane) with its schemas: what the agent validates
 * with and answers, what the SDK sends, and what docs/openapi-agent.json is generated from.
 * The agent's Express routers stay where they are (services/agent/src/http); a test there
 * checks that they serve exactly these routes.
 */
export interface AgentRouteSpec {
  readonly method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';
  /** OpenAPI-style path template; `{path}` of `/files/{path}` may span several segments. */
  readonly path: string;
  readonly summary: string;
  /**
   * The capability token must grant one of these (implied scopes count: `fs:rw` covers
   * `fs:ro`). Empty: any valid token of the sandbox.
   */
  readonly scopes: readonly CapabilityScope[];
  /** Ways in besides a bearer capability token (docs/protocol.md#dataplane). */
  readonly alsoAuth?: readonly AgentAlternativeAuth[];
  readonly params: z.ZodType;
  readonly query?: z.ZodType;
  /** Request headers the route honours (ranges, conditional requests). */
  readonly headers?: readonly AgentRequestHeader[];
  /** A JSON body, or `bytes`: the raw body is the file's new content. Absent: no body. */
  readonly body?: z.ZodType | 'bytes';
  /** The JSON success body. */
  readonly response?: z.ZodType;
  /** Success statuses, default `[200]` (`[204]` without `response` and `produces`). */
  readonly statuses?: readonly AgentSuccessStatus[];
  /**
   * Success bodies other than JSON, by media type: the schema of the body (for NDJSON, of
   * one line), or `bytes` / `text` for an opaque one.
   */
  readonly produces?: Readonly<Record<string, z.ZodType | 'bytes' | 'text'>>;
  /** The codes the route may answer, each with `ERROR_TABLE[code].status` (INTERNAL always). */
  readonly errors: readonly ErrorCode[];
}

/**
 * `anonymous`: no credential at all (a lesser answer); `signed-url`: `?sig=&exp=` instead of a
 * token (docs/protocol.md#signed-file-urls); `metrics-token`: the operator's AGENT_METRICS_TOKEN.
 */
export type AgentAlternativeAuth = 'anonymous' | 'signed-url' | 'metrics-token';

export type AgentRequestHeader = 'Range' | 'If-Range' | 'If-Match' | 'If-None-Match';

/** 206 and 304 are the file reads' partial and not-modified answers. */
export type AgentSuccessStatus = 200 | 201 | 204 | 206 | 304;

/**
 * One WebSocket endpoint of the agent: upgraded by `GET`, authenticated by its first frame
 * (`auth`, docs/protocol.md#first-frame-authentication), then frames of these unions.
 */
export interface AgentWsRouteSpec {
  readonly path: string;
  /** Other paths serving the same endpoint (`/ws` for the shell). */
  readonly aliases?: readonly string[];
  readonly endpoint: WsEndpoint;
  readonly summary: string;
  /** The `auth` frame's token must grant one of these. */
  readonly scopes: readonly CapabilityScope[];
  readonly clientFrames: z.ZodType;
  readonly serverFrames: z.ZodType;
  /** Close codes this endpoint uses besides the shared ones (WS_CLOSE_CODES), with when. */
  readonly closeCodes: Readonly<Record<number, string>>;
}
