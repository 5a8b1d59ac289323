import type pg from 'pg';

export interface SettleLatency {
  payments: number;
  /** Still pending or processing when the drain wait ended (0 when everything settled). */
  unsettled: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  /**
   * Where the time went, p50 and p99 of each stage (ms): `relay` created -> on Kafka (the
   * payment.created outbox row's published_at), `consumer` on Kafka -> recorded as a job
   * (processed_events.processed_at), `worker` recorded -> settled (updated_at).
   */
  stages: Record<'relay' | 'consumer' | 'worker', { p50: number; p99: number }>;
  /**
   * The run cut into WINDOW_SECONDS windows by acceptance time: where the tail sits (a step
   * from idle to a rate the machine barely holds queues for seconds before it settles down).
   */
  windows: SettleWindow[];
}

export interface SettleWindow {
  /** Seconds from the run's start to the window's start. */
  fromSecond: number;
  payments: number;
  p99: number;
}

/** The width of a SettleLatency window. */
export const WINDOW_SECONDS = 10;

/** Accepted-to-settled percentiles (nearest rank, ms) of the payments created in [from, to]. */
export async function settleLatency(
  pool: pg.Pool,
  from: Date,
  to: Date,
): Promise<Omit<SettleLatency, 'unsettled'>> {
  const { rows } = await pool.query<{ n: number; p: (number | null)[] | null; max: number | null }>(
    `SELECT count(*)::int AS n,
            percentile_disc(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY ms) AS p,
            max(ms) AS max
       FROM (SELECT extract(epoch FROM updated_at - created_at)::float8 * 1000 AS ms
               FROM payments WHERE status = 'settled' AND created_at BETWEEN $1 AND $2) t`,
    [from, to],
  );
  const row = rows[0];
  const round = (value: number | null | undefined) => Math.round((value ?? Number.NaN) * 10) / 10;
  // Fresh tables have no statistics yet; without them the planner nests loops over the join.
  await pool.query('ANALYZE payments, outbox, processed_events');
  const stage = await pool.query<{
    relay: number[] | null;
    consumer: number[] | null;
    worker: number[] | null;
  }>(
    `SELECT percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY relay) AS relay,
            percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY consumer) AS consumer,
            percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY worker) AS worker
       FROM (SELECT extract(epoch FROM o.published_at - p.created_at)::float8 * 1000 AS relay,
                    extract(epoch FROM e.processed_at - o.published_at)::float8 * 1000 AS consumer,
                    extract(epoch FROM p.updated_at - e.processed_at)::float8 * 1000 AS worker
               FROM payments p
               JOIN outbox o ON o.aggregate_id = p.id AND o.event_type = 'payment.created'
               JOIN processed_events e ON e.payment_id = p.id AND e.event_type = 'payment.created'
              WHERE p.status = 'settled' AND p.created_at BETWEEN $1 AND $2) t`,
    [from, to],
  );
  const windows = await pool.query<{ from_second: number; n: number; p99: number | null }>(
    `SELECT floor(extract(epoch FROM created_at - $1::timestamptz) / $3::int)::int * $3::int AS from_second,
            count(*)::int AS n,
            percentile_disc(0.99) WITHIN GROUP (
              ORDER BY extract(epoch FROM updated_at - created_at)::float8 * 1000) AS p99
       FROM payments WHERE status = 'settled' AND created_at BETWEEN $1 AND $2
      GROUP BY 1 ORDER BY 1`,
    [from, to, WINDOW_SECONDS],
  );
  const pair = (values: number[] | null | undefined) => ({
    p50: round(values?.[0]),
    p99: round(values?.[1]),
  });
  const stages = stage.rows[0];
  return {
    stages: {
      relay: pair(stages?.relay),
      consumer: pair(stages?.consumer),
      worker: pair(stages?.worker),
    },
    windows: windows.rows.map((w) => ({
      fromSecond: w.from_second,
      payments: w.n,
      p99: round(w.p99),
    })),
    payments: row?.n ?? 0,
    p50: round(row?.p?.[0]),
    p95: round(row?.p?.[1]),
    p99: round(row?.p?.[2]),
    max: round(row?.max),
  };
}
