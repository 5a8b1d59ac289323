/* eslint-disable no-console -- an example program reports to its terminal */
// An example downstream consumer of payments.events: the settled amount per currency, counted
// exactly once in effect with the consumer kit (README.md beside this file).
import { Kafka } from 'kafkajs';
import pg from 'pg';
import {
  createInboxConsumer,
  ensureInboxSchema,
  type EventHandler,
} from '../../src/consumer-kit/consumer-kit.js';

const INBOX_PREFIX = 'settled_totals_inbox';

const pool = new pg.Pool({
  connectionString:
    process.env.DATABASE_URL ?? 'postgres://payments:payments@127.0.0.1:5432/settled_totals',
  max: 4,
  connectionTimeoutMillis: 5_000,
});
const kafka = new Kafka({
  clientId: 'settled-totals',
  brokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','),
  connectionTimeout: 3_000,
  requestTimeout: 10_000,
});

/** The consumer's own write, on the kit's transaction: applied once per event or not at all. */
const countSettled: EventHandler = async (event, { client }) => {
  if (event.type !== 'payment.settled') return;
  const { amount, currency } = event.data as { amount?: unknown; currency?: unknown };
  if (!Number.isSafeInteger(amount) || typeof currency !== 'string') {
    console.warn(`skipping ${event.id}: no integer amount and currency in data`);
    return;
  }
  await client.query(
    `INSERT INTO settled_totals (currency, amount, payments) VALUES ($1, $2, 1)
     ON CONFLICT (currency) DO UPDATE SET amount = settled_totals.amount + EXCLUDED.amount,
                                          payments = settled_totals.payments + 1`,
    [currency, amount],
  );
};

await ensureInboxSchema(pool, INBOX_PREFIX);
await pool.query(`CREATE TABLE IF NOT EXISTS settled_totals (
  currency text PRIMARY KEY, amount bigint NOT NULL, payments integer NOT NULL)`);

const consumer = createInboxConsumer({
  kafka,
  groupId: process.env.GROUP_ID ?? 'settled-totals',
  topic: process.env.KAFKA_TOPIC ?? 'payments.events',
  pool,
  handler: countSettled,
  tablePrefix: INBOX_PREFIX,
  onOutOfOrder: ({ event, problem }) => {
    console.warn(`out of order, parked: ${event.subject} ${event.type}: ${problem}`);
  },
});
await consumer.start();
console.log('counting settled amounts per currency into settled_totals; Ctrl-C stops');

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void consumer
      .stop()
      .then(() => pool.end())
      .then(() => {
        console.log(JSON.stringify(consumer.counters()));
      });
  });
}
