import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { DLQ_HEADERS } from '../../src/jobs/dead-letters/dead-letter.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  createSettlementHarness,
  eventually,
  readTopic,
  settled,
  settlementFacts,
  type SettlementHarness,
} from '../support/settlement-harness.js';

/**
 * SETTLEMENT_MAX_ATTEMPTS (5) bounds the acquirer calls of a payment whatever fails: the
 * acquirer, the completion step after it, the dead-letter publish, or a worker that outlives its
 * lease. And a dead job comes back only through `dlq:replay`, never through a stray duplicate.
 * Each test has its own topics (one partition) and settlement instance; the database is shared.
 */

let db: TestDatabase;
let harness: SettlementHarness | undefined;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});
afterAll(async () => {
  await db.drop();
});

async function freshHarness(): Promise<SettlementHarness> {
  harness = await createSettlementHarness(db, {}, 1);
  return harness;
}

function deadJob(paymentId: string, timeoutMs = 30_000) {
  return eventually(
    `job of ${paymentId} dead`,
    async () => {
      const facts = await settlementFacts(db, paymentId);
      return facts.job_state === 'dead' ? facts : undefined;
    },
    timeoutMs,
  );
}

async function jobAttempts(paymentId: string): Promise<number | undefined> {
  const { rows } = await db.pool.query<{ attempts: number }>(
    'SELECT attempts FROM settlement_jobs WHERE payment_id = $1',
    [paymentId],
  );
  return rows[0]?.attempts;
}

/** Waits past a lease (2 s here): long enough for any stray re-claim to have happened. */
const pastALease = () => new Promise((r) => setTimeout(r, 3_000));

describe('settlement attempt limit', () => {
  it('when the completion step fails after every charge, then the fifth attempt is the last and the event is dead-lettered', async () => {
    const h = await freshHarness();
    await h.start({ afterCharge: () => Promise.reject(new Error('completion failed')) });
    const id = await h.createPayment();
    await h.produce([await h.createdRecord(id)]);

    expect(await deadJob(id)).toMatchObject({
      status: 'processing',
      calls: 5,
      approved_charges: 1,
      result_events: 0,
    });
    const letters = await readTopic(h.platform.kafka, h.config.KAFKA_TOPIC_DLQ, 1);
    expect(letters[0]?.headers).toMatchObject({
      [DLQ_HEADERS.eventId]: paymentEventId(id, 'payment.created'),
      [DLQ_HEADERS.attempts]: '5',
      [DLQ_HEADERS.errorClass]: 'settlement_step_failed',
    });
    await pastALease();
    expect(await settlementFacts(db, id)).toMatchObject({ job_state: 'dead', calls: 5 });
  });

  it('when the dead-letter publish fails, then it is retried without calling the acquirer again', async () => {
    const h = await freshHarness();
    let brokerRefuses = true;
    let refused = 0;
    await h.start({
      beforeDeadLetter: () => {
        if (!brokerRefuses) return Promise.resolve();
        refused++;
        return Promise.reject(new Error('broker unavailable'));
      },
    });
    const id = await h.createPayment('tok_unavailable');
    await h.produce([await h.createdRecord(id)]);

    await eventually('three refused dead-letter publishes', () =>
      Promise.resolve(refused >= 3 ? true : undefined),
    );
    // Not lost (the dead letter waits in the database, record 49) and not charged again past
    // the limit: the job is dead and holds no lease while Kafka refuses.
    expect(await settlementFacts(db, id)).toMatchObject({
      status: 'processing',
      calls: 5,
      job_state: 'dead',
    });
    expect(await jobAttempts(id)).toBe(5);
    const waiting = await db.pool.query<{ published_at: Date | null }>(
      'SELECT published_at FROM dead_letters WHERE event_id = $1',
      [paymentEventId(id, 'payment.created')],
    );
    expect(waiting.rows).toEqual([{ published_at: null }]);

    brokerRefuses = false;
    expect(await deadJob(id)).toMatchObject({ calls: 5, approved_charges: 0 });
    const letters = await readTopic(h.platform.kafka, h.config.KAFKA_TOPIC_DLQ, 1);
    expect(letters.map((l) => l.headers[DLQ_HEADERS.attempts])).toEqual(['5']);
  });

  it('when the worker on the fifth attempt outlives its lease, then the job is dead-lettered without a sixth call', async () => {
    const h = await freshHarness();
    let releaseStalled: () => void = () => undefined;
    const stalled = new Promise<void>((resolve) => {
      releaseStalled = resolve;
    });
    let stalls = 0;
    await h.start({
      // A GC pause or a frozen process: the fifth attempt's outcome never reaches the database
      // before its lease (2 s) ends.
      afterCharge: (job) => {
        if (job.attempts !== 5 || stalls > 0) return Promise.resolve();
        stalls++;
        return stalled;
      },
    });
    const id = await h.createPayment('tok_timeout');
    await h.produce([await h.createdRecord(id)]);
    try {
      const dead = await deadJob(id);
      expect(dead).toMatchObject({ status: 'processing', calls: 5, approved_charges: 0 });
      expect(stalls).toBe(1);
      await pastALease();
      expect(await settlementFacts(db, id)).toMatchObject({ job_state: 'dead', calls: 5 });
      expect(await jobAttempts(id)).toBe(5);
    } finally {
      releaseStalled();
    }
    const letters = await readTopic(h.platform.kafka, h.config.KAFKA_TOPIC_DLQ, 1);
    expect(new Set(letters.map((l) => l.headers[DLQ_HEADERS.attempts]))).toEqual(new Set(['5']));
  });

  it('when a duplicate payment.created arrives for a dead job, then the job stays dead (only dlq:replay revives it)', async () => {
    const h = await freshHarness();
    await h.start();
    const id = await h.createPayment('tok_unavailable');
    const record = await h.createdRecord(id);
    await h.produce([record]);
    await deadJob(id);

    const barrier = await h.createPayment();
    await h.produce([record, await h.createdRecord(barrier)]); // same partition: in this order
    await settled(db, barrier);
    await pastALease();
    expect(await settlementFacts(db, id)).toMatchObject({
      status: 'processing',
      job_state: 'dead',
      calls: 5,
    });
    expect(await jobAttempts(id)).toBe(5);
  });
});
