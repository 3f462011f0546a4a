// HTTP hardening both services share (docs/security.md, "Hardening"): security
// headers, a CORS allowlist, the Origin check of WebSocket upgrades, and the
// Node server's size limits and timeouts. Small code of our own rather than
// helmet/cors: these are a handful of fixed headers and one allowlist.
import type { Server } from 'node:http';
import type { RequestHandler } from 'express';
import { z } from 'zod';

export interface SecurityHeaderOptions {
  /** Strict-Transport-Security max-age; absent: no HSTS (only behind TLS). */
  readonly hstsMaxAgeSeconds?: number | undefined;
}

/** nosniff, no referrer, no framing, no caching of API answers (they may carry tokens). */
export function securityHeaders(options: SecurityHeaderOptions = {}): RequestHandler {
  return (_req, res, next) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'");
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
    if (options.hstsMaxAgeSeconds !== undefined && options.hstsMaxAgeSeconds > 0) {
      res.setHeader('Strict-Transport-Security', `max-age=${options.hstsMaxAgeSeconds}; includeSubDomains`);
    }
    next();
  };
}

/** An origin as browsers send it: scheme, host and port, nothing else. */
function canonicalOrigin(value: string): string | undefined {
  try {
    const url = new URL(value);
    return url.origin === 'null' ? undefined : url.origin;
  } catch {
    return undefined;
  }
}

/** `CORS_ALLOWED_ORIGINS` / `WS_ALLOWED_ORIGINS`: comma-separated origins; empty or absent: none. */
export const envOriginList = z
  .string()
  .optional()
  .transform((value, ctx): readonly string[] => {
    const origins: string[] = [];
    for (const item of (value ?? '').split(',').map((s) => s.trim())) {
      if (item === '') continue;
      const origin = canonicalOrigin(item);
      if (origin === undefined || !/^https?:/.test(origin)) {
        ctx.addIssue({ code: 'custom', message: `"${item}" is not an http(s) origin` });
        continue;
      }
      origins.push(origin);
    }
    return origins;
  });

/** True when the `Origin` header names an allowed origin (exact match after canonicalisation). */
export function originAllowed(origin: string, allowed: readonly string[]): boolean {
  const canonical = canonicalOrigin(origin);
  return canonical !== undefined && allowed.includes(canonical);
}

export interface CorsOptions {
  readonly allowedOrigins: readonly string[];
  /** Preflight cache, seconds (default 600). */
  readonly maxAgeSeconds?: number;
}

const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE';
const ALLOWED_HEADERS = 'Authorization, Content-Type, Idempotency-Key, X-Request-Id';
const EXPOSED_HEADERS = 'X-Request-Id, Retry-After, WWW-Authenticate';

/**
 * CORS for the allowlisted origins only: no allowlist, no CORS headers at all (browsers then
 * refuse cross-origin reads). Preflights from an allowed origin answer 204; others fall through
 * to the routes (which answer 404 to OPTIONS) without any Access-Control header.
 */
export function corsAllowlist(options: CorsOptions): RequestHandler {
  const maxAge = String(options.maxAgeSeconds ?? 600);
  return (req, res, next) => {
    const origin = req.get('origin');
    if (options.allowedOrigins.length === 0 || origin === undefined) {
      next();
      return;
    }
    res.vary('Origin');
    if (!originAllowed(origin, options.allowedOrigins)) {
      next();
      return;
    }
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    if (req.method === 'OPTIONS' && req.get('access-control-request-method') !== undefined) {
      res.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS);
      res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
      res.setHeader('Access-Control-Max-Age', maxAge);
      res.status(204).end();
      return;
    }
    next();
  };
}

export interface ServerLimits {
  /** Whole request head must arrive within this (slowloris). */
  readonly headersTimeoutMs: number;
  /** Whole request (head and body) must arrive within this; 0 disables (long uploads). */
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = Object.freeze({
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 300_000,
  keepAliveTimeoutMs: 5_000,
});

/** Request head size limit for `createServer({ maxHeaderSize })`: 16 KiB, Node's own default, made explicit. */
export const MAX_HEADER_BYTES = 16 * 1024;

/** Sets the server's timeouts explicitly rather than trusting Node's version-dependent defaults. */
export function applyServerLimits(server: Server, limits: ServerLimits = DEFAULT_SERVER_LIMITS): void {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
}
