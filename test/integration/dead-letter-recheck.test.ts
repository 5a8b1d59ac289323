import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelayKafka } from '../../src/outbox/relay-kafka.js';
import {
  createIdempotentProducer,
  ensureTopics,
  publish,
  type Admin,
  type KafkaClient,
  type Producer,
} from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import {
  claimUnpublished,
  markInDoubt,
  markPublished,
  markUnsent,
  storeDeadLetter,
} from '../../src/jobs/dead-letters/dead-letter-store.js';
import {
  createDeadLetterProducer,
  transactionOverWithinMs,
  type DeadLetterProducer,
} from '../../src/jobs/dead-letters/dead-letter-producer.js';
import { createDeadLetterPublisher } from '../../src/jobs/dead-letters/dead-letter-publisher.js';
import {
  createTestDatabase,
  testConfig,
  uniqueSuffix,
  uniqueTopic,
  type TestDatabase,
} from '../support/isolation.js';
import { readTopic } from '../support/topic-reader.js';

/**
 * A dead letter whose row was claimed before (CI's HA chaos run: two letters of one job after a
 * Kafka controller kill): the earlier claim's send may have reached the topic without the row
 * being marked (a crash, a lost database answer, a send outlasting the lease). The next claim
 * reads the topic first and sends only what is missing; and no send begins a transaction it
 * could not finish within its claim's lease.
 */
const config = testConfig();
const logger = createLogger(config);
let db: TestDatabase;
let kafka: KafkaClient;
let admin: Admin;
let plain: Producer;
let producer: DeadLetterProducer;
/** Short, so a letter not found is looked for again within the test (after 23 s, not 50 s). */
const TRANSACTION_TIMEOUT_MS = 3_000;

beforeAll(async () => {
  db = await createTestDatabase();
  kafka = createRelayKafka(config, logger);
  admin = kafka.admin();
  await admin.connect();
  plain = createIdempotentProducer(kafka);
  await plain.connect();
  producer = createDeadLetterProducer(kafka, `recheck-${uniqueSuffix()}`, TRANSACTION_TIMEOUT_MS);
}, 60_000);
afterAll(async () => {
  await producer.close();
  await plain.disconnect();
  await admin.disconnect();
  await db.drop();
});

/** Stores one letter for `topic` and returns its record. */
async function storeLetter(topic: string, name: string) {
  const record = { key: name, value: JSON.stringify({ name }), headers: { event_id: name } };
  await storeDeadLetter(db.pool, { dedupKey: name, eventId: null, topic, record });
  return record;
}

function publisher(leaseMs = 120_000) {
  return createDeadLetterPublisher({
    pool: db.pool,
    send: producer.send,
    logger,
    retryDelayMs: () => 60_000,
    pollMs: 1_000,
    leaseMs,
  });
}

async function rowOf(name: string) {
  const { rows } = await db.pool.query<{
    published: boolean;
    attempts: number;
    leased: boolean;
  }>(
    `SELECT published_at IS NOT NULL AS published, attempts,
            locked_until IS NOT NULL AS leased
       FROM dead_letters WHERE dedup_key = $1`,
    [name],
  );
  return rows[0];
}

/** A claim that ended without its mark or a release: its lease ran out. */
async function abandonClaim(): Promise<void> {
  expect((await claimUnpublished(db.pool, 100, 60_000)).length).toBeGreaterThan(0);
  await db.pool.query(`UPDATE dead_letters SET locked_until = now() WHERE published_at IS NULL`);
}

describe('dead letters claimed again', () => {
  it('when an earlier claim sent a letter and was never marked, then the next claim finds it on the topic and sends nothing twice', async () => {
    const topic = uniqueTopic('dlq-recheck');
    await ensureTopics(admin, [topic], 1);
    const sent = await storeLetter(topic, `sent-${uniqueSuffix()}`);
    const unsent = await storeLetter(topic, `unsent-${uniqueSuffix()}`);
    await abandonClaim();
    // The earlier claim got as far as the topic for one of the two.
    await publish(plain, [{ topic, records: [sent] }]);

    expect(await publisher().publishDue()).toBe(2);

    const onTopic = (await readTopic(kafka, admin, topic)).map((m) => m.key).sort();
    expect(onTopic).toEqual([sent.key, unsent.key].sort());
    expect(await rowOf(sent.key)).toMatchObject({ published: true, attempts: 2 });
    expect(await rowOf(unsent.key)).toMatchObject({ published: true, attempts: 2 });
  }, 90_000);

  it('when a claim has less lease left than a transaction may take, then it sends nothing and releases the rows', async () => {
    const topic = uniqueTopic('dlq-recheck');
    await ensureTopics(admin, [topic], 1);
    const letter = await storeLetter(topic, `short-${uniqueSuffix()}`);

    await expect(
      publisher(transactionOverWithinMs(TRANSACTION_TIMEOUT_MS) - 5_000).publishDue(),
    ).rejects.toThrow(/lease end/);

    expect(await readTopic(kafka, admin, topic)).toEqual([]);
    expect(await rowOf(letter.key)).toMatchObject({ published: false, leased: false });
    await db.pool.query(`UPDATE dead_letters SET next_attempt_at = now() WHERE dedup_key = $1`, [
      letter.key,
    ]);
    expect(await publisher().publishDue()).toBe(1);
    expect((await readTopic(kafka, admin, topic)).map((m) => m.key)).toEqual([letter.key]);
  }, 60_000);

  it('when a claim outlived its lease and another process claimed the rows, then the first claim’s marks change nothing', async () => {
    const topic = uniqueTopic('dlq-recheck');
    const letter = await storeLetter(topic, `outlived-${uniqueSuffix()}`);
    const mine = (claims: Awaited<ReturnType<typeof claimUnpublished>>) =>
      claims.filter((claim) => claim.record.key === letter.key);
    const first = mine(await claimUnpublished(db.pool, 100, 1));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const second = mine(await claimUnpublished(db.pool, 100, 60_000));
    expect(second).toMatchObject([{ unreleased: true }]);

    // The first claim's send failed, or was in doubt, or went through: it learns it too late.
    await markUnsent(db.pool, first, new Error('late'), 0);
    await markInDoubt(db.pool, first, new Error('late'));
    await markPublished(db.pool, first);
    expect(await rowOf(letter.key)).toMatchObject({ published: false, leased: true });
    const { rows } = await db.pool.query<{ last_error: string | null; due: boolean }>(
      `SELECT last_error, next_attempt_at <= now() AS due FROM dead_letters WHERE dedup_key = $1`,
      [letter.key],
    );
    expect(rows[0]).toEqual({ last_error: null, due: true });

    await markPublished(db.pool, second);
    expect(await rowOf(letter.key)).toMatchObject({ published: true, leased: false });
  });
});
