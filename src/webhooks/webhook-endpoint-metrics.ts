import type { QueryConfig } from 'pg';
import { Gauge } from 'prom-client';
import { CLAIMABLE_AT } from '../jobs/job-table.js';
import type { Queryable } from '../platform/database/db.js';
import { metricsRegistry } from '../platform/telemetry/metrics.js';
import { saturatedEndpointsSql } from './webhook-job-store.js';

/**
 * The webhooks role's view of the endpoints, read from the database when /metrics is scraped:
 * how many are disabled (by reason), how long the oldest delivery that could be sent now has
 * waited for a worker, and for the endpoints with pending deliveries how long the oldest has
 * been waiting. The deliveries' outcomes are counted as they happen
 * (src/webhooks/webhook-metrics.ts); the delivery jobs' depth and age are the job engine's
 * (`jobs{kind="webhook"}`).
 */

/** Why an endpoint is disabled (webhook_endpoints.disabled_reason); each reported, 0 included. */
export const DISABLED_REASONS = ['merchant', 'gone', 'failing'] as const;

/** At most this many endpoints get an age series: the ones waiting longest. */
export const MAX_AGE_SERIES = 50;

/** A scrape waits at most this long; a slow or unreachable Postgres keeps the last values. */
export const WEBHOOK_PROBE_TIMEOUT_MS = 2_000;

interface EndpointStats {
  disabled: Record<string, number>;
  /** Seconds the oldest delivery that could be sent now (due, unleased, first of its payment
   * to its endpoint) has waited for a worker; 0 when none. */
  oldestDue: number;
  /** endpoint id -> seconds its oldest pending delivery has been waiting. */
  oldestPending: Map<string, number>;
}

let probeDb: Queryable | undefined;
/** WEBHOOK_MERCHANT_CONCURRENCY: a merchant with this many leased waits for its share. */
let probeMerchantCap = 2_147_483_647;
let last: EndpointStats = { disabled: {}, oldestDue: 0, oldestPending: new Map() };
let inFlight: Promise<EndpointStats> | undefined;

export const webhookEndpointMetrics = {
  disabled: new Gauge({
    name: 'webhook_endpoints_disabled',
    help: 'Disabled webhook endpoints by reason (merchant, gone: answered 410, failing: no 2xx for the whole retry window), read at scrape time',
    labelNames: ['reason'] as const,
    registers: [metricsRegistry],
    async collect() {
      const stats = await refresh();
      for (const reason of DISABLED_REASONS) this.set({ reason }, stats.disabled[reason] ?? 0);
    },
  }),
  oldestDueAge: new Gauge({
    name: 'webhook_oldest_due_delivery_age_seconds',
    help: 'Seconds the oldest delivery that could be sent now (due, not leased, no earlier delivery of its payment pending to its endpoint) has waited for a worker; 0 when none. Read at scrape time',
    registers: [metricsRegistry],
    async collect() {
      this.set((await refresh()).oldestDue);
    },
  }),
  oldestPendingAge: new Gauge({
    name: 'webhook_oldest_pending_delivery_age_seconds',
    help: `Seconds the oldest pending delivery of each endpoint has been waiting (queued or retried), for the ${String(MAX_AGE_SERIES)} endpoints waiting longest; read at scrape time`,
    labelNames: ['endpoint_id'] as const,
    registers: [metricsRegistry],
    async collect() {
      const stats = await refresh();
      // An endpoint whose backlog cleared (or fell out of the top) loses its series.
      this.reset();
      for (const [endpointId, seconds] of stats.oldestPending) {
        this.set({ endpoint_id: endpointId }, seconds);
      }
    },
  }),
};

/** The gauges' collects of one scrape (and concurrent scrapes) share one read. */
function refresh(): Promise<EndpointStats> {
  const db = probeDb;
  if (!db) return Promise.resolve(last);
  inFlight ??= withTimeout(read(db))
    .then((stats) => (probeDb === db ? (last = stats) : last))
    .catch(() => last)
    .finally(() => {
      inFlight = undefined;
    });
  return inFlight;
}

/** A query with a client-side bound, so one that never answers gives its connection up. */
type BoundedQuery = QueryConfig & { query_timeout: number };

const DISABLED_QUERY: BoundedQuery = {
  text: `SELECT disabled_reason AS reason, count(*)::int AS n FROM webhook_endpoints
          WHERE disabled_at IS NOT NULL GROUP BY disabled_reason`,
  query_timeout: WEBHOOK_PROBE_TIMEOUT_MS,
};

/**
 * The claim's own conditions (job-table.ts CLAIMABLE_AT, the order rule: no earlier seq of the
 * payment pending to the endpoint, and the merchant's share: DESIGN 118), so a delivery held
 * back behind an earlier one in retry backoff, or behind its merchant's other deliveries in
 * flight, does not count as waiting for a worker. $1: the merchant cap.
 */
const OLDEST_DUE_QUERY: BoundedQuery = {
  text: `SELECT coalesce(extract(epoch FROM now() - min(${CLAIMABLE_AT})), 0)::float8 AS seconds
           FROM webhook_delivery_jobs j
          WHERE j.state = 'pending'
            AND ${CLAIMABLE_AT} <= now()
            AND NOT EXISTS (SELECT 1 FROM webhook_delivery_jobs e
                             WHERE e.endpoint_id = j.endpoint_id AND e.payment_id = j.payment_id
                               AND e.seq < j.seq AND e.state = 'pending')
            AND j.endpoint_id <> ALL (ARRAY(${saturatedEndpointsSql('$1::int')}))`,
  query_timeout: WEBHOOK_PROBE_TIMEOUT_MS,
};

const OLDEST_PENDING_QUERY: BoundedQuery = {
  text: `SELECT endpoint_id, extract(epoch FROM now() - min(created_at))::float8 AS seconds
           FROM webhook_delivery_jobs
          WHERE state = 'pending'
          GROUP BY endpoint_id
          ORDER BY min(created_at)
          LIMIT ${String(MAX_AGE_SERIES)}`,
  query_timeout: WEBHOOK_PROBE_TIMEOUT_MS,
};

/**
 * Three small statements: the disabled endpoints (a count over the endpoints table), the
 * oldest delivery a worker could take now, and the pending delivery jobs (one per pending delivery: the table is the backlog) grouped by
 * endpoint, their created_at being when the delivery was queued, or queued again by a retry or
 * replay.
 */
async function read(db: Queryable): Promise<EndpointStats> {
  const [reasons, due, ages] = await Promise.all([
    db.query<{ reason: string; n: number }>(DISABLED_QUERY),
    db.query<{ seconds: number }>({ ...OLDEST_DUE_QUERY, values: [probeMerchantCap] }),
    db.query<{ endpoint_id: string; seconds: number }>(OLDEST_PENDING_QUERY),
  ]);
  return {
    disabled: Object.fromEntries(reasons.rows.map((row) => [row.reason, row.n])),
    oldestDue: Math.max(0, due.rows[0]?.seconds ?? 0),
    oldestPending: new Map(ages.rows.map((row) => [row.endpoint_id, Math.max(0, row.seconds)])),
  };
}

/** Bounds the wait for a pool checkout too (all connections busy), not only the queries. */
function withTimeout<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(
        new Error(`webhook metrics probe timed out after ${String(WEBHOOK_PROBE_TIMEOUT_MS)} ms`),
      );
    }, WEBHOOK_PROBE_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => {
    clearTimeout(timer);
  });
}

/**
 * Makes the endpoint gauges read through `db` at scrape time; returns the function that stops
 * it (the last values stay). A later registration replaces an earlier one. `merchantCap`:
 * WEBHOOK_MERCHANT_CONCURRENCY (absent: no merchant is ever at its share).
 */
export function registerWebhookEndpointProbe(db: Queryable, merchantCap?: number): () => void {
  probeDb = db;
  probeMerchantCap = merchantCap ?? 2_147_483_647;
  return () => {
    if (probeDb === db) probeDb = undefined;
  };
}
