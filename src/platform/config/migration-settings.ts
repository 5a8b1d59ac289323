import { integer } from './config-fields.js';

/**
 * How `npm run migrate` treats a live database (part of configSchema; issue 28, docs/development.md
 * "Writing a migration"). Each migration runs in its own transaction with these timeouts set for
 * it alone, and a migration refused a lock (SQLSTATE 55P03) is retried after a backoff.
 */
/** The defaults, also used by callers that migrate without a loaded config (tests, tools). */
export const MIGRATION_DEFAULTS = {
  lockTimeoutMs: 2_000,
  statementTimeoutMs: 600_000,
  lockRetries: 10,
} as const;

export const migrationSettings = {
  /**
   * While a DDL statement waits for its lock, every query on that table queues behind it. The
   * wait is capped well under REQUEST_DEADLINE_MS (5 s), so POSTs queued behind a refused ALTER
   * still answer in time instead of 503; the migration is retried rather than left queued.
   */
  MIGRATION_LOCK_TIMEOUT_MS: integer(100, 60_000)
    .default(MIGRATION_DEFAULTS.lockTimeoutMs)
    .describe(
      "Longest one migration statement waits for a table lock before giving up (then retried): the most it can stall that table's traffic.",
    ),
  /**
   * A migration statement that runs longer is an unplanned table rewrite or a backfill that
   * should be batched. An index built CONCURRENTLY on a large table may need more: raise it for
   * that run. Keep it at or under MIGRATION_QUERY_TIMEOUT_MS, the client-side bound.
   */
  MIGRATION_STATEMENT_TIMEOUT_MS: integer(1_000, 86_400_000)
    .default(MIGRATION_DEFAULTS.statementTimeoutMs)
    .describe(
      'Longest one migration statement may run (Postgres cancels it); raise it for a long CONCURRENTLY index build.',
    ),
  /**
   * Retries after a lock timeout, with full-jitter backoff from 1 s doubling to a 30 s cap: 10
   * retries wait about 2 minutes in all, long enough for a batch or report transaction to end,
   * short enough that a stuck blocker fails the deploy visibly.
   */
  MIGRATION_LOCK_RETRIES: integer(0, 100)
    .default(MIGRATION_DEFAULTS.lockRetries)
    .describe(
      'How many times a migration refused a lock (55P03) is retried, with backoff (1 s doubling to 30 s), before `npm run migrate` fails.',
    ),
};
