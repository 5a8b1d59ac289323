import type { QueryConfig } from 'pg';
import { Counter, Gauge } from 'prom-client';
import type { Queryable } from '../platform/db.js';
import { metricsRegistry } from '../platform/metrics.js';
import {
  CLAIMABLE_AT,
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
 * One statement per table and scrape: the rows by state, and the pending ones claimable now
 * under the claim's own condition (due, and any lease ended), with how long the oldest of them
 * has been claimable. Completed jobs are deleted, so the table is the backlog.
 */
const statsQuery = (table: string): QueryConfig & { query_timeout: number } => ({
  text: `SELECT count(*) FILTER (WHERE state = 'pending')::int AS pending,
                count(*) FILTER (WHERE state = 'dead')::int AS dead,
                count(*) FILTER (WHERE ready)::int AS ready,
                coalesce(extract(epoch FROM now() - min(claimable_at) FILTER (WHERE ready)), 0)
                  ::float8 AS oldest_ready_age_seconds
           FROM (SELECT state, claimable_at, state = 'pending' AND claimable_at <= now() AS ready
                   FROM (SELECT state,
                                ${CLAIMABLE_AT} AS claimable_at
                           FROM ${table}) t) j`,
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
 * values.
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
      if (!stats || probe !== current) return;
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
