import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { createSettlementHarness, type SettlementHarness } from '../support/settlement-harness.js';
import { startTestApi, type TestApi } from '../support/test-api.js';
import { createTwoPhase, manualPayment, postHold } from '../support/two-phase-harness.js';

/**
 * A decision committed while a capture or cancel waited for the payment's row lock (CI-like
 * chaos run: two 500s "duplicate key value violates unique constraint payment_hold_decisions_pkey").
 * The lock statement's snapshot predates the wait, so its join cannot see that decision: the
 * request must still be refused with the first decision's code, never 500, and write nothing.
 */
let db: TestDatabase;
let api: TestApi;
/** A second API process on the same database: decisions on one payment from two replicas. */
let replica: TestApi;
let harness: SettlementHarness;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  replica = await startTestApi(db);
  harness = await createSettlementHarness(db, {}, 1);
  ({ apiKey } = await api.merchant());
});

afterAll(async () => {
  await harness.close();
  await api.close();
  await replica.close();
  await db.drop();
});

/** A transaction of its own on the test database: `run` statements, then `commit`. */
async function transaction() {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  await client.query('BEGIN');
  return {
    run: (text: string, values: unknown[]) => client.query(text, values),
    commit: async () => {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

/** Until some backend waits for a lock (the request reached its lock statement). */
async function waitingForLock(count: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND locktype IN ('transactionid', 'tuple')`,
    );
    if ((rows[0]?.n ?? 0) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no ${String(count)} requests waiting for the payment's lock`);
}

async function decisions(paymentId: string) {
  const { rows } = await db.pool.query<{ action: string; cancellation_reason: string | null }>(
    'SELECT action, cancellation_reason FROM payment_hold_decisions WHERE payment_id = $1',
    [paymentId],
  );
  return rows;
}

async function keyRecords(key: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM idempotency_keys WHERE idempotency_key = $1',
    [key],
  );
  return rows[0]?.n ?? 0;
}

describe('a decision taken while a capture or cancel waited for the payment', () => {
  it('when the expiry decided while a capture waited, then the capture is 422 payment_already_canceled and writes nothing', async () => {
    const twoPhase = createTwoPhase(harness);
    const { id } = await manualPayment(api, db, harness, twoPhase, { apiKey });
    // The expiry's decision (settlement's hold job, decideExpiry), not committed yet: its foreign
    // key holds the payment row, so the capture's lock statement waits for its commit.
    const expiry = await transaction();
    await expiry.run(
      `INSERT INTO payment_hold_decisions (payment_id, action, cancellation_reason)
       VALUES ($1, 'cancel', 'expired')`,
      [id],
    );
    const key = `late-capture-${crypto.randomUUID()}`;
    const capture = postHold(api, { apiKey, paymentId: id, action: 'capture', key });
    await waitingForLock(1);
    await expiry.commit();
    const answer = await capture;
    expect([answer.status, answer.json.code]).toEqual([422, 'payment_already_canceled']);
    expect(await decisions(id)).toEqual([{ action: 'cancel', cancellation_reason: 'expired' }]);
    expect(await keyRecords(key)).toBe(0);
  });

  it('when a capture and a cancel sent to two API replicas both waited for the payment, then one decides and the other is refused with its code', async () => {
    const twoPhase = createTwoPhase(harness);
    const { id } = await manualPayment(api, db, harness, twoPhase, { apiKey });
    // A request holding the payment's row lock, as a decision in progress does.
    const holder = await transaction();
    await holder.run('SELECT 1 FROM payments WHERE id = $1 FOR UPDATE', [id]);
    const capture = postHold(api, { apiKey, paymentId: id, action: 'capture' });
    const cancel = postHold(replica, {
      apiKey,
      paymentId: id,
      action: 'cancel',
      body: { cancellation_reason: 'duplicate' },
    });
    await waitingForLock(2);
    await holder.commit();
    const answers = await Promise.all([capture, cancel]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([202, 422]);
    const [decided] = await decisions(id);
    const loser = answers.find((answer) => answer.status === 422);
    expect(loser?.json.code).toBe(
      decided?.action === 'capture' ? 'payment_already_captured' : 'payment_already_canceled',
    );
  });
});
