import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createKafka,
  ensureTopics,
  type Admin,
  type KafkaClient,
  type Producer,
} from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { testConfig, uniqueSuffix, uniqueTopic } from '../support/isolation.js';
import { readTopic } from '../support/topic-reader.js';

/**
 * Records of aborted transactions are never read (DESIGN 134). kafkajs 2.2.4 alone passes one
 * on when two producers' aborted transactions interleave: CI's HA chaos run counted a dead
 * letter twice, the aborted copy of a send that failed and the one sent again.
 */
const config = testConfig();
const logger = createLogger(config);
let kafka: KafkaClient;
let admin: Admin;
const producers: Producer[] = [];

function transactional(name: string): Producer {
  const producer = kafka.producer({
    transactionalId: `read-committed-${name}-${uniqueSuffix()}`,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  producers.push(producer);
  return producer;
}

beforeAll(async () => {
  kafka = createKafka(config, logger);
  admin = kafka.admin();
  await admin.connect();
}, 60_000);
afterAll(async () => {
  await Promise.all(producers.map((producer) => producer.disconnect()));
  await admin.disconnect();
});

describe('a read-committed read of a topic', () => {
  it('when two aborted transactions interleave (A begins, B begins, B aborts, A aborts), then it gives the committed records only', async () => {
    const topic = uniqueTopic('read-committed');
    await ensureTopics(admin, [topic], 1);
    const [a, b, c] = ['a', 'b', 'c'].map(transactional) as [Producer, Producer, Producer];
    await Promise.all([a.connect(), b.connect(), c.connect()]);
    const send = (value: string) => ({ topic, messages: [{ key: 'k', value }] });

    const first = await a.transaction();
    await first.send(send('a-1 aborted'));
    const second = await b.transaction();
    await second.send(send('b-1 aborted'));
    await first.send(send('a-2 aborted'));
    await second.abort();
    await first.abort();
    const committed = await c.transaction();
    await committed.send(send('c-1 committed'));
    await committed.commit();
    // A producer whose earlier transaction aborted commits its next one: that one is read.
    const again = await a.transaction();
    await again.send(send('a-3 committed'));
    await again.commit();

    const values = (await readTopic(kafka, admin, topic)).map((message) => message.value);
    expect(values).toEqual(['c-1 committed', 'a-3 committed']);
  }, 60_000);
});
