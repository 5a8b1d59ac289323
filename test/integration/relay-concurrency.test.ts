import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRelayKafka } from '../../src/outbox/relay-kafka.js';
import { createRelay } from '../../src/outbox/relay.js';
import { listenForOutbox } from '../../src/outbox/outbox-listener.js';
import {
  createKafka,
  ensureTopics,
  type Admin,
  type KafkaClient,
} from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import {
  countPending,
  expectedRecords,
  insertPlannedEvents,
  planOutboxEvents,
} from '../support/outbox-builder.js';
import {
  createTestDatabase,
  testConfig,
  uniqueTopic,
  type TestDatabase,
} from '../support/isolation.js';
import { expectDeliveredInOrder } from '../support/relay-assertions.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { readTopic } from '../support/topic-reader.js';

const EVENTS = 5_000;
/**
 * 25 events per payment, round-robin: a payment's consecutive events are 200 rows apart, less
 * than the 3 batches the relays claim at once, so a claim that ignored per-payment order would
 * publish some payment's events out of order.
 */
const PAYMENTS = 200;
const BATCH = '100';
/** Half the events wait before the relays start; the rest are inserted while they run. */
const BACKLOG = 2_500;

let db: TestDatabase;
let kafka: KafkaClient;
let admin: Admin;
const topic = uniqueTopic('relay-concurrent');

beforeAll(async () => {
  db = await createTestDatabase();
  const config = testConfig();
  kafka = createKafka(config, createLogger(config));
  admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [topic], 3);
});
afterAll(async () => {
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await admin.disconnect();
  await db.drop();
});

/** `outbox_published_total` as a relay process reports it on its metrics port. */
async function publishedBy(port: unknown): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${String(port)}/metrics`)).text();
  return Number(/^outbox_published_total (\S+)$/m.exec(text)?.[1] ?? NaN);
}

describe('several relays at once', () => {
  it(`when two relay processes and one in-process relay publish ${EVENTS} events of ${PAYMENTS} payments, then every event is on the topic, each payment's in creation order, and duplicates carry their original's event id`, async () => {
    const config = testConfig({
      DATABASE_URL: db.roleUrl('relay'),
      KAFKA_TOPIC_PAYMENTS: topic,
      RELAY_BATCH_SIZE: BATCH,
    });
    const processes: RoleProcess[] = [1, 2].map(() =>
      startRoleProcess('apps/relay/main.js', {
        DATABASE_URL: db.roleUrl('relay'),
        REDIS_URL: config.REDIS_URL,
        KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
        KAFKA_TOPIC_PAYMENTS: topic,
        RELAY_BATCH_SIZE: BATCH,
        METRICS_PORT: '0',
        LOG_LEVEL: 'info',
      }),
    );
    let inProcessPublished = 0;
    const relay = createRelay({
      db: db.login('relay'),
      kafka: createRelayKafka(config, createLogger(config)),
      logger: createLogger(config),
      config,
      afterPublish: (events) => {
        inProcessPublished += events.length;
      },
    });
    const listener = listenForOutbox({
      connectionString: db.roleUrl('relay'),
      logger: createLogger(config),
      onNotify: relay.wake,
    });
    try {
      const metricsPorts = await Promise.all(
        processes.map(async (p) => {
          await p.logLine('relay ready');
          return (await p.logLine('internal listener ready')).port;
        }),
      );
      const planned = planOutboxEvents(EVENTS, { payments: PAYMENTS });
      const events = await insertPlannedEvents(db.pool, planned.slice(0, BACKLOG), topic);
      void relay.run();
      // The rest in transactions of 250 rows while the relays run.
      for (let start = BACKLOG; start < EVENTS; start += 250) {
        events.push(
          ...(await insertPlannedEvents(db.pool, planned.slice(start, start + 250), topic)),
        );
      }
      await vi.waitFor(
        async () => {
          expect(await countPending(db.pool)).toBe(0);
        },
        {
          timeout: 45_000,
          interval: 200,
        },
      );

      const messages = await readTopic(kafka, admin, topic);
      expectDeliveredInOrder(events, messages, await expectedRecords(db.pool));
      const shares = [inProcessPublished, ...(await Promise.all(metricsPorts.map(publishedBy)))];
      // The premise of the test: the relays really shared the work.
      expect(
        shares.filter((share) => share > 0).length,
        `shares ${shares.join(',')}`,
      ).toBeGreaterThanOrEqual(2);
      expect(shares.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(EVENTS);
    } finally {
      await Promise.all([relay.stop(), listener.close()]);
      const codes = await Promise.all(processes.map((p) => p.stop('SIGTERM')));
      expect(codes).toEqual([0, 0]);
    }
  });
});
