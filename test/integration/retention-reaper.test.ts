import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  acquirerBookSweeps,
  settlementSweeps,
  startRetentionReaper,
} from '../../src/jobs/retention-reaper.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/isolation.js';

/**
 * Issue 36 item 7 (DESIGN 110): processed_events, resolved dead jobs and the acquirer's books are
 * deleted past their retention, a batch at a time, each by its own role's login (the grants of
 * 0028). Rows are aged by writing their times in the past. What dedup and replay rely on stays:
 * a recent processed event, a dead job of a payment still processing (its dead letter's replay
 * handle), a resolved one not yet past retention, recent books.
 */

const DAY = 86_400;
let db: TestDatabase;
let merchantId: string;
const logger = createLogger(testConfig({ LOG_LEVEL: 'silent' }));

beforeAll(async () => {
  db = await createTestDatabase();
  merchantId = randomUUID();
  await db.pool.query(`INSERT INTO merchants (id, name) VALUES ($1, 'Retention')`, [merchantId]);
});
afterAll(async () => {
  await db.drop();
});

/** One round of the acquirer role's sweeps (90 days) on its login: rows deleted per sweep. */
async function sweepAcquirerBooks(): Promise<Record<string, number>> {
  const reaper = startRetentionReaper(db.login('acquirer'), logger, acquirerBookSweeps(90 * DAY), {
    batch: 100,
    intervalMs: 3_600_000,
  });
  try {
    return await reaper.runOnce();
  } finally {
    await reaper.stop();
  }
}

/** A payment in `status`, last updated `ageDays` ago, with a processed event that old too. */
async function payment(status: string, ageDays: number): Promise<string> {
  const id = randomUUID();
  await db.pool.query(
    `INSERT INTO payments (id, merchant_id, amount, currency, source, status, failure_code,
                           created_at, updated_at)
     VALUES ($1, $2, 1000, 'EUR', 'tok_visa', $3, $4, now() - make_interval(days => $5),
             now() - make_interval(days => $5))`,
    [id, merchantId, status, status === 'failed' ? 'card_declined' : null, ageDays],
  );
  await db.pool.query(
    `INSERT INTO processed_events (event_id, event_type, payment_id, processed_at)
     VALUES ($1, 'payment.created', $2, now() - make_interval(days => $3))`,
    [randomUUID(), id, ageDays],
  );
  return id;
}

async function deadJob(paymentId: string): Promise<void> {
  await db.pool.query(
    `INSERT INTO settlement_jobs (payment_id, event_id, state, source_topic, source_partition,
                                  source_offset, message_value)
     VALUES ($1, $2, 'dead', 'payments', 0, '0', '{}')`,
    [paymentId, randomUUID()],
  );
}

async function count(sql: string, values: unknown[] = []): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(sql, values);
  return rows[0]?.n ?? Number.NaN;
}

describe('the retention reapers', () => {
  it('when processed events and dead jobs age, then the settlement login deletes those past retention in batches and keeps what dedup and replay need', async () => {
    const oldSettled = await payment('settled', 40);
    const oldFailed = await payment('failed', 40);
    const oldProcessing = await payment('processing', 40);
    const recentSettled = await payment('settled', 3);
    for (const id of [oldSettled, oldFailed, oldProcessing, recentSettled]) await deadJob(id);
    const extraOld = await Promise.all([1, 2, 3].map(() => payment('settled', 35)));

    const reaper = startRetentionReaper(
      db.login('settlement'),
      logger,
      settlementSweeps({
        processedEventSeconds: 30 * DAY,
        deadJobSeconds: 30 * DAY,
        merchantEventSeconds: 30 * DAY,
      }),
      { batch: 2, intervalMs: 3_600_000 },
    );
    try {
      const deleted = await reaper.runOnce();
      // Six events older than 30 days (three batches of two), two resolved dead jobs.
      expect(deleted).toMatchObject({
        processed_events: 6,
        'settlement_jobs (dead, payment final)': 2,
        'refund_jobs (dead, refund final)': 0,
      });
    } finally {
      await reaper.stop();
    }
    expect(
      await count(`SELECT count(*)::int AS n FROM processed_events WHERE payment_id = ANY($1)`, [
        [oldSettled, oldFailed, oldProcessing, ...extraOld],
      ]),
    ).toBe(0);
    expect(
      await count(`SELECT count(*)::int AS n FROM processed_events WHERE payment_id = $1`, [
        recentSettled,
      ]),
    ).toBe(1);
    const { rows } = await db.pool.query<{ payment_id: string }>(
      `SELECT payment_id FROM settlement_jobs WHERE state = 'dead' AND payment_id = ANY($1)
        ORDER BY payment_id`,
      [[oldSettled, oldFailed, oldProcessing, recentSettled]],
    );
    // The unresolved payment's dead job is its dead letter's replay handle: kept at any age.
    expect(rows.map((r) => r.payment_id)).toEqual([oldProcessing, recentSettled].sort());
  });

  it('when the books age, then the acquirer login deletes charges, refunds and call logs past retention and keeps recent ones', async () => {
    const books = async (ageDays: number) => {
      const key = `pay_${randomUUID()}`;
      const paymentId = randomUUID();
      await db.pool.query(
        `INSERT INTO acquirer_simulator_charges (idempotency_key, payment_id, result, reference,
                                                 created_at)
         VALUES ($1, $2, 'approved', 'ref', now() - make_interval(days => $3))`,
        [key, paymentId, ageDays],
      );
      await db.pool.query(
        `INSERT INTO acquirer_simulator_calls (idempotency_key, payment_id, source, amount,
                                               currency, result, replayed, created_at)
         VALUES ($1, $2, 'tok_visa', 1000, 'EUR', 'approved', false,
                 now() - make_interval(days => $3))`,
        [key, paymentId, ageDays],
      );
      return key;
    };
    const old = await books(100);
    const recent = await books(10);
    expect(await sweepAcquirerBooks()).toMatchObject({
      acquirer_simulator_calls: 1,
      acquirer_simulator_charges: 1,
    });
    for (const table of ['acquirer_simulator_charges', 'acquirer_simulator_calls']) {
      const keys = await db.pool.query<{ idempotency_key: string }>(
        `SELECT idempotency_key FROM ${table} WHERE idempotency_key = ANY($1)`,
        [[old, recent]],
      );
      expect(keys.rows.map((r) => r.idempotency_key)).toEqual([recent]);
    }
  });

  it('when holds age, then the acquirer login deletes decided holds and answers past retention and keeps a hold still held, however old', async () => {
    const hold = async (state: 'held' | 'captured' | 'voided', ageDays: number) => {
      const paymentId = randomUUID();
      const [captured, released] =
        state === 'captured' ? [600, 400] : state === 'voided' ? [0, 1000] : [0, 0];
      await db.pool.query(
        `INSERT INTO acquirer_simulator_holds
           (payment_id, authorize_key, source, currency, amount_authorized, amount_captured,
            amount_released, state, reference, created_at, updated_at)
         VALUES ($1, $6, 'tok_visa', 'EUR', 1000, $2, $3, $4, 'ref',
                 now() - make_interval(days => $5), now() - make_interval(days => $5))`,
        [paymentId, captured, released, state, ageDays, `authorize_${paymentId}`],
      );
      await db.pool.query(
        `INSERT INTO acquirer_simulator_hold_operations
           (idempotency_key, payment_id, operation, amount, result, reference, created_at)
         VALUES ($3, $1, 'authorize', 1000, 'approved', 'ref',
                 now() - make_interval(days => $2))`,
        [paymentId, ageDays, `authorize_${paymentId}`],
      );
      return paymentId;
    };
    const oldCaptured = await hold('captured', 100);
    const oldVoided = await hold('voided', 100);
    const oldHeld = await hold('held', 100);
    const recentCaptured = await hold('captured', 10);
    expect(await sweepAcquirerBooks()).toMatchObject({
      'acquirer_simulator_holds (decided)': 2,
      acquirer_simulator_hold_operations: 3,
    });
    const kept = await db.pool.query<{ payment_id: string }>(
      'SELECT payment_id FROM acquirer_simulator_holds WHERE payment_id = ANY($1)',
      [[oldCaptured, oldVoided, oldHeld, recentCaptured]],
    );
    expect(kept.rows.map((r) => r.payment_id).sort()).toEqual([oldHeld, recentCaptured].sort());
  });

  it('when refund jobs are claimed, then the claim reads the claimable index (0029), not a scan of the table', async () => {
    const { rows } = await db.pool.query<{ indexname: string }>(
      `SELECT indexname FROM pg_indexes WHERE tablename = 'refund_jobs' ORDER BY indexname`,
    );
    expect(rows.map((r) => r.indexname)).toEqual(['refund_jobs_claimable', 'refund_jobs_pkey']);
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL enable_seqscan = off');
      const plan = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT refund_id FROM refund_jobs
          WHERE state = 'pending'
            AND greatest(next_attempt_at, coalesce(locked_until, next_attempt_at)) <= now()
          ORDER BY greatest(next_attempt_at, coalesce(locked_until, next_attempt_at)) LIMIT 10
          FOR UPDATE SKIP LOCKED`,
      );
      expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('refund_jobs_claimable');
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
