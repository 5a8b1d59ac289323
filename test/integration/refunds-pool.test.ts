import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postRefund, refundFacts, settledPayment } from '../support/refund-client.js';
import { postPayment, startTestApi, type TestApi } from '../support/test-api.js';

let db: TestDatabase;
let api: TestApi;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  // A pool of three: without the per-payment queue, three refunds waiting on one payment's row
  // lock would hold every connection.
  api = await startTestApi(db, { DATABASE_POOL_MAX: '3' });
  await defineTier(db.pool, BENCH_TIER);
  ({ apiKey } = await api.merchant('Test merchant', BENCH_TIER.name));
});

afterAll(async () => {
  await api.close();
  await db.drop();
});

describe('refunds waiting for one payment', () => {
  it('when eight refunds of one payment wait on its locked row, then they hold one pool connection: a new payment is still answered at once, and every refund lands after the lock goes', async () => {
    const paymentId = await settledPayment(api, db, apiKey, { amount: 1000 });
    const holder = await db.pool.connect();
    let refunds: Promise<{ status: number }>[] = [];
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM payments WHERE id = $1 FOR UPDATE', [paymentId]);
      refunds = Array.from({ length: 8 }, () =>
        postRefund(api, { apiKey, paymentId, body: { amount: 100 } }),
      );
      // Until the refunds are queued: the first one is waiting on the row lock.
      await waitFor(async () => {
        const { rows } = await db.login('api').query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return (rows[0]?.n ?? 0) >= 1;
      });
      await new Promise((r) => setTimeout(r, 200));

      const started = Date.now();
      const payment = await Promise.race([
        postPayment(api, { apiKey }),
        new Promise<null>((r) => {
          setTimeout(() => {
            r(null);
          }, 3_000);
        }),
      ]);
      expect(payment?.status).toBe(202);
      expect(Date.now() - started).toBeLessThan(3_000);
      const { rows } = await db.login('api').query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      expect(rows[0]?.n).toBe(1);
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    const answers = await Promise.all(refunds);
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(202));
    expect(await refundFacts(db, paymentId)).toMatchObject({
      amount_refunded: 800,
      refunds: 8,
      refunded_sum: 800,
    });
  });
});

describe('refunds whose request ended before their turn', () => {
  it('when a queued refund outlives its request deadline, then it is never written, and the retry with its key writes it once', async () => {
    // A deadline short enough that both refunds below are answered 503 while the row is locked.
    const hurried = await startTestApi(db, { REQUEST_DEADLINE_MS: '1000' });
    try {
      const paymentId = await settledPayment(hurried, db, apiKey, { amount: 1000 });
      const refund = (key: string, amount: number) =>
        postRefund(hurried, { apiKey, paymentId, key, body: { amount } });
      const holder = await db.pool.connect();
      let answers: { status: number }[] = [];
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT 1 FROM payments WHERE id = $1 FOR UPDATE', [paymentId]);
        // The first refund takes its turn and waits on the row lock; the second is queued.
        const first = refund('first', 100);
        await waitFor(async () => (await lockWaiters()) >= 1);
        const queued = refund('queued', 200);
        answers = await Promise.all([first, queued]);
      } finally {
        await holder.query('COMMIT');
        holder.release();
      }
      expect(answers.map((a) => a.status)).toEqual([503, 503]);

      // A third refund through the same queue: when it is answered, the queued one has had
      // its turn, so whatever it would have written is there.
      const third = await refund('third', 300);
      expect(third.status).toBe(202);
      expect(await refundKeys(paymentId)).toEqual(['first', 'third']);

      const retry = await refund('queued', 200);
      expect(retry.status).toBe(202);
      expect(retry.headers.get('idempotent-replayed')).toBeNull();
      expect(await refundKeys(paymentId)).toEqual(['first', 'queued', 'third']);
      expect(await refundFacts(db, paymentId)).toMatchObject({
        amount_refunded: 600,
        refunds: 3,
      });
    } finally {
      await hurried.close();
    }
  });
});

async function lockWaiters(): Promise<number> {
  const { rows } = await db.login('api').query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'`,
  );
  return rows[0]?.n ?? 0;
}

async function refundKeys(paymentId: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ idempotency_key: string }>(
    `SELECT k.idempotency_key FROM idempotency_keys k JOIN refunds r ON r.id = k.refund_id
      WHERE r.payment_id = $1 ORDER BY k.idempotency_key`,
    [paymentId],
  );
  return rows.map((row) => row.idempotency_key);
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
