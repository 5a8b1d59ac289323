import type { Queryable } from '../platform/database/db.js';
import type { Logger } from '../platform/telemetry/logger.js';

/** One table's deletion: a statement taking ($1 retention seconds, $2 batch) and its retention. */
export interface RetentionSweep {
  name: string;
  /** Deletes at most $2 rows past $1 seconds; trusted SQL (never from input). */
  sql: string;
  retentionSeconds: number;
}

/** The most DELETEs of one sweep per round; the next round goes on (bounded work per tick). */
const MAX_BATCHES_PER_ROUND = 100;

/** Rows older than $1 seconds by `timeColumn`, oldest first, $2 at a time (an index on it). */
function byAge(table: string, key: string, timeColumn: string): string {
  return `DELETE FROM ${table} WHERE ${key} IN (
            SELECT ${key} FROM ${table}
             WHERE ${timeColumn} < now() - make_interval(secs => $1::float8)
             ORDER BY ${timeColumn} LIMIT $2)`;
}

/**
 * A dead job whose resource is final (the operator resolved it, or a replay settled it and the
 * job was deleted then) is deleted $1 seconds after the resource became final; a dead job of an
 * unresolved payment or refund is the replay handle of its dead letter (I7) and is kept.
 * SKIP LOCKED and the state re-checked: a replay reviving the job wins.
 */
function deadJobs(table: string, key: string, resource: string, finalStates: string): string {
  return `DELETE FROM ${table} WHERE state = 'dead' AND ${key} IN (
            SELECT j.${key} FROM ${table} j JOIN ${resource} r ON r.id = j.${key}
             WHERE j.state = 'dead' AND r.status IN (${finalStates})
               AND r.updated_at < now() - make_interval(secs => $1::float8)
             LIMIT $2 FOR UPDATE OF j SKIP LOCKED)`;
}

/**
 * The settlement role's tables: processed event ids (dedup), resolved dead jobs and the
 * merchants' copies of their events (GET /events, DESIGN 129).
 */
export function settlementSweeps(retention: {
  processedEventSeconds: number;
  deadJobSeconds: number;
  merchantEventSeconds: number;
}): RetentionSweep[] {
  return [
    {
      name: 'merchant_events',
      sql: byAge('merchant_events', 'event_id', 'created_at'),
      retentionSeconds: retention.merchantEventSeconds,
    },
    {
      name: 'processed_events',
      sql: byAge('processed_events', 'event_id', 'processed_at'),
      retentionSeconds: retention.processedEventSeconds,
    },
    {
      name: 'settlement_jobs (dead, payment final)',
      sql: deadJobs('settlement_jobs', 'payment_id', 'payments', `'settled', 'failed'`),
      retentionSeconds: retention.deadJobSeconds,
    },
    {
      name: 'refund_jobs (dead, refund final)',
      sql: deadJobs('refund_jobs', 'refund_id', 'refunds', `'succeeded', 'failed'`),
      retentionSeconds: retention.deadJobSeconds,
    },
  ];
}

/**
 * The acquirer role's books: charges, refunds, holds' answers and the log of every call; a hold
 * once it was captured or voided (one still held is what its capture or void reads).
 */
export function acquirerBookSweeps(retentionSeconds: number): RetentionSweep[] {
  return [
    ...[
      ['acquirer_simulator_calls', 'id'],
      ['acquirer_simulator_charges', 'idempotency_key'],
      ['acquirer_simulator_refunds', 'idempotency_key'],
      ['acquirer_simulator_refund_calls', 'id'],
      ['acquirer_simulator_hold_operations', 'idempotency_key'],
      ['acquirer_simulator_hold_calls', 'id'],
    ].map(([table = '', key = '']) => ({
      name: table,
      sql: byAge(table, key, 'created_at'),
      retentionSeconds,
    })),
    {
      name: 'acquirer_simulator_holds (decided)',
      sql: `DELETE FROM acquirer_simulator_holds WHERE state <> 'held' AND payment_id IN (
              SELECT payment_id FROM acquirer_simulator_holds
               WHERE state <> 'held' AND updated_at < now() - make_interval(secs => $1::float8)
               ORDER BY updated_at LIMIT $2)`,
      retentionSeconds,
    },
  ];
}

export interface RetentionReaper {
  /** Deletes what is past retention now, batch by batch (bounded); rows deleted per sweep. */
  runOnce: () => Promise<Record<string, number>>;
  /** Stops the interval and waits for a round in progress. */
  stop: () => Promise<void>;
}

/**
 * Runs `sweeps` every `intervalMs` (the pattern of the idempotency and webhook-event reapers):
 * each a batch at a time so no statement holds many locks, rounds never overlap, a failed round
 * is logged and the next one retries.
 */
export function startRetentionReaper(
  db: Queryable,
  logger: Logger,
  sweeps: readonly RetentionSweep[],
  options: { batch: number; intervalMs: number },
): RetentionReaper {
  async function runOnce(): Promise<Record<string, number>> {
    const deleted: Record<string, number> = {};
    for (const sweep of sweeps) {
      let total = 0;
      for (let batch = 0; batch < MAX_BATCHES_PER_ROUND; batch++) {
        const { rowCount } = await db.query(sweep.sql, [sweep.retentionSeconds, options.batch]);
        total += rowCount ?? 0;
        if ((rowCount ?? 0) < options.batch) break;
      }
      deleted[sweep.name] = total;
    }
    return deleted;
  }

  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= runOnce()
      .then((deleted) => {
        if (Object.values(deleted).some((n) => n > 0)) {
          logger.info({ deleted }, 'rows past retention deleted');
        }
      })
      .catch((error: unknown) => {
        logger.warn({ err: error }, 'retention reaper failed; will retry');
      })
      .finally(() => {
        running = undefined;
      });
  }, options.intervalMs);
  timer.unref();

  return {
    runOnce,
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
