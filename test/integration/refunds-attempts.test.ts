import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRefundSimulator } from '../../src/acquirer/refund-simulator.js';
import { refundEventId } from '../../src/refunds/refund-event-id.js';
import { createRefundWorker, type RefundWorker } from '../../src/refunds/refund-worker.js';
import { DLQ_HEADERS } from '../../src/jobs/dead-letters/dead-letter.js';
import { createTestDatabase, uniqueSuffix, type TestDatabase } from '../support/isolation.js';
import { postRefund, settledPayment } from '../support/refund-client.js';
import { refundWorkFacts } from '../support/refund-harness.js';
import { consume, createConsumer, type ConsumedRecord } from '../../src/platform/kafka/kafka.js';
import {
  createSettlementHarness,
  eventually,
  type SettlementHarness,
} from '../support/settlement-harness.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * REFUND_MAX_ATTEMPTS (3 here) bounds a refund's acquirer calls whatever fails, as it does a
 * charge's (DESIGN 53): here the completion, after every refund the acquirer approved. The
 * worker runs as the settlement login and is driven round by round (runOnce); between rounds
 * the job's backoff or lease is fast-forwarded, as if its time had passed.
 */

const MAX_ATTEMPTS = 3;
let db: TestDatabase;
let api: TestApi;
let harness: SettlementHarness;
let worker: RefundWorker;
let apiKey: string;
/** While true, the dead-letter topic refuses every letter (the publisher keeps them stored). */
let brokerRefuses = false;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  harness = await createSettlementHarness(db, { REFUND_MAX_ATTEMPTS: String(MAX_ATTEMPTS) }, 1);
  ({ apiKey } = await api.merchant());
  const { config, platform } = harness;
  worker = createRefundWorker({
    pool: platform.pool,
    acquirer: createRefundSimulator(platform.pool),
    deadLetters: harness.deadLetters(() =>
      brokerRefuses ? Promise.reject(new Error('broker unavailable')) : Promise.resolve(),
    ),
    logger: platform.logger,
    config,
  });
  // The injected fault: any completion of a marked refund fails. SECURITY DEFINER: the trigger
  // fires in the worker's statements (payments_settlement), which may not read the test's table.
  await db.pool.query(`
    CREATE TABLE test_fault (refund_id uuid PRIMARY KEY);
    CREATE SEQUENCE test_fault_hits;
    CREATE FUNCTION test_fail_marked_refund() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM test_fault WHERE refund_id = NEW.id) THEN
        PERFORM nextval('test_fault_hits'); -- not rolled back: counts the failed completions
        RAISE EXCEPTION 'injected fault on refund %', NEW.id;
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_fail_marked_refund BEFORE UPDATE ON refunds
      FOR EACH ROW EXECUTE FUNCTION test_fail_marked_refund();
  `);
});

afterAll(async () => {
  await harness.close();
  await api.close();
  await db.drop();
});

async function faultHits(): Promise<number> {
  const { rows } = await db.pool.query<{ n: string }>(
    `SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM test_fault_hits`,
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Produces a barrier to the dead-letter topic and returns the records before it (one partition:
 * in order, so every letter sent before is among them).
 */
async function lettersBeforeBarrier(): Promise<ConsumedRecord[]> {
  // Letters are stored first and sent by the publisher: every one sent before the barrier.
  await eventually('every stored dead letter sent', async () => {
    const { rows } = await db.pool.query<{ unsent: number }>(
      'SELECT count(*)::int AS unsent FROM dead_letters WHERE published_at IS NULL',
    );
    return rows[0]?.unsent === 0 ? true : undefined;
  });
  const barrier = `barrier-${uniqueSuffix()}`;
  await harness.produce(
    [{ key: barrier, value: barrier, headers: {} }],
    harness.config.KAFKA_TOPIC_DLQ,
  );
  const records: ConsumedRecord[] = [];
  const consumer = createConsumer(harness.platform.kafka, `reader-${uniqueSuffix()}`, 100);
  await consumer.connect();
  try {
    await consume(consumer, [harness.config.KAFKA_TOPIC_DLQ], (record) => {
      records.push(record);
      return Promise.resolve();
    });
    return await eventually('the barrier on the dead-letter topic', () => {
      const at = records.findIndex((r) => r.key === barrier);
      return Promise.resolve(at < 0 ? undefined : records.slice(0, at));
    });
  } finally {
    await consumer.disconnect();
  }
}

describe('refund attempt limit', () => {
  it('when the completion fails after every refund the acquirer approved, then the third attempt is the last: dead-lettered once, three acquirer calls, the amount kept', async () => {
    const paymentId = await settledPayment(api, db, apiKey, { amount: 1000 });
    const res = await postRefund(api, { apiKey, paymentId, body: { amount: 400 } });
    expect(res.status).toBe(202);
    const id = res.json.id as string;
    await db.pool.query('INSERT INTO test_fault (refund_id) VALUES ($1)', [id]);

    // Far more rounds than attempts: each claims the job if it is claimable.
    const outcomes: string[] = [];
    for (let round = 0; round < 3 * MAX_ATTEMPTS; round++) {
      outcomes.push(...(await worker.runOnce()));
      // Whatever the job waits for (a backoff, or a lease a failed step kept) has passed.
      await db.pool.query(
        `UPDATE refund_jobs SET next_attempt_at = now(), locked_until = NULL
          WHERE refund_id = $1 AND state = 'pending'`,
        [id],
      );
    }

    expect(outcomes).toEqual(['error', 'error', 'error', 'dead']);
    expect(await faultHits()).toBe(MAX_ATTEMPTS);
    expect(await refundWorkFacts(db, id)).toMatchObject({
      status: 'pending',
      amount_refunded: 400,
      approved_refunds: 1,
      calls: MAX_ATTEMPTS,
      result_events: 0,
      job_state: 'dead',
    });
    const { rows } = await db.pool.query<{ attempts: number; last_error_class: string }>(
      'SELECT attempts, last_error_class FROM refund_jobs WHERE refund_id = $1',
      [id],
    );
    expect(rows).toEqual([{ attempts: MAX_ATTEMPTS, last_error_class: 'refund_step_failed' }]);

    const letters = await lettersBeforeBarrier();
    expect(letters.map((r) => r.headers)).toEqual([
      expect.objectContaining({
        [DLQ_HEADERS.eventId]: refundEventId(id, 'refund.created'),
        [DLQ_HEADERS.attempts]: String(MAX_ATTEMPTS),
        [DLQ_HEADERS.errorClass]: 'refund_step_failed',
      }),
    ]);
  });

  it('when the dead-letter topic refuses, then the exhausted refund is dead at once without calling the acquirer again, its letter waits in the database, and it is sent once when the topic takes it', async () => {
    const paymentId = await settledPayment(api, db, apiKey, {
      amount: 1000,
      source: 'tok_refund_unavailable',
    });
    const res = await postRefund(api, { apiKey, paymentId, body: { amount: 250 } });
    expect(res.status).toBe(202);
    const id = res.json.id as string;
    brokerRefuses = true;
    try {
      const outcomes: string[] = [];
      for (let round = 0; round < 2 * MAX_ATTEMPTS; round++) {
        outcomes.push(...(await worker.runOnce()));
        await db.pool.query(
          `UPDATE refund_jobs SET next_attempt_at = now(), locked_until = NULL
            WHERE refund_id = $1 AND state = 'pending'`,
          [id],
        );
      }
      // Two retries, then the last attempt's failure dead-letters it: stored, not yet sent.
      expect(outcomes).toEqual([...Array<string>(MAX_ATTEMPTS - 1).fill('retried'), 'dead']);
      expect(await refundWorkFacts(db, id)).toMatchObject({
        status: 'pending',
        amount_refunded: 250,
        acquirer_refunds: 0,
        calls: MAX_ATTEMPTS,
        job_state: 'dead',
      });
      await eventually('the refused letter retried', async () => {
        const { rows } = await db.pool.query<{ attempts: number; published_at: Date | null }>(
          `SELECT attempts, published_at FROM dead_letters WHERE event_id = $1`,
          [refundEventId(id, 'refund.created')],
        );
        return rows.length === 1 && rows[0] && rows[0].attempts >= 2 && !rows[0].published_at
          ? rows
          : undefined;
      });
    } finally {
      brokerRefuses = false;
    }
    const letters = (await lettersBeforeBarrier()).filter(
      (r) => r.headers[DLQ_HEADERS.eventId] === refundEventId(id, 'refund.created'),
    );
    expect(letters.map((r) => r.headers)).toEqual([
      expect.objectContaining({
        [DLQ_HEADERS.attempts]: String(MAX_ATTEMPTS),
        [DLQ_HEADERS.errorClass]: 'acquirer_transient',
      }),
    ]);
  });
});
