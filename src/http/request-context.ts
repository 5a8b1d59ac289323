import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../platform/telemetry/logger.js';

/** A client-supplied id is kept when it is short visible ASCII, so traces join across systems. */
const REQUEST_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** Probes hit these every few seconds; logging them would drown the useful lines. */
const UNLOGGED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Per-request logging context. Fields bound during the request (merchant, idempotency key,
 * payment id) appear on every line logged for it and on its access-log line. The child logger
 * is created only when something is logged: on the hot path most requests log nothing but
 * their access line, and creating a pino child per request is measurable at thousands/s.
 */
export class RequestContext {
  private readonly bindings: Record<string, unknown>;
  private child: Logger | undefined;

  constructor(
    readonly id: string,
    private readonly logger: Logger,
  ) {
    this.bindings = { request_id: id };
  }

  bind(fields: Record<string, unknown>): void {
    Object.assign(this.bindings, fields);
    this.child = undefined;
  }

  get log(): Logger {
    this.child ??= this.logger.child(this.bindings);
    return this.child;
  }

  fields(): Record<string, unknown> {
    return this.bindings;
  }
}

declare module 'express-serve-static-core' {
  interface Request {
    ctx: RequestContext;
  }
}

/**
 * Gives every request an id (the client's X-Request-Id or a new UUID), echoes it in the
 * response, and writes one access-log line when the response finishes: info, or error for a 5xx
 * other than 503.
 */
export function requestContext(logger: Logger) {
  const accessLog = logger.isLevelEnabled('info');
  return (req: Request, res: Response, next: NextFunction): void => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID_PATTERN.test(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', id);
    req.ctx = new RequestContext(id, logger);
    if (accessLog && !UNLOGGED_PATHS.has(req.path)) {
      const started = performance.now();
      res.once('finish', () => {
        const line = {
          ...req.ctx.fields(),
          method: req.method,
          url: req.originalUrl,
          status: res.statusCode,
          response_time_ms: Math.round((performance.now() - started) * 10) / 10,
        };
        // A 503 is deliberate (a dependency is down, logged once per interval by its outage
        // log), not a failure of this service: info, so an outage does not flood the warnings.
        if (res.statusCode >= 500 && res.statusCode !== 503) logger.error(line, 'request failed');
        else logger.info(line, 'request completed');
      });
    }
    next();
  };
}
