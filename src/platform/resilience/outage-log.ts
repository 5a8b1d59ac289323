// From pino, not logger.ts: logger.ts -> tracing.ts -> this file would close a circle.
import type { Logger } from 'pino';

/**
 * The log lines of one dependency's outages: a warning when it starts, another at most once per
 * interval while it lasts (with how many failures were not logged), and one line when it ends
 * with its duration. An outage then costs a handful of lines however many requests hit it.
 */
export interface OutageLog {
  /** A call to the dependency failed. The error's message is logged, never its stack. */
  failed(error: unknown, fields?: Record<string, unknown>): void;
  /** A call to the dependency succeeded: ends the outage, if there was one. */
  succeeded(): void;
  /** Whether an outage is in progress (a failure not yet followed by a success). */
  readonly down: boolean;
}

export function createOutageLog(
  name: string,
  logger: Logger,
  intervalMs: number,
  now: () => number = Date.now,
): OutageLog {
  let startedAt: number | null = null;
  let lastLoggedAt = 0;
  let failures = 0;
  let unlogged = 0;

  return {
    failed(error, fields = {}) {
      const at = now();
      failures++;
      if (startedAt === null) {
        startedAt = at;
        lastLoggedAt = at;
        unlogged = 0;
        logger.warn({ dependency: name, error: describe(error), ...fields }, `${name} unavailable`);
        return;
      }
      if (at - lastLoggedAt < intervalMs) {
        unlogged++;
        return;
      }
      logger.warn(
        {
          dependency: name,
          error: describe(error),
          down_for_ms: at - startedAt,
          failures_since_last_line: unlogged + 1,
          ...fields,
        },
        `${name} still unavailable`,
      );
      lastLoggedAt = at;
      unlogged = 0;
    },
    succeeded() {
      if (startedAt === null) return;
      logger.info(
        { dependency: name, down_for_ms: now() - startedAt, failures },
        `${name} available again`,
      );
      startedAt = null;
      failures = 0;
      unlogged = 0;
    },
    get down() {
      return startedAt !== null;
    },
  };
}

/** The error's class and message, one line: an outage's stack says nothing the message does not. */
function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return `${error.name}${typeof code === 'string' ? ` ${code}` : ''}: ${error.message}`;
  }
  return String(error);
}
