import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRelayKafka } from '../../src/outbox/relay-kafka.js';
import { createRelay } from '../../src/outbox/relay.js';
import type { Config } from '../../src/platform/config/config.js';
import {
  createKafka,
  ensureTopics,
  type Admin,
  type KafkaClient,
} from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { metricValue } from '../support/metric-value.js';
import { insertOutboxEvents, type BuiltEvent } from '../support/outbox-builder.js';
import {
  createTestDatabase,
  testConfig,
  uniqueTopic,
  type TestDatabase,
} from '../support/isolation.js';
import { readTopic, type TopicMessage } from '../support/topic-reader.js';

/** Rows per claim of relay A: its first batch and the one it prefetches hold 4 payments each. */
const BATCH = 4;
/** Relay A's lease, and its margin: it may send a claim only within the first 800 ms. */
const A_LEASE_MS = 1_000;
const A_MARGIN_MS = 200;

let db: TestDatabase;
let kafka: KafkaClient;
let admin: Admin;
const topic = uniqueTopic('relay-fence');

beforeAll(async () => {
  db = await createTestDatabase();
  const config = testConfig();
  kafka = createKafka(config, createLogger(config));
  admin = kafka.admin();
  await admin.connect();
  // One partition: the topic's offsets are the order every consumer sees.
  await ensureTopics(admin, [topic], 1);
});
afterAll(async () => {
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await admin.disconnect();
  await db.drop();
});

function relayConfig(overrides: Partial<Record<keyof Config, string>> = {}): Config {
  return testConfig({
    DATABASE_URL: db.roleUrl('relay'),
    KAFKA_TOPIC_PAYMENTS: topic,
    ...overrides,
  });
}

/**
 * A relay Kafka client whose first sendBatch reaches the broker and then does not return until
 * `release()`: the relay is stuck in a slow send while the batch it prefetched waits.
 */
function pausingAfterFirstSend(config: Config): {
  kafka: KafkaClient;
  firstSent: Promise<void>;
  release: () => void;
  sends: () => number;
} {
  const client = createRelayKafka(config, createLogger(config));
  let sends = 0;
  let signalSent: () => void = () => undefined;
  const firstSent = new Promise<void>((resolve) => {
    signalSent = resolve;
  });
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const makeProducer = client.producer.bind(client);
  client.producer = (options) => {
    const producer = makeProducer(options);
    const sendBatch = producer.sendBatch.bind(producer);
    producer.sendBatch = async (batch) => {
      const acks = await sendBatch(batch);
      sends++;
      if (sends === 1) {
        signalSent();
        await gate;
      }
      return acks;
    };
    return producer;
  };
  return {
    kafka: client,
    firstSent,
    release: () => {
      release();
    },
    sends: () => sends,
  };
}

/** How many of `ids` are leased (owner set) with a lease that has ended by Postgres's clock. */
async function expiredLeases(ids: readonly string[]): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM outbox
      WHERE id = ANY($1::bigint[]) AND lease_owner IS NOT NULL AND locked_until <= now()`,
    [ids],
  );
  return rows[0]?.n ?? 0;
}

async function publishedCount(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM outbox WHERE published_at IS NOT NULL',
  );
  return rows[0]?.n ?? 0;
}

/**
 * Per payment, the position (seq) of each copy on the topic in offset order, and the copies
 * that came after a newer event of their payment (a consumer relying on order sees those late).
 */
function orderPerPayment(
  messages: readonly TopicMessage[],
  events: readonly BuiltEvent[],
): { seqs: Map<string, number[]>; late: string[] } {
  const byEventId = new Map(events.map((event) => [event.eventId, event]));
  const seqs = new Map<string, number[]>();
  const late: string[] = [];
  for (const message of messages) {
    const event = byEventId.get(message.headers.ce_id ?? '');
    if (!event) throw new Error(`unknown event on the topic: ${message.headers.ce_id}`);
    const seen = seqs.get(event.aggregateId) ?? [];
    if (seen.some((seq) => seq > event.seq)) {
      late.push(`${event.eventType} of ${event.aggregateId} at offset ${message.offset}`);
    }
    seen.push(event.seq);
    seqs.set(event.aggregateId, seen);
  }
  return { seqs, late };
}

/** The fence's counter; absent before the fence existed (then 0, and the order check fails). */
function leaseEndingUnsent(): Promise<number> {
  return metricValue('outbox_lease_ending_unsent_total').catch(() => 0);
}

describe('lease fence on the send', () => {
  it("when relay A is stuck in a send past its lease and relay B publishes its payments' events, then A does not send its prefetched batch: per payment, no copy after a newer event", async () => {
    // 2 x BATCH payments, each with its first event and then a second one (ids in that order).
    const events = await insertOutboxEvents(db.pool, 4 * BATCH, { topic, payments: 2 * BATCH });
    const firsts = events.filter((event) => event.seq === 0);
    expect(firsts).toHaveLength(2 * BATCH);

    const configA = relayConfig({
      RELAY_BATCH_SIZE: String(BATCH),
      RELAY_LEASE_MS: String(A_LEASE_MS),
    });
    const paused = pausingAfterFirstSend(configA);
    const relayA = createRelay({
      db: db.login('relay'),
      kafka: paused.kafka,
      logger: createLogger(configA),
      config: configA,
      leaseMarginMs: A_MARGIN_MS,
    });
    const running = relayA.run();
    let unsentBefore = 0;
    try {
      // A sent its first batch and hangs in the send; it had claimed the next one meanwhile.
      await paused.firstSent;
      // Both of A's claims (all the first events) are leased by A and the leases have ended.
      await vi.waitFor(
        async () => {
          const expired = await expiredLeases(firsts.map((event) => event.id));
          if (expired < firsts.length) throw new Error(`${expired} leases ended`);
        },
        { timeout: 15_000, interval: 50 },
      );

      // Relay B takes over: publishes every first event, then every second one.
      const configB = relayConfig();
      const relayB = createRelay({
        db: db.login('relay'),
        kafka: createRelayKafka(configB, createLogger(configB)),
        logger: createLogger(configB),
        config: configB,
      });
      try {
        await vi.waitFor(
          async () => {
            await relayB.runOnce();
            if ((await publishedCount()) < events.length) throw new Error('not all published');
          },
          { timeout: 20_000, interval: 50 },
        );
      } finally {
        await relayB.stop();
      }
      unsentBefore = await leaseEndingUnsent();
    } finally {
      // A wakes up: marks its first batch (0 rows, B holds nothing now) and turns to the
      // batch it prefetched, whose lease ended long ago.
      paused.release();
      await relayA.stop();
      await running;
    }

    const { seqs, late } = orderPerPayment(await readTopic(kafka, admin, topic), events);
    expect(late).toEqual([]);
    for (const event of events) expect(seqs.get(event.aggregateId)).toContain(event.seq);
    // A sent only its first batch; the prefetched one was counted, not sent.
    expect(paused.sends()).toBe(1);
    expect((await leaseEndingUnsent()) - unsentBefore).toBe(BATCH);
    const { rows } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL OR lease_owner IS NOT NULL',
    );
    expect(rows[0]?.n).toBe(0);
  });
});
