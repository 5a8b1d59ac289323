import { randomUUID } from 'node:crypto';
import type { QueryConfig } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  countJobAttempt,
  JOB_ATTEMPT_OUTCOMES,
  JOB_KINDS,
  JOB_PROBE_TIMEOUT_MS,
  registerJobProbes,
} from '../../src/jobs/job-metrics.js';
import type { JobKind } from '../../src/jobs/job-table.js';
import type { Queryable } from '../../src/platform/database/db.js';
import { metricsRegistry } from '../../src/platform/telemetry/metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';

/**
 * The per-kind job gauges (issue 25) read the job tables at scrape time as the settlement role's
 * own login: depth by state, the jobs claimable now (due and not leased, the claim's own
 * condition) and how long the oldest of them has waited. The owner pool only sets up rows.
 */

let db: TestDatabase;
let merchantId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  merchantId = randomUUID();
  await db.pool.query(`INSERT INTO merchants (id, name) VALUES ($1, 'Job metrics')`, [merchantId]);
});

afterAll(async () => {
  await db.drop();
});

interface JobRow {
  state: 'pending' | 'dead';
  /** next_attempt_at, in seconds from now (negative: in the past). */
  due: number;
  /** locked_until, in seconds from now; absent: never leased. */
  leaseEnds?: number;
}

/** Inserts one job of `kind` (and the payment, or refund, it is about). */
async function addJob(kind: JobKind, job: JobRow): Promise<void> {
  const paymentId = randomUUID();
  await db.pool.query(
    `INSERT INTO payments (id, merchant_id, amount, currency, source, status, created_at, updated_at)
     VALUES ($1, $2, 1000, 'EUR', 'tok_visa', 'processing', now(), now())`,
    [paymentId, merchantId],
  );
  const times = [job.state, job.due, job.leaseEnds ?? null];
  if (kind === 'settlement') {
    await db.pool.query(
      `INSERT INTO settlement_jobs (payment_id, event_id, state, next_attempt_at, locked_until,
                                    source_topic, source_partition, source_offset, message_value)
       VALUES ($1, $2, $3, now() + make_interval(secs => $4),
               now() + make_interval(secs => $5), 'payments', 0, '0', '{}')`,
      [paymentId, randomUUID(), ...times],
    );
    return;
  }
  if (kind === 'webhook') {
    await addWebhookJob(paymentId, times);
    return;
  }
  if (kind === 'hold') {
    await db.pool.query(
      `INSERT INTO hold_jobs (payment_id, state, next_attempt_at, locked_until)
       VALUES ($1, $2, now() + make_interval(secs => $3), now() + make_interval(secs => $4))`,
      [paymentId, ...times],
    );
    return;
  }
  const refundId = randomUUID();
  await db.pool.query(
    `INSERT INTO refunds (id, payment_id, merchant_id, amount, currency, created_at, updated_at)
     VALUES ($1, $2, $3, 100, 'EUR', now(), now())`,
    [refundId, paymentId, merchantId],
  );
  await db.pool.query(
    `INSERT INTO refund_jobs (refund_id, state, next_attempt_at, locked_until)
     VALUES ($1, $2, now() + make_interval(secs => $3), now() + make_interval(secs => $4))`,
    [refundId, ...times],
  );
}

/** A webhook delivery job (with its endpoint, event and delivery) about `paymentId`. */
async function addWebhookJob(paymentId: string, times: unknown[]): Promise<void> {
  const endpointId = randomUUID();
  const eventId = randomUUID();
  await db.pool.query(
    `INSERT INTO webhook_endpoints (id, merchant_id, url, enabled_events, created_at, updated_at)
     VALUES ($1, $2, 'https://example.com/hook', '{*}', now(), now())`,
    [endpointId, merchantId],
  );
  await db.pool.query(
    `INSERT INTO webhook_events (event_id, merchant_id, payment_id, event_type, body, created_at)
     VALUES ($1, $2, $3, 'payment.settled', '{}', now())`,
    [eventId, merchantId, paymentId],
  );
  await db.pool.query(
    `WITH d AS (INSERT INTO webhook_deliveries (endpoint_id, event_id, payment_id)
                VALUES ($1, $2, $3) RETURNING id, seq)
     INSERT INTO webhook_delivery_jobs (delivery_id, endpoint_id, payment_id, seq, state,
                                        next_attempt_at, locked_until)
     SELECT d.id, $1, $3, d.seq, $4, now() + make_interval(secs => $5),
            now() + make_interval(secs => $6) FROM d`,
    [endpointId, eventId, paymentId, ...times],
  );
}

interface Scraped {
  pending: number;
  dead: number;
  ready: number;
  oldestReadyAge: number;
}

/** One scrape of the whole registry (every collect at once, as GET /metrics does), per kind. */
async function scrape(): Promise<Record<string, Scraped>> {
  const metrics = await metricsRegistry.getMetricsAsJSON();
  const values = (name: string) => metrics.find((metric) => metric.name === name)?.values ?? [];
  const of = (name: string, kind: string, state?: string) =>
    values(name).find(
      (v) => v.labels.kind === kind && (state === undefined || v.labels.state === state),
    )?.value ?? Number.NaN;
  return Object.fromEntries(
    JOB_KINDS.map((kind) => [
      kind,
      {
        pending: of('jobs', kind, 'pending'),
        dead: of('jobs', kind, 'dead'),
        ready: of('jobs_ready', kind),
        oldestReadyAge: of('jobs_oldest_ready_age_seconds', kind),
      },
    ]),
  );
}

/** `db` with every statement it runs recorded. */
function recording(target: Queryable): { db: Queryable; statements: string[] } {
  const statements: string[] = [];
  const query = (config: QueryConfig) => {
    statements.push(config.text);
    return target.query(config);
  };
  // The probe calls only query(config); the cast spares restating pg's overloads.
  return { db: { query: query as Queryable['query'] }, statements };
}

describe('jobs, jobs_ready and jobs_oldest_ready_age_seconds', () => {
  it('when due, leased, expired-lease, future and dead jobs wait, then a scrape reports depth, ready count and oldest ready age per kind, one query per table', async () => {
    const { db: probeDb, statements } = recording(db.login('settlement'));
    const unregister = registerJobProbes(probeDb, JOB_KINDS);
    try {
      const empty = { pending: 0, dead: 0, ready: 0, oldestReadyAge: 0 };
      expect(await scrape()).toEqual({
        settlement: empty,
        refund: empty,
        webhook: empty,
        hold: empty,
      });
      expect(statements).toHaveLength(JOB_KINDS.length);

      // The oldest ready job is due 30 s ago (settlement) and 45 s ago (refund). Older jobs
      // must not count: one leased until later (not ready) and one dead.
      const oldest: Record<JobKind, number> = { settlement: 30, refund: 45, webhook: 20, hold: 25 };
      for (const kind of JOB_KINDS) {
        await addJob(kind, { state: 'pending', due: -oldest[kind] });
        await addJob(kind, { state: 'pending', due: -5 });
        // Due long ago, leased by a worker that died: claimable since its lease ended, 10 s ago.
        await addJob(kind, { state: 'pending', due: -600, leaseEnds: -10 });
        // In flight: leased by a live worker for another minute.
        await addJob(kind, { state: 'pending', due: -900, leaseEnds: 60 });
        // Waiting out a retry backoff.
        await addJob(kind, { state: 'pending', due: 60 });
        await addJob(kind, { state: 'dead', due: -3600 });
      }

      statements.length = 0;
      const scraped = await scrape();
      expect(statements).toHaveLength(JOB_KINDS.length);
      for (const kind of JOB_KINDS) {
        const { oldestReadyAge, ...counts } = scraped[kind] ?? empty;
        expect(counts, kind).toEqual({ pending: 5, dead: 1, ready: 3 });
        // Its due time is `oldest` seconds before the insert; the scrape comes a little later.
        expect(oldestReadyAge, kind).toBeGreaterThanOrEqual(oldest[kind]);
        expect(oldestReadyAge, kind).toBeLessThan(oldest[kind] + 30);
      }

      // The claimable jobs of the settlement kind are claimed (leased for a minute): none ready.
      await db.pool.query(
        `UPDATE settlement_jobs SET locked_until = now() + interval '1 minute'
          WHERE state = 'pending'`,
      );
      const after = await scrape();
      expect(after.settlement).toEqual({ pending: 5, dead: 1, ready: 0, oldestReadyAge: 0 });
      expect(after.refund?.ready).toBe(3);
    } finally {
      unregister();
    }
  });

  it('when the database fails or never answers, then a scrape keeps the last values, says jobs_probe_up 0 (unknown, not zero), and returns within the probe bound', async () => {
    const probeUp = async () =>
      (await metricsRegistry.getMetricsAsJSON())
        .find((metric) => metric.name === 'jobs_probe_up')
        ?.values.find((v) => v.labels.kind === 'refund')?.value;
    const unregister = registerJobProbes(db.login('settlement'), ['refund']);
    expect(await probeUp()).toBe(1);
    // The last read before the failures: the values a failing read must leave in place.
    const before = (await scrape()).refund;
    unregister();
    expect(before?.pending).toBeGreaterThan(0);

    const failing: Queryable = {
      query: () => Promise.reject(new Error('connection refused')),
    };
    const unregisterFailing = registerJobProbes(failing, ['refund']);
    try {
      expect((await scrape()).refund).toEqual(before);
      expect(await probeUp()).toBe(0);
    } finally {
      unregisterFailing();
    }

    const frozen: Queryable = { query: (() => new Promise(() => undefined)) as Queryable['query'] };
    const unregisterFrozen = registerJobProbes(frozen, ['refund']);
    try {
      const startedAt = performance.now();
      expect((await scrape()).refund).toEqual(before);
      const took = performance.now() - startedAt;
      expect(took).toBeGreaterThanOrEqual(JOB_PROBE_TIMEOUT_MS - 50);
      expect(took).toBeLessThan(JOB_PROBE_TIMEOUT_MS + 1_000);
      expect(await probeUp()).toBe(0);
    } finally {
      unregisterFrozen();
    }
    // The database answers again: known again.
    const unregisterAgain = registerJobProbes(db.login('settlement'), ['refund']);
    try {
      expect((await scrape()).refund).toMatchObject({
        pending: before?.pending,
        dead: before?.dead,
        ready: before?.ready,
      });
      expect(await probeUp()).toBe(1);
    } finally {
      unregisterAgain();
    }
  });
});

describe('jobs_attempts_total', () => {
  it('exports every kind and outcome from the start, and countJobAttempt counts one', async () => {
    const values = async () =>
      (await metricsRegistry.getSingleMetric('jobs_attempts_total')?.get())?.values ?? [];
    const pairs = (await values()).map(
      (v) => `${String(v.labels.kind)}/${String(v.labels.outcome)}`,
    );
    for (const kind of JOB_KINDS) {
      for (const outcome of JOB_ATTEMPT_OUTCOMES) expect(pairs).toContain(`${kind}/${outcome}`);
    }
    const count = async () =>
      (await values()).find((v) => v.labels.kind === 'refund' && v.labels.outcome === 'retried')
        ?.value ?? Number.NaN;
    const before = await count();
    countJobAttempt('refund', 'retried');
    expect(await count()).toBe(before + 1);
  });
});
