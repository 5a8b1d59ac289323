import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { DLQ_HEADERS } from '../../src/jobs/dead-letters/dead-letter.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  privateKafkaUnavailable,
  startPrivateKafka,
  type PrivateKafka,
} from '../support/private-kafka.js';
import {
  createSettlementHarness,
  eventually,
  settlementFacts,
  type SettlementHarness,
} from '../support/settlement-harness.js';
import { readTopic } from '../support/topic-reader.js';

/**
 * Kafka frozen (SIGSTOP of a broker of this file's own) just as an exhausted payment is
 * dead-lettered (issue 25, defect 2). The dead-letter send is bounded and the letter waits in
 * the database: the job's slot is free at once, other payments settle meanwhile, the role
 * closes within its bound, and after the thaw the dead-letter topic has that payment's letter
 * exactly once (a read-committed reader: the failed send's transaction is aborted).
 */
const unavailable = privateKafkaUnavailable();
/** A frozen broker fails each request after this long (the dead-letter client retries twice). */
const REQUEST_TIMEOUT_MS = 2_000;
/** What closing the role may take with the broker frozen: a few bounded requests. */
const CLOSE_BOUND_MS = 30_000;
let broker: PrivateKafka | undefined;
let db: TestDatabase;
let harness: SettlementHarness | undefined;

beforeAll(async () => {
  if (unavailable) return;
  [broker, db] = await Promise.all([startPrivateKafka(), createTestDatabase()]);
  harness = await createSettlementHarness(
    db,
    {
      KAFKA_BROKERS: broker.brokers,
      KAFKA_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      SETTLEMENT_MAX_ATTEMPTS: '2',
      // Two slots: on the unbounded producer, the exhausted job and its re-claim after the
      // lease (1 s) hold both, and nothing else settles.
      SETTLEMENT_CONCURRENCY: '2',
    },
    1,
  );
}, 120_000);
afterAll(async () => {
  if (unavailable) return;
  broker?.thaw();
  await harness?.close();
  await Promise.all([broker?.destroy(), db.drop()]);
}, 120_000);

/** Payments whose settlement jobs exist already (intake done) and fall due in `dueInMs`. */
async function jobsDueIn(h: SettlementHarness, count: number, dueInMs: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await h.createPayment('tok_visa'));
  await db.pool.query(`UPDATE payments SET status = 'processing' WHERE id = ANY($1::uuid[])`, [
    ids,
  ]);
  await db.pool.query(
    `INSERT INTO settlement_jobs (payment_id, event_id, source_topic, source_partition,
                                  source_offset, message_key, message_value, next_attempt_at)
     SELECT p.id, p.event_id, 'fixture', 0, '0', p.id::text, '{}',
            now() + make_interval(secs => $3::double precision / 1000)
       FROM unnest($1::uuid[], $2::uuid[]) AS p(id, event_id)`,
    [ids, ids.map((id) => paymentEventId(id, 'payment.created')), dueInMs],
  );
  return ids;
}

describe('dead letters while Kafka is frozen', () => {
  it.skipIf(unavailable !== undefined)(
    `when the broker freezes as a payment exhausts its attempts, then no slot hangs, other payments settle, close is bounded, and after the thaw the DLQ has one letter for it${unavailable ? ` (skipped: ${unavailable})` : ''}`,
    async () => {
      const h = harness as SettlementHarness;
      let frozen = false;
      const first = await h.start({
        // The broker freezes right before the first dead letter is sent.
        beforeDeadLetter: () => {
          if (!frozen) {
            frozen = true;
            broker?.freeze();
          }
          return Promise.resolve();
        },
      });
      const id = await h.createPayment('tok_unavailable');
      const eventId = paymentEventId(id, 'payment.created');
      await h.produce([await h.createdRecord(id)]);
      await eventually('the broker frozen by the dead letter', () =>
        Promise.resolve(frozen ? true : undefined),
      );

      // Due after the exhausted job's lease (1 s) ran out at least twice: on an unbounded
      // producer both slots are held by then.
      const others = await jobsDueIn(h, 4, 3_000);
      await eventually(
        'the other payments settled while Kafka is frozen',
        async () => {
          const facts = await Promise.all(others.map((other) => settlementFacts(db, other)));
          return facts.every((f) => f.status === 'settled') ? true : undefined;
        },
        20_000,
      );
      expect(await settlementFacts(db, id)).toMatchObject({
        status: 'processing',
        calls: 2,
        job_state: 'dead',
      });
      const { rows: waiting } = await db.pool.query<{ published_at: Date | null }>(
        'SELECT published_at FROM dead_letters WHERE event_id = $1',
        [eventId],
      );
      expect(waiting).toEqual([{ published_at: null }]);

      // SIGTERM with the broker still frozen: bounded, the letter stays in the database.
      const closing = performance.now();
      await first.close();
      expect(performance.now() - closing).toBeLessThan(CLOSE_BOUND_MS);

      broker?.thaw();
      await h.start();
      await eventually(
        'the dead letter published after the thaw',
        async () => {
          const { rows } = await db.pool.query<{ published_at: Date | null }>(
            'SELECT published_at FROM dead_letters WHERE event_id = $1',
            [eventId],
          );
          return rows[0]?.published_at ? true : undefined;
        },
        60_000,
      );
      const admin = h.platform.kafka.admin();
      await admin.connect();
      try {
        const letters = (
          await readTopic(h.platform.kafka, admin, h.config.KAFKA_TOPIC_DLQ, 60_000)
        ).filter((letter) => letter.headers[DLQ_HEADERS.eventId] === eventId);
        // Exactly once: the send the freeze failed was in a transaction the next producer
        // fenced, so what the broker appended of it late is aborted, never read.
        expect(letters).toHaveLength(1);
        expect(letters[0]?.headers).toMatchObject({
          [DLQ_HEADERS.attempts]: '2',
          [DLQ_HEADERS.errorClass]: 'acquirer_transient',
        });
      } finally {
        await admin.disconnect();
      }
      expect(await settlementFacts(db, id)).toMatchObject({ calls: 2, job_state: 'dead' });
    },
    240_000,
  );
});
