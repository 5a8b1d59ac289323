import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createInboxConsumer,
  ensureInboxSchema,
  type EventHandler,
  type InboxConsumer,
  type OutOfOrderPolicy,
  type OutOfOrderReport,
} from '../../src/consumer-kit/consumer-kit.js';
import { toKafkaRecord } from '../../src/outbox/cloud-event.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { refundEventId, type RefundEventType } from '../../src/refunds/refund-event-id.js';
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

// The consumer kit against the real stack: CloudEvents as the relay writes them, on a fresh
// topic, read into the consumer's OWN database (an empty one, not the service's schema).

let kafka: KafkaClient;
let admin: Admin;
let db: TestDatabase;
/** The consumer's pool (the kit and its handler); db.pool is the test's eyes. */
let consumerPool: pg.Pool;
const topic = uniqueTopic('kit');
const consumers: InboxConsumer[] = [];

beforeAll(async () => {
  const config = testConfig();
  kafka = createKafka(config, createLogger(config));
  admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [topic], 3);
  db = await createTestDatabase({ migrated: false });
  consumerPool = new pg.Pool({ connectionString: db.url, max: 4 });
  consumerPool.on('error', () => undefined);
  await publishScenario();
});
afterAll(async () => {
  await Promise.all(consumers.map((consumer) => consumer.stop()));
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await admin.disconnect();
  await consumerPool.end();
  await db.drop();
});

const [p1, p2, p3, p4] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
const [r1, r2] = [randomUUID(), randomUUID()];

function refundEvent(paymentId: string, refundId: string, type: RefundEventType) {
  const event = {
    eventId: refundEventId(refundId, type),
    eventType: type,
    aggregateId: paymentId,
    merchantId: 'merchant-kit',
    data: { id: refundId, object: 'refund', payment_id: paymentId, amount: 100 },
    createdAt: new Date(),
  };
  return toKafkaRecord(event);
}

/** 12 distinct events, one sent twice, one out-of-order pair (p3), and one record that is no event. */
async function publishScenario(): Promise<void> {
  const records = [
    paymentRecord(p1, 'payment.created'),
    paymentRecord(p1, 'payment.created'), // the same event again (a republished copy)
    paymentRecord(p1, 'payment.settled'), // its handler fails once (a crash before the commit)
    paymentRecord(p2, 'payment.created'),
    paymentRecord(p2, 'payment.failed'),
    paymentRecord(p3, 'payment.settled'), // before its payment.created: out of order
    paymentRecord(p3, 'payment.created'),
    paymentRecord(p4, 'payment.created'),
    paymentRecord(p4, 'payment.settled'),
    refundEvent(p4, r1, 'refund.created'),
    refundEvent(p4, r2, 'refund.created'),
    refundEvent(p4, r2, 'refund.succeeded'), // refunds interleave: in order
    refundEvent(p4, r1, 'refund.failed'),
    { key: p2, value: 'not a cloud event', headers: {} },
  ];
  await publishRecords(kafka, topic, records);
}

/** A handler whose write is NOT idempotent: applying an event twice shows as applications = 2. */
function countingHandler(table: string, failOnceFor?: string): EventHandler {
  let failed = false;
  return async (event, { client }) => {
    await client.query(
      `INSERT INTO ${table} (event_id, event_type, subject, applications) VALUES ($1, $2, $3, 1)
       ON CONFLICT (event_id) DO UPDATE SET applications = ${table}.applications + 1`,
      [event.id, event.type, event.subject],
    );
    if (event.id === failOnceFor && !failed) {
      failed = true;
      throw new Error('the consumer crashed after its write, before the offset commit');
    }
  };
}

async function startConsumer(options: {
  table: string;
  prefix: string;
  policy: OutOfOrderPolicy;
  failOnceFor?: string;
  reports?: OutOfOrderReport[];
  invalid?: string[];
}): Promise<InboxConsumer> {
  await ensureInboxSchema(consumerPool, options.prefix);
  await consumerPool.query(
    `CREATE TABLE IF NOT EXISTS ${options.table} (event_id text PRIMARY KEY, event_type text,
       subject text, applications integer NOT NULL, seq bigserial)`,
  );
  const consumer = createInboxConsumer({
    kafka,
    groupId: `kit-${uniqueSuffix()}`,
    topic,
    pool: consumerPool,
    tablePrefix: options.prefix,
    outOfOrder: options.policy,
    handler: countingHandler(options.table, options.failOnceFor),
    onOutOfOrder: (report) => options.reports?.push(report),
    onInvalid: ({ reason }) => options.invalid?.push(reason),
    timeoutMs: 15_000,
    partitionsConsumedConcurrently: 3,
  });
  consumers.push(consumer);
  await consumer.start();
  return consumer;
}

async function applied(table: string) {
  const { rows } = await db.pool.query<{ event_id: string; subject: string; applications: number }>(
    `SELECT event_id, event_type, subject, applications FROM ${table} ORDER BY seq`,
  );
  return rows;
}

describe('consumer kit (real Kafka and Postgres)', () => {
  it('when events come duplicated, redelivered after a failure and out of order, then each is applied once and the violation is reported', async () => {
    const reports: OutOfOrderReport[] = [];
    const invalid: string[] = [];
    const failOnce = paymentEventId(p1, 'payment.settled');
    const consumer = await startConsumer({
      table: 'applied_events',
      prefix: 'inbox',
      policy: 'park',
      failOnceFor: failOnce,
      reports,
      invalid,
    });
    // 12 distinct events plus the duplicate plus the record that is no event: 14 records.
    await until(() => {
      const c = consumer.counters();
      return c.applied === 12 && c.duplicates === 1 && c.invalid === 1;
    }, 'every record handled');

    const rows = await applied('applied_events');
    expect(rows).toHaveLength(12);
    expect(rows.filter((row) => row.applications !== 1)).toEqual([]);
    // The parked p3 settled was applied right after p3 created, in the same transaction.
    const p3Order = rows.filter((row) => row.subject === p3).map((row) => row.event_id);
    expect(p3Order).toEqual([
      paymentEventId(p3, 'payment.created'),
      paymentEventId(p3, 'payment.settled'),
    ]);
    expect(consumer.counters()).toMatchObject({
      applied: 12,
      duplicates: 1,
      outOfOrder: 1,
      parked: 1,
      released: 1,
      refused: 0,
      invalid: 1,
    });
    expect(consumer.counters().failed).toBeGreaterThanOrEqual(1);
    expect(reports.map((r) => [r.event.id, r.problem, r.policy])).toEqual([
      [paymentEventId(p3, 'payment.settled'), 'payment.settled before payment.created', 'park'],
    ]);
    expect(invalid).toEqual(['the value is not JSON']);

    const inbox = await db.pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM inbox GROUP BY status`,
    );
    expect(inbox.rows).toEqual([{ status: 'applied', n: 12 }]);
    const subject = await db.pool.query(
      `SELECT state, last_event_type FROM inbox_subjects WHERE subject = $1`,
      [p4],
    );
    expect(subject.rows).toEqual([
      {
        state: { payment: 'settled', refunds: { [r1]: 'failed', [r2]: 'succeeded' } },
        last_event_type: 'refund.failed',
      },
    ]);

    // A crash before any offset commit redelivers everything: a new group reads the topic from
    // the start into the same database, and the inbox skips every event.
    await consumer.stop();
    const again = await startConsumer({ table: 'applied_events', prefix: 'inbox', policy: 'park' });
    await until(() => again.counters().duplicates === 13, 'every event redelivered');
    expect(again.counters()).toMatchObject({ applied: 0, duplicates: 13, outOfOrder: 0 });
    const after = await applied('applied_events');
    expect(after).toEqual(rows);
  });

  it('when the policy is refuse, then the out-of-order event is recorded as refused and never applied', async () => {
    const reports: OutOfOrderReport[] = [];
    const consumer = await startConsumer({
      table: 'refusing_events',
      prefix: 'refusing_inbox',
      policy: 'refuse',
      reports,
    });
    await until(() => consumer.counters().applied === 11, 'every record handled');
    await until(() => consumer.counters().refused === 1, 'the refusal');

    const rows = await applied('refusing_events');
    expect(rows.map((row) => row.event_id)).not.toContain(paymentEventId(p3, 'payment.settled'));
    expect(rows).toHaveLength(11);
    const refused = await db.pool.query(
      `SELECT event_id, order_problem, event->>'type' AS type FROM refusing_inbox
       WHERE status = 'refused'`,
    );
    expect(refused.rows).toEqual([
      {
        event_id: paymentEventId(p3, 'payment.settled'),
        order_problem: 'payment.settled before payment.created',
        type: 'payment.settled',
      },
    ]);
    expect(reports.map((r) => r.policy)).toEqual(['refuse']);
    await consumer.stop();
  });
});
