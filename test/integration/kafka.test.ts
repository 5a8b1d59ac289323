import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createIdempotentProducer,
  createKafka,
  ensureTopics,
  type Admin,
  type KafkaClient,
} from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { testConfig, uniqueSuffix, uniqueTopic } from '../support/isolation.js';

let kafka: KafkaClient;
let admin: Admin;
const topic = uniqueTopic('roundtrip');

beforeAll(async () => {
  const config = testConfig();
  kafka = createKafka(config, createLogger(config));
  admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [topic], 3);
});
afterAll(async () => {
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await admin.disconnect();
});

describe('kafka (real broker, per-file topics)', () => {
  it('when the idempotent producer sends, then a consumer reads the same key, value and headers', async () => {
    const producer = createIdempotentProducer(kafka);
    await producer.connect();
    const sent = Array.from({ length: 5 }, (_, i) => ({
      key: `payment-${i}`,
      value: JSON.stringify({ n: i }),
      headers: { ce_id: `id-${i}`, ce_type: 'test.event' },
    }));
    await producer.send({ topic, acks: -1, messages: sent });
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: `roundtrip-${uniqueSuffix()}` });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const received: { key: string; value: string; ceId: string }[] = [];
    const done = new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: ({ message }) => {
          received.push({
            key: message.key?.toString() ?? '',
            value: message.value?.toString() ?? '',
            ceId: message.headers?.ce_id?.toString() ?? '',
          });
          if (received.length === sent.length) resolve();
          return Promise.resolve();
        },
      });
    });
    await done;
    await consumer.disconnect();

    expect(received.sort((x, y) => x.key.localeCompare(y.key))).toEqual(
      sent.map((m) => ({ key: m.key, value: m.value, ceId: m.headers.ce_id })),
    );
  });

  it('when topics already exist, then ensureTopics sends no CreateTopics for them and creates only the missing one', async () => {
    // Kafka never alters an existing topic on CreateTopics, so the partition count alone cannot
    // tell whether the existence check ran: watch the requests ensureTopics sends instead.
    const fresh = uniqueTopic('ensure');
    const createTopics = vi.spyOn(admin, 'createTopics');
    try {
      await ensureTopics(admin, [topic], 7);
      expect(createTopics).not.toHaveBeenCalled();

      await ensureTopics(admin, [topic, fresh], 2);
      expect(createTopics).toHaveBeenCalledTimes(1);
      const requested = createTopics.mock.calls[0]?.[0].topics.map((t) => t.topic);
      expect(requested).toEqual([fresh]);
    } finally {
      createTopics.mockRestore();
      await admin.deleteTopics({ topics: [fresh] }).catch(() => undefined);
    }
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(metadata.topics[0]?.partitions).toHaveLength(3);
  });
});
