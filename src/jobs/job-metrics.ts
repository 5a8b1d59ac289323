import type { QueryConfig } from 'pg';
import { Counter, Gauge } from 'prom-client';
import type { Queryable } from '../platform/database/db.js';
import { metricsRegistry } from '../platform/telemetry/metrics.js';
import {
  CLAIMABLE_AT,
  HOLD_JOBS,
  REFUND_JOBS,
  SETTLEMENT_JOBS,
  WEBHOOK_JOBS,
  type JobKind,
  type JobTable,
} from './job-table.js';

/** Each kind's job table: rows are `pending` (waiting for or between attempts) or `dead`. */
const JOB_TABLES: Readonly<Record<JobKind, JobTable>> = {
  settlement: SETTLEMENT_JOBS,
  refund: REFUND_JOBS,
  webhook: WEBHOOK_JOBS,
  hold: HOLD_JOBS,
};

/** Every kind of job, each reported from the start. */
export const JOB_KINDS = Object.keys(JOB_TABLES) as readonly JobKind[];

/** The states a job row can be in (the tables' CHECK constraint), each reported, 0 included. */
export const JOB_STATES = ['pending', 'dead'] as const;

/** How one attempt at a claimed job ended. */
export const JOB_ATTEMPT_OUTCOMES = [
  /** The work is done and the job is gone. */
  'completed',
  /** The attempt failed and the job is scheduled again after a backoff. */
  'retried',
  /**
   * Retries exhausted (or a permanent failure): the job is dead-lettered, or, for a kind that
   * gives up instead (webhooks), ended the kind's way and removed.
   */
  'dead',
  /** The claim's lease ran out before the write; the job belongs to another worker now. */
  'lease_lost',
  /** The attempt failed and even its failure could not be recorded (database down). */
  'step_failed',
] as const;
export type JobAttemptOutcome = (typeof JOB_ATTEMPT_OUTCOMES)[number];

/**
 * A scrape waits at most this long for the job tables; a frozen or unreachable Postgres then
 * costs one stale scrape (the last values are kept), never a hung /metrics. The same bound is
 * the probe query's client-side timeout, so a query that never answers gives its connection up.
 */
export const JOB_PROBE_TIMEOUT_MS = 2_000;

const jobs = new Gauge({
  name: 'jobs',
  help: 'Durable jobs by kind and state (pending, dead), read from the job tables at scrape time',
  labelNames: ['kind', 'state'] as const,
  registers: [metricsRegistry],
  async collect() {
    await refresh();
  },
});

const jobsReady = new Gauge({
  name: 'jobs_ready',
  help: 'Pending jobs claimable now (due and not leased), by kind, read at scrape time',
  labelNames: ['kind'] as const,
  registers: [metricsRegistry],
  async collect() {
    await refresh();
  },
});

const oldestReadyAge = new Gauge({
  name: 'jobs_oldest_ready_age_seconds',
  help: 'Seconds since the oldest claimable job became claimable (0 when none), by kind, read at scrape time',
  labelNames: ['kind'] as const,
  registers: [metricsRegistry],
  async collect() {
    await refresh();
  },
});

/**
 * Whether the last read of a kind's table answered (1) or failed or timed out (0). At 0 the job
 * gauges of that kind are stale, not zero: "unknown" (alert JobMetricsProbeFailing).
 */
const probeUp = new Gauge({
  name: 'jobs_probe_up',
  help: "Whether the last scrape-time read of the kind's job table answered (1) or failed or timed out (0: the job gauges are stale)",
  labelNames: ['kind'] as const,
  registers: [metricsRegistry],
  async collect() {
    await refresh();
  },
});

const attempts = new Counter({
  name: 'jobs_attempts_total',
  help: 'Attempts at claimed jobs by kind and outcome (completed, retried, dead, lease_lost, step_failed)',
  labelNames: ['kind', 'outcome'] as const,
  registers: [metricsRegistry],
});
// Every pair exported from the start, so a rate over any of them is defined.
for (const kind of JOB_KINDS) {
  for (const outcome of JOB_ATTEMPT_OUTCOMES) attempts.inc({ kind, outcome }, 0);
}

/** Counts one attempt at a `kind` job that ended with `outcome`. */
export function countJobAttempt(kind: JobKind, outcome: JobAttemptOutcome): void {
  attempts.inc({ kind, outcome });
}

interface JobTableStats {
  pending: number;
  dead: number;
  ready: number;
  oldest_ready_age_seconds: number;
}

/**
 * The most rows a count reads: a probe's cost is bounded whatever the backlog (a count at the
 * cap means "at least this many", an incident at any exact number; DESIGN 110).
 */
export const JOB_PROBE_ROW_CAP = 100_000;

/**
 * One statement per table and scrape, each part bounded: the rows by state and the pending ones
 * claimable now under the claim's own condition (due, and any lease ended), each count capped
 * at $1 rows; the oldest claimable time is the first entry of the claim's own index
 * (`*_claimable`, 0018, 0023, 0029), and none claimable (the first one in the future) is 0.
 * Completed jobs are deleted, so the table is the backlog.
 */
const statsQuery = (table: string): QueryConfig & { query_timeout: number } => ({
  text: `SELECT (SELECT count(*) FROM (SELECT FROM ${table} WHERE state = 'pending' LIMIT $1) p)
                  ::int AS pending,
                (SELECT count(*) FROM (SELECT FROM ${table} WHERE state = 'dead' LIMIT $1) d)
                  ::int AS dead,
                (SELECT count(*) FROM (SELECT FROM ${table}
                                        WHERE state = 'pending' AND ${CLAIMABLE_AT} <= now()
                                        LIMIT $1) r)::int AS ready,
                greatest(0, coalesce(extract(epoch FROM now() - (
                  SELECT min(${CLAIMABLE_AT}) FROM ${table} WHERE state = 'pending')), 0))
                  ::float8 AS oldest_ready_age_seconds`,
  values: [JOB_PROBE_ROW_CAP],
  query_timeout: JOB_PROBE_TIMEOUT_MS,
});

interface Probe {
  db: Queryable;
  kinds: readonly JobKind[];
}

let probe: Probe | undefined;
let inFlight: Promise<void> | undefined;

/**
 * Reads every registered kind's table and sets the gauges; the gauges' collects of one scrape
 * (and concurrent scrapes) share one read. A kind whose read fails or times out keeps its last
 * values and says so: `jobs_probe_up{kind}` 0.
 */
function refresh(): Promise<void> {
  inFlight ??= readAll().finally(() => {
    inFlight = undefined;
  });
  return inFlight;
}

async function readAll(): Promise<void> {
  const current = probe;
  if (!current) return;
  await Promise.all(
    current.kinds.map(async (kind) => {
      const stats = await withTimeout(readTable(current.db, kind)).catch(() => undefined);
      if (probe !== current) return;
      probeUp.set({ kind }, stats ? 1 : 0);
      if (!stats) return;
      for (const state of JOB_STATES) jobs.set({ kind, state }, stats[state]);
      jobsReady.set({ kind }, stats.ready);
      oldestReadyAge.set({ kind }, stats.oldest_ready_age_seconds);
    }),
  );
}

async function readTable(db: Queryable, kind: JobKind): Promise<JobTableStats> {
  const { rows } = await db.query<JobTableStats>(statsQuery(JOB_TABLES[kind].table));
  const [row] = rows;
  if (!row) throw new Error(`${JOB_TABLES[kind].table}: the stats query returned no row`);
  return row;
}

/** Bounds the wait for a pool checkout too (all connections busy), not only the query. */
function withTimeout<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`job metrics probe timed out after ${JOB_PROBE_TIMEOUT_MS} ms`));
    }, JOB_PROBE_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => {
    clearTimeout(timer);
  });
}

/**
 * Makes the job gauges (`jobs{kind,state}`, `jobs_ready{kind}`,
 * `jobs_oldest_ready_age_seconds{kind}`) read `kinds`' tables through `db` at scrape time;
 * returns the function that stops it (the last values stay). A later registration replaces an
 * earlier one.
 */
export function registerJobProbes(db: Queryable, kinds: readonly JobKind[]): () => void {
  const registered: Probe = { db, kinds: [...new Set(kinds)] };
  probe = registered;
  return () => {
    if (probe === registered) probe = undefined;
  };
}
