import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DLQ_HEADERS } from '../../src/jobs/dead-letters/dead-letter.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { replayDeadLetters } from '../../src/jobs/dead-letters/replay-dead-letters.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  createSettlementHarness,
  readTopic,
  settled,
  settlementFacts,
  type SettlementHarness,
} from '../support/settlement-harness.js';
import { withDataVersion } from '../support/versioned-event.js';

/**
 * Mixed versions during a rolling deploy (issue 28 item 4, DESIGN: mixed versions): this
 * release's settlement fed the payment.created of the PREVIOUS release (no `dataversion`) and
 * of hypothetical NEXT ones: a newer minor (unknown attributes, fields and values) settles; a
 * newer major waits, dead-lettered with its event id, and settles once after the upgrade and
 * `dlq:replay`. Nothing is dropped.
 */

let db: TestDatabase;
let harness: SettlementHarness;
let current: Awaited<ReturnType<SettlementHarness['start']>>;
const silent = createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' });

beforeAll(async () => {
  db = await createTestDatabase();
  harness = await createSettlementHarness(db, {}, 1);
  current = await harness.start();
});
afterAll(async () => {
  await harness.close();
  await db.drop();
});

const exactlyOnce = { approved_charges: 1, calls: 1, result_events: 1, job_state: null };

describe('settlement across event versions', () => {
  it('when the event is the previous release payload (no dataversion), then the payment settles once', async () => {
    const id = await harness.createPayment();
    const record = withDataVersion(await harness.createdRecord(id), undefined);
    expect(JSON.parse(record.value.toString())).not.toHaveProperty('dataversion');
    await harness.produce([record]);
    expect(await settled(db, id)).toMatchObject(exactlyOnce);
  });

  it('when the event is a newer minor with attributes, fields and values this release does not know, then the payment settles once', async () => {
    const id = await harness.createPayment();
    const record = withDataVersion(await harness.createdRecord(id), '1.4', {
      envelope: { sequence: '17', partitionkey: id },
      data: {
        status: 'pending',
        payment_method: { type: 'card', brand: 'visa', last4: '4242' },
        risk: { score: 12, level: 'normal' },
        capture_method: 'automatic',
      },
    });
    await harness.produce([record]);
    expect(await settled(db, id)).toMatchObject(exactlyOnce);
  });

  it('when the event is of a newer major, then the payment waits, its dead letter keeps the event id, and after the upgrade dlq:replay settles it exactly once', async () => {
    const id = await harness.createPayment();
    const eventId = paymentEventId(id, 'payment.created');
    // A breaking change: the amount is an object now.
    const record = withDataVersion(await harness.createdRecord(id), '2.0', {
      data: { amount: { value: 1234, currency: 'EUR' } },
    });
    await harness.produce([record]);

    const letters = await readTopic(harness.platform.kafka, harness.config.KAFKA_TOPIC_DLQ, 1);
    const letter = letters.find((l) => l.headers[DLQ_HEADERS.eventId] === eventId);
    expect(letter?.headers).toMatchObject({
      [DLQ_HEADERS.errorClass]: 'unsupported_data_version',
      ce_id: eventId,
      ce_dataversion: '2.0',
    });
    // The letter is the record as it was: a replay puts back the same bytes.
    expect(letter?.value?.toString()).toBe(record.value.toString());
    expect(await settlementFacts(db, id)).toMatchObject({
      status: 'pending',
      calls: 0,
      job_state: null,
    });

    // The upgrade: a settlement that reads major 2 replaces this one, then dlq:replay.
    await current.close();
    current = await harness.start({ readableDataMajor: 2 });
    const replay = () =>
      replayDeadLetters(
        harness.platform.kafka,
        harness.platform.admin,
        {
          dlqTopic: harness.config.KAFKA_TOPIC_DLQ,
          mainTopic: harness.config.KAFKA_TOPIC_PAYMENTS,
          select: { eventId },
        },
        silent,
      );
    expect((await replay()).replayed).toEqual([eventId]);
    expect(await settled(db, id)).toMatchObject(exactlyOnce);

    // A second replay changes nothing: one charge, one result event.
    await replay();
    const barrier = await harness.createPayment();
    await harness.produce([await harness.createdRecord(barrier)]);
    await settled(db, barrier);
    expect(await settlementFacts(db, id)).toMatchObject({ status: 'settled', ...exactlyOnce });
  });
});
