import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createInboxConsumer,
  ensureInboxSchema,
  type GapDecision,
  type GapHandler,
  type InboxConsumer,
  type OrderGap,
} from '../../src/consumer-kit/consumer-kit.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import {
  createKafka,
  ensureTopics,
  type Admin,
  type KafkaClient,
} from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import {
  createTestDatabase,
  testConfig,
  uniqueSuffix,
  uniqueTopic,
  type TestDatabase,
} from '../support/isolation.js';
import { paymentRecord, publishRecords, until } from '../support/consumer-kit-records.js';

// Issue 40: the kit parked an event whose predecessor fell out of the topic's retention (or was
// never on the topic) forever. Now it reports the gap to onGap and carries out the consumer's
// decision. Real Kafka (the retention's deletion done by deleteRecords, which moves the
// partition's earliest offset as retention does) and Postgres (the consumer's own database).

let kafka: KafkaClient;
let admin: Admin;
let db: TestDatabase;
let consumerPool: pg.Pool;
const retained = uniqueTopic('kit-gap');
const latecomer = uniqueTopic('kit-wait');
const consumers: InboxConsumer[] = [];

const [pA, pB, pC, pD, pF] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
const manual = { capture_method: 'manual' };

beforeAll(async () => {
  const config = testConfig();
  kafka = createKafka(config, createLogger(config));
  admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [retained, latecomer], 1);
  db = await createTestDatabase({ migrated: false });
  consumerPool = new pg.Pool({ connectionString: db.url, max: 4 });
  consumerPool.on('error', () => undefined);
  await publishRecords(kafka, retained, [
    paymentRecord(pA, 'payment.created'), // offset 0: deleted below, as retention would
    paymentRecord(pA, 'payment.settled'),
    paymentRecord(pB, 'payment.settled'), // its payment.created was never on the topic
    paymentRecord(pC, 'payment.created', manual), // a manual payment, in order
    paymentRecord(pC, 'payment.authorized', manual),
    paymentRecord(pC, 'payment.settled', { ...manual, amount_captured: 4000 }),
    paymentRecord(pD, 'payment.created', manual),
    paymentRecord(pD, 'payment.canceled', manual), // its payment.authorized never came
  ]);
  await admin.deleteTopicRecords({ topic: retained, partitions: [{ partition: 0, offset: '1' }] });
  await publishRecords(kafka, latecomer, [
    { key: pF, value: 'not a cloud event' }, // offset 0: nothing in the inbox at the earliest offset
    paymentRecord(pF, 'payment.settled'),
  ]);
});
afterAll(async () => {
  await Promise.all(consumers.map((consumer) => consumer.stop()));
  await admin.deleteTopics({ topics: [retained, latecomer] }).catch(() => undefined);
  await admin.disconnect();
  await consumerPool.end();
  await db.drop();
});

async function start(options: {
  topic: string;
  prefix: string;
  onGap?: GapHandler;
  decided: { gap: OrderGap; outcome: string }[];
}): Promise<InboxConsumer> {
  await ensureInboxSchema(consumerPool, options.prefix);
  await consumerPool.query(
    `CREATE TABLE IF NOT EXISTS ${options.prefix}_effects (event_id text PRIMARY KEY,
       subject text, event_type text, data jsonb, gap_reason text, gap_missing text,
       seq bigserial)`,
  );
  const consumer = createInboxConsumer({
    kafka,
    groupId: `kit-gap-${uniqueSuffix()}`,
    topic: options.topic,
    pool: consumerPool,
    tablePrefix: options.prefix,
    handler: async (event, { client, gap }) => {
      await client.query(
        `INSERT INTO ${options.prefix}_effects (event_id, subject, event_type, data, gap_reason,
           gap_missing) VALUES ($1, $2, $3, $4, $5, $6)`,
        [event.id, event.subject, event.type, event.data, gap?.reason, gap?.missing],
      );
    },
    ...(options.onGap ? { onGap: options.onGap } : {}),
    onGapDecided: (report) => options.decided.push(report),
    gapAfterMs: 5_000,
    gapCheckMs: 200,
    timeoutMs: 15_000,
  });
  consumers.push(consumer);
  await consumer.start();
  return consumer;
}

async function effects(prefix: string) {
  const { rows } = await db.pool.query<{
    event_type: string;
    subject: string;
    data: { status?: string; fetched?: boolean };
    gap_reason: string | null;
    gap_missing: string | null;
  }>(
    `SELECT subject, event_type, data, gap_reason, gap_missing FROM ${prefix}_effects ORDER BY seq`,
  );
  return rows;
}

describe('consumer kit: a predecessor that never comes (real Kafka and Postgres)', () => {
  it("when the predecessor fell out of retention or was never on the topic, then the gap is reported without waiting and the consumer's choice is carried out", async () => {
    const decided: { gap: OrderGap; outcome: string }[] = [];
    const asked: string[] = [];
    // The consumer's choice: pA fetched anew (as GET /payments/{id} would answer) and applied,
    // pB skipped, pD waited for once and then applied as it is.
    const onGap: GapHandler = (gap): GapDecision => {
      asked.push(`${gap.event.subject}:${gap.reason}`);
      if (gap.event.subject === pA) {
        return { action: 'apply', data: { id: pA, status: 'settled', fetched: true } };
      }
      if (gap.event.subject === pB) return { action: 'skip' };
      return asked.filter((entry) => entry.startsWith(pD)).length === 1
        ? { action: 'wait' }
        : { action: 'apply' };
    };
    const consumer = await start({ topic: retained, prefix: 'kept', onGap, decided });
    await until(() => consumer.counters().gaps === 4, 'four gap decisions');

    const outcomes = decided.map(({ gap, outcome }) => [
      gap.event.id,
      gap.reason,
      gap.missing,
      outcome,
    ]);
    expect(outcomes).toEqual([
      [paymentEventId(pA, 'payment.settled'), 'before_retention', 'payment.created', 'applied'],
      [paymentEventId(pB, 'payment.settled'), 'before_retention', 'payment.created', 'skipped'],
      [paymentEventId(pD, 'payment.canceled'), 'before_retention', 'payment.authorized', 'waiting'],
      // Asked again after gapAfterMs (5 s), not on every sweep (every 200 ms).
      [paymentEventId(pD, 'payment.canceled'), 'waited', 'payment.authorized', 'applied'],
    ]);
    expect(consumer.counters()).toMatchObject({ gaps: 4, skipped: 1, parked: 3, applied: 6 });

    const rows = await effects('kept');
    expect(rows.filter((row) => row.subject === pC).map((row) => row.gap_reason)).toEqual([
      null,
      null,
      null,
    ]);
    expect(rows.find((row) => row.subject === pA)).toMatchObject({
      event_type: 'payment.settled',
      data: { status: 'settled', fetched: true },
      gap_reason: 'before_retention',
      gap_missing: 'payment.created',
    });
    expect(rows.filter((row) => row.subject === pB)).toEqual([]);
    expect(rows.filter((row) => row.subject === pD).map((row) => row.event_type)).toEqual([
      'payment.created',
      'payment.canceled',
    ]);

    const inbox = await db.pool.query<{ subject: string; status: string; gap_decision: string }>(
      `SELECT subject, status, gap_decision FROM kept WHERE gap_decision IS NOT NULL
       ORDER BY subject = $1 DESC, subject = $2 DESC`,
      [pA, pB],
    );
    expect(inbox.rows).toEqual([
      { subject: pA, status: 'applied', gap_decision: 'applied_with_data' },
      { subject: pB, status: 'skipped', gap_decision: 'skip' },
      { subject: pD, status: 'applied', gap_decision: 'applied' },
    ]);
    const states = await db.pool.query<{ subject: string; state: unknown }>(
      `SELECT subject, state FROM kept_subjects WHERE subject = ANY($1) ORDER BY subject = $2 DESC`,
      [[pA, pD], pA],
    );
    expect(states.rows).toEqual([
      { subject: pA, state: { payment: 'settled' } },
      { subject: pD, state: { payment: 'canceled' } },
    ]);
  });

  it('when the kit cannot tell where the predecessor is, then it waits gapAfterMs and, without an onGap, applies the event with the gap in its context', async () => {
    const decided: { gap: OrderGap; outcome: string }[] = [];
    const consumer = await start({ topic: latecomer, prefix: 'late', decided });
    await until(() => consumer.counters().parked === 1, 'the settled event parked');
    const parkedAt = Date.now();
    await until(() => consumer.counters().gaps === 1, 'the gap reported');
    expect(Date.now() - parkedAt).toBeGreaterThanOrEqual(4_000);
    expect(decided.map(({ gap, outcome }) => [gap.reason, gap.missing, outcome])).toEqual([
      ['waited', 'payment.created', 'applied'],
    ]);
    expect(await effects('late')).toEqual([
      {
        subject: pF,
        event_type: 'payment.settled',
        data: expect.objectContaining({ id: pF }) as unknown,
        gap_reason: 'waited',
        gap_missing: 'payment.created',
      },
    ]);
    expect(consumer.counters()).toMatchObject({ invalid: 1, parked: 1, gaps: 1, applied: 1 });
  });
});
