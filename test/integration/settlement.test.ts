import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Acquirer } from '../../src/acquirer/acquirer.js';
import { createAcquirerSimulator } from '../../src/acquirer/acquirer-simulator.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { DLQ_HEADERS } from '../../src/jobs/dead-letters/dead-letter.js';
import { replayDeadLetters } from '../../src/jobs/dead-letters/replay-dead-letters.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
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
 * Settlement against the real broker and database. The payments topic of this file has ONE
 * partition, so "behind it on the same partition" is literally true for the poison test.
 */

let db: TestDatabase;
let harness: SettlementHarness;

beforeAll(async () => {
  db = await createTestDatabase();
  harness = await createSettlementHarness(db, {}, 1);
  await harness.start();
});
afterAll(async () => {
  await harness.close();
  await db.drop();
});

describe('settlement consumer', () => {
  it('when the same event arrives twice and is republished at a new offset, then one charge and one settlement', async () => {
    const id = await harness.createPayment();
    const record = await harness.createdRecord(id);
    await harness.produce([record, record]);
    await harness.produce([record]); // a relay republishing it: a new offset, the same event id
    await settled(db, id);
    // Give the copies time to arrive; they must change nothing.
    await eventually('all three copies consumed', async () => {
      const { rows } = await db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM processed_events WHERE payment_id = $1',
        [id],
      );
      return rows[0]?.n === 1 ? true : undefined;
    });
    const marker = await harness.createPayment(); // consumed after the copies: a barrier
    await harness.produce([await harness.createdRecord(marker)]);
    await settled(db, marker);
    expect(await settlementFacts(db, id)).toMatchObject({
      status: 'settled',
      approved_charges: 1,
      calls: 1,
      result_events: 1,
      job_state: null,
    });
    const { rows } = await db.pool.query<{ event_id: string }>(
      `SELECT event_id FROM outbox WHERE aggregate_id = $1 AND event_type = 'payment.settled'`,
      [id],
    );
    expect(rows).toEqual([{ event_id: paymentEventId(id, 'payment.settled') }]);
  });

  it('when the source is tok_transient_3, then it settles on the fourth call after three retries', async () => {
    const id = await harness.createPayment('tok_transient_3');
    await harness.produce([await harness.createdRecord(id)]);
    const facts = await settled(db, id);
    expect(facts).toMatchObject({ approved_charges: 1, calls: 4, result_events: 1 });
  });

  it('when the source is tok_decline, then the payment fails at once with card_declined', async () => {
    const id = await harness.createPayment('tok_decline');
    await harness.produce([await harness.createdRecord(id)]);
    const facts = await settled(db, id, 'failed');
    expect(facts).toMatchObject({
      failure_code: 'card_declined',
      calls: 1,
      approved_charges: 0,
      result_events: 1,
    });
  });

  it('when the record is poison, then it is dead-lettered and the payments behind it settle', async () => {
    const behind = await harness.createPayment();
    await harness.produce([
      { key: 'garbage', value: '{not json', headers: {} },
      { key: 'unknown', value: JSON.stringify({ specversion: '1.0', id: 'x' }), headers: {} },
      await harness.createdRecord(behind),
    ]);
    await settled(db, behind);
    const letters = await readTopic(harness.platform.kafka, harness.config.KAFKA_TOPIC_DLQ, 2);
    const poison = letters.filter((l) => l.key === 'garbage' || l.key === 'unknown');
    expect(poison.map((l) => l.headers[DLQ_HEADERS.errorClass]).sort()).toEqual([
      'invalid_envelope',
      'malformed_json',
    ]);
    const garbage = poison.find((l) => l.key === 'garbage');
    expect(garbage?.value?.toString()).toBe('{not json');
    expect(garbage?.headers[DLQ_HEADERS.originalTopic]).toBe(harness.config.KAFKA_TOPIC_PAYMENTS);
    expect(garbage?.headers[DLQ_HEADERS.originalPartition]).toBe('0');
    expect(Number(garbage?.headers[DLQ_HEADERS.originalOffset])).toBeGreaterThanOrEqual(0);
  });

  it('when the acquirer is unavailable, then after 5 attempts the event is dead-lettered; replayed after recovery, it settles', async () => {
    const id = await harness.createPayment('tok_unavailable');
    const eventId = paymentEventId(id, 'payment.created');
    await harness.produce([await harness.createdRecord(id)]);
    const dead = await eventually('job dead', async () => {
      const facts = await settlementFacts(db, id);
      return facts.job_state === 'dead' ? facts : undefined;
    });
    expect(dead).toMatchObject({ status: 'processing', calls: 5, approved_charges: 0 });

    const letters = await readTopic(harness.platform.kafka, harness.config.KAFKA_TOPIC_DLQ, 1);
    const letter = letters.find((l) => l.headers[DLQ_HEADERS.eventId] === eventId);
    expect(letter?.key).toBe(id);
    expect(letter?.headers).toMatchObject({
      [DLQ_HEADERS.errorClass]: 'acquirer_transient',
      [DLQ_HEADERS.attempts]: '5',
      [DLQ_HEADERS.originalTopic]: harness.config.KAFKA_TOPIC_PAYMENTS,
    });
    const first = Date.parse(letter?.headers[DLQ_HEADERS.firstFailureAt] ?? '');
    const last = Date.parse(letter?.headers[DLQ_HEADERS.lastFailureAt] ?? '');
    expect(last).toBeGreaterThan(first);

    // The acquirer recovers: a settlement instance whose acquirer now accepts this card.
    await harness.close();
    harness = await createSettlementHarness(
      db,
      {
        KAFKA_TOPIC_PAYMENTS: harness.config.KAFKA_TOPIC_PAYMENTS,
        KAFKA_TOPIC_DLQ: harness.config.KAFKA_TOPIC_DLQ,
        KAFKA_CONSUMER_GROUP: harness.config.KAFKA_CONSUMER_GROUP,
      },
      1,
    );
    const simulator = createAcquirerSimulator(db.login('settlement'), {
      latencyMs: 0,
      transientFailureRate: 0,
      timeoutTokenDelayMs: 1_000,
    });
    const recovered: Acquirer = {
      charge: (request, signal) =>
        simulator.charge(
          {
            ...request,
            source: request.source === 'tok_unavailable' ? 'tok_visa' : request.source,
          },
          signal,
        ),
    };
    await harness.start({ acquirer: recovered });
    const result = await replayDeadLetters(
      harness.platform.kafka,
      harness.platform.admin,
      {
        dlqTopic: harness.config.KAFKA_TOPIC_DLQ,
        mainTopic: harness.config.KAFKA_TOPIC_PAYMENTS,
        select: { eventId },
      },
      createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' }),
    );
    expect(result.replayed).toEqual([eventId]);
    expect(await settled(db, id)).toMatchObject({
      approved_charges: 1,
      result_events: 1,
      job_state: null,
    });

    // Replaying a settled payment again is a no-op.
    await replayDeadLetters(
      harness.platform.kafka,
      harness.platform.admin,
      {
        dlqTopic: harness.config.KAFKA_TOPIC_DLQ,
        mainTopic: harness.config.KAFKA_TOPIC_PAYMENTS,
        select: { all: true },
      },
      createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' }),
    );
    const barrier = await harness.createPayment();
    await harness.produce([await harness.createdRecord(barrier)]);
    await settled(db, barrier);
    expect(await settlementFacts(db, id)).toMatchObject({
      status: 'settled',
      approved_charges: 1,
      result_events: 1,
    });
  });

  it('when the worker stalls after the acquirer charged, before the commit, past its lease, then another claim settles it: one charge, one settlement, and the stalled claim writes nothing', async () => {
    await harness.close();
    const config = harness.config;
    harness = await createSettlementHarness(
      db,
      {
        KAFKA_TOPIC_PAYMENTS: config.KAFKA_TOPIC_PAYMENTS,
        KAFKA_TOPIC_DLQ: config.KAFKA_TOPIC_DLQ,
        KAFKA_CONSUMER_GROUP: config.KAFKA_CONSUMER_GROUP,
        // Long enough that no lease runs out unless the test ends it.
        SETTLEMENT_LEASE_MS: '60000',
      },
      1,
    );
    // The first claim stalls between the acquirer's answer and its commit (a frozen process),
    // then fails once released; any later claim goes through.
    let charged = false;
    let release: (error: Error) => void = () => undefined;
    const stalled = new Promise<never>((_, reject) => {
      release = reject;
    });
    const first = await harness.start({
      afterCharge: () => {
        if (charged) return Promise.resolve();
        charged = true;
        return stalled;
      },
    });
    const id = await harness.createPayment();
    await harness.produce([await harness.createdRecord(id)]);
    await eventually('the first claim charged', () => Promise.resolve(charged ? true : undefined));
    expect(await settlementFacts(db, id)).toMatchObject({
      status: 'processing',
      approved_charges: 1,
      calls: 1,
    });

    // Its lease runs out (fast-forwarded here instead of waiting 60 s) and another claim, by a
    // second process (or the first one's loop), takes the job and settles it.
    await db.pool.query('UPDATE settlement_jobs SET locked_until = now() WHERE payment_id = $1', [
      id,
    ]);
    await harness.start();
    expect(await settled(db, id)).toMatchObject({
      approved_charges: 1,
      calls: 2,
      replayed_calls: 1,
      result_events: 1,
    });

    // The stalled claim wakes up failing: its failure write is refused by the new owner's
    // token (the job is gone), nothing changes.
    release(new Error('killed'));
    await first.close();
    expect(await settlementFacts(db, id)).toMatchObject({
      status: 'settled',
      approved_charges: 1,
      calls: 2,
      result_events: 1,
    });
    const { rows } = await db.pool.query('SELECT 1 FROM settlement_jobs WHERE payment_id = $1', [
      id,
    ]);
    expect(rows).toEqual([]);
  });
});
