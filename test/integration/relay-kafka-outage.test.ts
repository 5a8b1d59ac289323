import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRelayKafka } from '../../src/outbox/relay-kafka.js';
import { createRelay } from '../../src/outbox/relay.js';
import { listenForOutbox } from '../../src/outbox/outbox-listener.js';
import { createKafka, ensureTopics, type KafkaClient } from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { metricValue } from '../support/metric-value.js';
import {
  countPending,
  expectedRecords,
  insertPlannedEvents,
  planOutboxEvents,
  readOutboxState,
} from '../support/outbox-builder.js';
import {
  createTestDatabase,
  testConfig,
  uniqueTopic,
  type TestDatabase,
} from '../support/isolation.js';
import {
  privateKafkaUnavailable,
  startPrivateKafka,
  type PrivateKafka,
} from '../support/private-kafka.js';
import { expectDeliveredInOrder } from '../support/relay-assertions.js';
import { readTopic } from '../support/topic-reader.js';

// Stopping the shared broker would break every other test file running in parallel: this file
// stops and restarts a broker of its own.
const unavailable = privateKafkaUnavailable();
const topic = uniqueTopic('relay-outage');
let broker: PrivateKafka | undefined;
let kafka: KafkaClient;
let db: TestDatabase;

beforeAll(async () => {
  if (unavailable) return;
  [broker, db] = await Promise.all([startPrivateKafka(), createTestDatabase()]);
  const config = testConfig({ KAFKA_BROKERS: broker.brokers });
  kafka = createKafka(config, createLogger(config));
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [topic], 3);
  await admin.disconnect();
});
afterAll(async () => {
  if (unavailable) return;
  await Promise.all([broker?.destroy(), db.drop()]);
});

describe('kafka outage', () => {
  it.skipIf(unavailable !== undefined)(
    `when Kafka stops while the relay publishes and comes back, then every event reaches the topic in order per payment, and no row counted an attempt${unavailable ? ` (skipped: ${unavailable})` : ''}`,
    async () => {
      const privateBroker = broker;
      if (!privateBroker) throw new Error('no private broker');
      const config = testConfig({
        DATABASE_URL: db.roleUrl('relay'),
        KAFKA_BROKERS: privateBroker.brokers,
        RELAY_BATCH_SIZE: '20',
        RELAY_POLL_INTERVAL_MS: '200',
      });
      const relay = createRelay({
        db: db.login('relay'),
        kafka: createRelayKafka(config, createLogger(config)),
        logger: createLogger(config),
        config,
      });
      const listener = listenForOutbox({
        connectionString: db.roleUrl('relay'),
        logger: createLogger(config),
        onNotify: relay.wake,
      });
      const planned = planOutboxEvents(1_500, { payments: 300 });
      try {
        const events = await insertPlannedEvents(db.pool, planned.slice(0, 1_000), topic);
        void relay.run();
        await vi.waitFor(
          async () => {
            expect(await countPending(db.pool)).toBeLessThan(900);
          },
          {
            timeout: 20_000,
            interval: 20,
          },
        );
        const unavailableBefore = await metricValue('outbox_relay_kafka_unavailable_total');

        await privateBroker.stop();
        // Written during the outage: these cannot have been published before the restart.
        events.push(...(await insertPlannedEvents(db.pool, planned.slice(1_000), topic)));
        await vi.waitFor(
          async () => {
            expect(await metricValue('outbox_relay_kafka_unavailable_total')).toBeGreaterThan(
              unavailableBefore,
            );
          },
          { timeout: 30_000, interval: 100 },
        );
        const during = await readOutboxState(db.pool);
        const waiting = [...during.values()].filter((row) => row.publishedAt === null);
        expect(waiting.length).toBeGreaterThanOrEqual(500);
        // Kafka being away is not the rows' fault: no attempt counted, nothing parked.
        for (const row of during.values())
          expect(row).toMatchObject({ attempts: 0, parkedAt: null });

        await privateBroker.start();
        await vi.waitFor(
          async () => {
            expect(await countPending(db.pool)).toBe(0);
          },
          {
            timeout: 60_000,
            interval: 200,
          },
        );

        const admin = kafka.admin();
        await admin.connect();
        try {
          const messages = await readTopic(kafka, admin, topic);
          expectDeliveredInOrder(events, messages, await expectedRecords(db.pool));
        } finally {
          await admin.disconnect();
        }
      } finally {
        await Promise.all([relay.stop(), listener.close()]);
      }
    },
    120_000,
  );
});
