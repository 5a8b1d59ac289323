import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pinoHttp } from 'pino-http';
import type { Logger } from '../platform/logger.js';

/** A client-supplied id is kept when it is short visible ASCII, so traces join across systems. */
const REQUEST_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * Gives every request an id (the client's X-Request-Id or a new UUID), echoes it in the
 * response, and binds it to `req.log` so every line logged for the request carries it.
 */
export function requestLogger(logger: Logger) {
  return pinoHttp({
    logger,
    genReqId: (req: IncomingMessage, res: ServerResponse) => {
      const given = req.headers[REQUEST_ID_HEADER];
      const id = typeof given === 'string' && REQUEST_ID_PATTERN.test(given) ? given : randomUUID();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    customAttributeKeys: { reqId: 'request_id' },
    // Probes hit these every few seconds; logging them would drown the useful lines.
    autoLogging: { ignore: (req) => req.url === '/healthz' || req.url === '/readyz' },
    customLogLevel: (_req, res, error) => {
      if (error !== undefined || res.statusCode >= 500) return 'error';
      if (res.statusCode >= 400) return 'warn';
      return 'info';
    },
    serializers: {
      req: (req: { id: unknown; method: unknown; url: unknown }) => ({
        id: req.id,
        method: req.method,
        url: req.url,
      }),
      res: (res: { statusCode: unknown }) => ({ statusCode: res.statusCode }),
    },
  });
}
