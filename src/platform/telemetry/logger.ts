import { pino, type Logger } from 'pino';
import type { Config } from '../config/config.js';
import { activeTraceIds } from './tracing.js';

export type { Logger } from 'pino';

/**
 * Paths never written to a log line: credentials and anything card-like. Query parameters are
 * never logged at all (see db.ts), so they need no entry here.
 */
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'api_key',
  '*.api_key',
  'password',
  '*.password',
];

export function createLogger(
  config: Pick<Config, 'LOG_LEVEL' | 'LOG_FORMAT'>,
  bindings: Record<string, string> = {},
): Logger {
  return pino({
    level: config.LOG_LEVEL,
    base: { pid: process.pid, ...bindings },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    // trace_id/span_id of the active sampled span, so a line leads to its trace.
    mixin: activeTraceIds,
    ...(config.LOG_FORMAT === 'pretty'
      ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } }
      : {}),
  });
}
