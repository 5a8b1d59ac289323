import {
  startSettlement,
  type SettlementOptions,
} from '../../src/apps/settlement/start-settlement.js';
import type { RunningRole } from '../../src/apps/running-role.js';
import { insertPaymentOnce } from '../../src/payments/payment-insert-single.js';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { toKafkaRecord } from '../../src/outbox/cloud-event.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import type { Config } from '../../src/platform/config/config.js';
import {
  consume,
  createConsumer,
  createIdempotentProducer,
  ensureTopics,
  publish,
  type ConsumedRecord,
  type KafkaClient,
  type ProducerRecord,
} from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { createPlatform, type Platform } from '../../src/platform/lifecycle/platform.js';
import { newPaymentResource } from '../../src/payments/payment-resource.js';
import { testConfig, uniqueSuffix, type TestDatabase } from './isolation.js';
import { v7 as uuidv7 } from 'uuid';
import type { DeadLetterOutbox } from '../../src/jobs/dead-letters/dead-letter-job.js';
import {
  createDeadLetterPublisher,
  type DeadLetterPublisher,
} from '../../src/jobs/dead-letters/dead-letter-publisher.js';

/**
 * Settings that make retries and leases fast enough for tests, not different in kind: the lease
 * still outlasts an attempt (ACQUIRER_TIMEOUT_MS + DATABASE_QUERY_TIMEOUT_MS, checked at boot).
 */
export const FAST_SETTLEMENT = {
  // The attempt guard of before issue 36 (its default is now 1,000, the budget a day's window):
  // the tests of the limit (DESIGN 53) reach it in seconds.
  SETTLEMENT_MAX_ATTEMPTS: '5',
  REFUND_MAX_ATTEMPTS: '5',
  SETTLEMENT_BACKOFF_BASE_MS: '20',
  SETTLEMENT_BACKOFF_CAP_MS: '200',
  SETTLEMENT_POLL_MS: '50',
  SETTLEMENT_LEASE_MS: '2000',
  // Refunds have settings of their own (REFUND_*): the same fast numbers.
  REFUND_BACKOFF_BASE_MS: '20',
  REFUND_BACKOFF_CAP_MS: '200',
  REFUND_POLL_MS: '50',
  REFUND_LEASE_MS: '2000',
  ACQUIRER_TIMEOUT_MS: '300',
  DATABASE_STATEMENT_TIMEOUT_MS: '1500',
  DATABASE_QUERY_TIMEOUT_MS: '1600',
};

export interface SettlementHarness {
  config: Config;
  platform: Platform;
  /** Starts one settlement instance (a consumer in the file's group); close it when done. */
  start: (options?: SettlementOptions) => Promise<RunningRole & { platform: Platform }>;
  /** A pending payment with its outbox row, as POST /payments writes them. */
  createPayment: (source?: string) => Promise<string>;
  /** The payment.created record of a payment, as the relay would publish it. */
  createdRecord: (paymentId: string) => Promise<ProducerRecord>;
  produce: (records: ProducerRecord[], topic?: string) => Promise<void>;
  /**
   * A dead-letter outbox for workers the test builds itself: letters they store are sent to the
   * dead-letter topic by a running publisher (as in the settlement role), stopped by close().
   * `beforeSend` runs before each send; a rejection fails it (a broker refusing the letters).
   */
  deadLetters: (beforeSend?: () => Promise<void>) => DeadLetterOutbox;
  close: () => Promise<void>;
}

export async function createSettlementHarness(
  db: TestDatabase,
  overrides: Record<string, string> = {},
  partitions = 3,
): Promise<SettlementHarness> {
  const config = testConfig({
    ...FAST_SETTLEMENT,
    ...overrides,
    DATABASE_URL: db.roleUrl('settlement'),
  });
  const platform = await createPlatform(config, createLogger(config));
  await ensureTopics(
    platform.admin,
    [config.KAFKA_TOPIC_PAYMENTS, config.KAFKA_TOPIC_DLQ],
    partitions,
  );
  const producer = createIdempotentProducer(platform.kafka);
  await producer.connect();
  const merchant = await createMerchant(db.pool, 'settlement tests');
  const instances: (RunningRole & { platform: Platform })[] = [];
  const publishers: DeadLetterPublisher[] = [];

  return {
    config,
    platform,
    async start(options = {}) {
      // Each instance has its own clients, like a separate process in the same group.
      const own = await createPlatform(config, createLogger(config));
      const role = await startSettlement(own, options);
      const instance = {
        ...role,
        platform: own,
        close: async () => {
          await role.close();
          await own.close();
        },
      };
      instances.push(instance);
      return instance;
    },
    async createPayment(source = 'tok_visa') {
      const id = uuidv7();
      const createdAt = new Date();
      const body = {
        amount: 1234,
        currency: 'EUR' as const,
        source: source as 'tok_visa',
        metadata: {},
      };
      const resource = newPaymentResource(id, body, createdAt);
      // What the API writes, as the API's login writes it.
      await insertPaymentOnce(db.login('api'), {
        merchantId: merchant.id,
        idempotencyKey: `key-${uniqueSuffix()}`,
        fingerprint: Buffer.alloc(32),
        ttlSeconds: 3600,
        response: { status: 202, body: JSON.stringify(resource) },
        payment: { ...body, id, description: null, metadata: {}, createdAt },
        event: {
          id: paymentEventId(id, 'payment.created'),
          type: 'payment.created',
          topic: config.KAFKA_TOPIC_PAYMENTS,
          data: resource,
        },
      });
      return id;
    },
    async createdRecord(paymentId) {
      const { rows } = await db.pool.query<{
        event_id: string;
        event_type: string;
        aggregate_id: string;
        data: unknown;
        created_at: Date;
      }>(
        `SELECT event_id, event_type, aggregate_id, data, created_at FROM outbox
          WHERE aggregate_id = $1 AND event_type = 'payment.created'`,
        [paymentId],
      );
      const row = rows[0];
      if (!row) throw new Error(`no outbox row for ${paymentId}`);
      return toKafkaRecord({
        eventId: row.event_id,
        eventType: row.event_type,
        aggregateId: row.aggregate_id,
        data: row.data,
        createdAt: row.created_at,
      });
    },
    async produce(records, topic = config.KAFKA_TOPIC_PAYMENTS) {
      await publish(producer, [{ topic, records }]);
    },
    deadLetters(beforeSend) {
      const publisher = createDeadLetterPublisher({
        pool: platform.pool,
        send: async (batches) => {
          await beforeSend?.();
          await publish(producer, batches);
        },
        logger: platform.logger,
        retryDelayMs: () => 50,
        pollMs: 100,
      });
      publisher.start();
      publishers.push(publisher);
      return { topic: config.KAFKA_TOPIC_DLQ, wake: publisher.wake };
    },
    async close() {
      await Promise.allSettled(publishers.map((publisher) => publisher.stop()));
      await Promise.allSettled(instances.map((instance) => instance.close()));
      await producer.disconnect();
      await platform.close();
    },
  };
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Every record currently on `topic` (from the beginning), read with a throwaway group. */
export async function readTopic(
  kafka: KafkaClient,
  topic: string,
  expectAtLeast: number,
  timeoutMs = 30_000,
): Promise<ConsumedRecord[]> {
  const records: ConsumedRecord[] = [];
  const consumer = createConsumer(kafka, `reader-${uniqueSuffix()}`, 100);
  await consumer.connect();
  try {
    await consume(consumer, [topic], (record) => {
      records.push(record);
      return Promise.resolve();
    });
    await eventually(
      `${expectAtLeast} records on ${topic}`,
      () => Promise.resolve(records.length >= expectAtLeast ? true : undefined),
      timeoutMs,
    );
    return records;
  } finally {
    await consumer.disconnect();
  }
}

/** Payment status plus what the simulator and the outbox saw for it. */
export async function settlementFacts(db: TestDatabase, paymentId: string) {
  const { rows } = await db.pool.query<{
    status: string;
    failure_code: string | null;
    charges: number;
    approved_charges: number;
    calls: number;
    replayed_calls: number;
    result_events: number;
    job_state: string | null;
  }>(
    `SELECT p.status, p.failure_code,
            (SELECT count(*)::int FROM acquirer_simulator_charges c WHERE c.payment_id = p.id) AS charges,
            (SELECT count(*)::int FROM acquirer_simulator_charges c
              WHERE c.payment_id = p.id AND c.result = 'approved') AS approved_charges,
            (SELECT count(*)::int FROM acquirer_simulator_calls c WHERE c.payment_id = p.id) AS calls,
            (SELECT count(*)::int FROM acquirer_simulator_calls c
              WHERE c.payment_id = p.id AND c.replayed) AS replayed_calls,
            (SELECT count(*)::int FROM outbox o
              WHERE o.aggregate_id = p.id AND o.event_type IN ('payment.settled', 'payment.failed')) AS result_events,
            (SELECT state FROM settlement_jobs j WHERE j.payment_id = p.id) AS job_state
       FROM payments p WHERE p.id = $1`,
    [paymentId],
  );
  const facts = rows[0];
  if (!facts) throw new Error(`no payment ${paymentId}`);
  return facts;
}

/** Resolves once the payment reached `status` (settled, failed). */
export function settled(
  db: TestDatabase,
  paymentId: string,
  status = 'settled',
  timeoutMs = 30_000,
) {
  return eventually(
    `payment ${paymentId} ${status}`,
    async () => {
      const facts = await settlementFacts(db, paymentId);
      return facts.status === status ? facts : undefined;
    },
    timeoutMs,
  );
}
