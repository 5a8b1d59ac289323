import { randomUUID } from 'node:crypto';
import { createRelayKafka } from '../../src/outbox/relay-kafka.js';
import { createRelayWorkers } from '../../src/outbox/relay.js';
import { toKafkaRecord, type KafkaRecord } from '../../src/outbox/cloud-event.js';
import { listenForOutbox } from '../../src/outbox/outbox-listener.js';
import { loadConfig, type Config } from '../../src/platform/config/config.js';
import { createPool, type Pool } from '../../src/platform/database/db.js';
import {
  createIdempotentProducer,
  createKafka,
  ensureTopics,
  publish,
  type Admin,
  type KafkaClient,
} from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { migrateUp } from '../../src/platform/database/migration-runner.js';
import {
  insertOutboxBacklog,
  insertOutboxRow,
  pendingOutboxRows,
  warmUpEvent,
} from '../bench/outbox-rows.js';
import { percentile } from '../support/percentile.js';
import { readAllEvents } from '../support/read-all-events.js';
import { createScratchDatabase, dropScratchDatabaseOrReport } from '../support/scratch-database.js';
import { exitOnHelp } from '../support/exit-on-help.js';
import { waitUntil } from '../support/wait-until.js';

/**
 * `npm run bench:relay`: the outbox relay against the local stack, next to a reference measured
 * in the same run. Not a test: it prints its numbers and exits.
 *
 * (a) lag: payments committed one per transaction at a fixed rate while the relay runs
 *     (LISTEN/NOTIFY + poll, as in production); commit-to-ack p50/p95/p99;
 * (b) drain: a backlog inserted while no relay runs, then drained by one relay; rows/s;
 * (c) raw: the same records sent with kafkajs sendBatch by the same kind of producer (idempotent,
 *     acks -1, one request in flight), in batches of the same size.
 *
 * It creates its own database (migrated, dropped at the end) and its own topics (deleted).
 * Drain and raw are measured in alternation, BENCH_ROUNDS times, and their medians compared: on
 * a shared 2-core machine one measurement alone can be off by a third.
 *
 * Settings (environment): BENCH_RATE (500/s), BENCH_SECONDS (20), BENCH_BACKLOG (20000),
 * BENCH_ROUNDS (3), RELAY_BATCH_SIZE and the rest of the service configuration.
 */

exitOnHelp(`usage: npm run bench:relay
The outbox relay: commit-to-ack lag at a fixed rate, backlog drain next to raw kafkajs sendBatch.
No arguments. Environment: BENCH_RATE (500), BENCH_SECONDS (20), BENCH_BACKLOG (20000),
BENCH_ROUNDS (3), RELAY_BATCH_SIZE and the rest of the service configuration.`);

const RATE = Number(process.env.BENCH_RATE ?? 500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const say = (line: string) => process.stderr.write(`[bench] ${line}\n`);
/** Errors only: the bench's own teardown (dropping its database) would otherwise warn. */
const logger = createLogger({ LOG_LEVEL: 'error', LOG_FORMAT: 'json' });

function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

/** (a) Commit-to-ack lag at a fixed insert rate, with the relay loop running. */
async function measureLag(pool: Pool, kafka: KafkaClient, config: Config, databaseUrl: string) {
  const committedAt = new Map<string, number>();
  const ackedAt = new Map<string, number>();
  const relay = createRelayWorkers(
    {
      db: pool,
      kafka,
      logger,
      config,
      afterPublish: (events) => {
        const now = performance.now();
        // The first ack counts; a republished copy would be later.
        for (const event of events)
          if (!ackedAt.has(event.eventId)) ackedAt.set(event.eventId, now);
      },
    },
    config.RELAY_WORKERS,
  );
  const listener = listenForOutbox({ connectionString: databaseUrl, logger, onNotify: relay.wake });
  await relay.connect();
  void relay.run();

  const total = RATE * SECONDS;
  const interval = 1_000 / RATE;
  const inserts: Promise<void>[] = [];
  const started = performance.now();
  let issued = 0;
  // Open loop: each insert starts at its scheduled time whether or not earlier ones finished.
  while (issued < total) {
    const due = Math.min(total, Math.floor((performance.now() - started) / interval) + 1);
    for (; issued < due; issued++) {
      inserts.push(
        insertOutboxRow(pool, config.KAFKA_TOPIC_PAYMENTS).then((eventId) => {
          committedAt.set(eventId, performance.now());
        }),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(inserts);
  const insertSeconds = (performance.now() - started) / 1_000;
  await waitUntil(async () => (await pendingOutboxRows(pool)) === 0, 60_000);
  await Promise.all([relay.stop(), listener.close()]);
  // The ack can be handled before the commit's reply is: that lag counts as 0.
  const sorted = [...committedAt].map(([eventId, committed]) =>
    Math.max(0, (ackedAt.get(eventId) ?? Number.POSITIVE_INFINITY) - committed),
  );
  sorted.sort((a, b) => a - b);
  return {
    events: total,
    achievedRate: total / insertSeconds,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: percentile(sorted, 100),
  };
}

/**
 * (b) One relay process's loops (RELAY_WORKERS of them) draining the backlog, as in production.
 * Timed until every row is marked published.
 */
async function measureDrain(pool: Pool, kafka: KafkaClient, config: Config): Promise<number> {
  const relay = createRelayWorkers({ db: pool, kafka, logger, config }, config.RELAY_WORKERS);
  await relay.connect();
  const started = performance.now();
  void relay.run();
  await waitUntil(async () => (await pendingOutboxRows(pool)) === 0, 120_000, 5);
  const seconds = (performance.now() - started) / 1_000;
  await relay.stop();
  return BACKLOG / seconds;
}

/** (c) The same records through a bare idempotent producer's sendBatch, same batch size. */
async function measureRaw(
  kafka: KafkaClient,
  topic: string,
  records: readonly KafkaRecord[],
  batchSize: number,
): Promise<number> {
  const producer = createIdempotentProducer(kafka);
  await producer.connect();
  const started = performance.now();
  for (let start = 0; start < records.length; start += batchSize) {
    await publish(producer, [{ topic, records: records.slice(start, start + batchSize) }]);
  }
  const seconds = (performance.now() - started) / 1_000;
  await producer.disconnect();
  return records.length / seconds;
}

async function main(): Promise<void> {
  const base = loadConfig();
  const suffix = randomUUID().slice(0, 8);
  const database = `bench_relay_${suffix}`;
  const scratch = await createScratchDatabase(base.DATABASE_URL, database);
  const config: Config = {
    ...base,
    DATABASE_URL: scratch.url,
    KAFKA_TOPIC_PAYMENTS: `bench.relay.${suffix}`,
  };
  const rawTopic = `bench.raw.${suffix}`;

  const pool = createPool(config, logger, 'bench-relay');
  const kafka = createKafka(config, logger);
  const kafkaAdmin: Admin = kafka.admin();
  try {
    await migrateUp(config.DATABASE_URL, logger);
    await kafkaAdmin.connect();
    await ensureTopics(kafkaAdmin, [config.KAFKA_TOPIC_PAYMENTS, rawTopic], 3);
    const relayKafka = createRelayKafka(config, logger);

    say(`(a) lag: ${RATE} payments/s for ${SECONDS} s, relay batch ${config.RELAY_BATCH_SIZE}`);
    const lag = await measureLag(pool, relayKafka, config, config.DATABASE_URL);

    say(`(b, c) ${ROUNDS} rounds: drain ${BACKLOG} rows, raw sendBatch of the same records`);
    // The first produce requests to a new topic pay for its first segment: not measured.
    await measureRaw(kafka, rawTopic, [toKafkaRecord(warmUpEvent())], 1);
    const drains: number[] = [];
    const raws: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // The previous round's rows go, and their dead versions with them, as autovacuum would
      // have done by then in production (it vacuums the outbox after 2% churn); statistics too:
      // a bulk-loaded table has none until autovacuum's next round.
      await pool.query('DELETE FROM outbox');
      await pool.query('VACUUM outbox');
      await insertOutboxBacklog(pool, config.KAFKA_TOPIC_PAYMENTS, BACKLOG);
      await pool.query('ANALYZE outbox');
      const records = (await readAllEvents(pool)).map(toKafkaRecord);
      raws.push(await measureRaw(kafka, rawTopic, records, config.RELAY_BATCH_SIZE));
      drains.push(await measureDrain(pool, relayKafka, config));
    }
    const drain = median(drains);
    const raw = median(raws);

    const ms = (value: number) => `${value.toFixed(1)} ms`;
    const perSecond = (value: number) => `${Math.round(value).toLocaleString('en')} rows/s`;
    const lines = [
      `outbox relay benchmark (${new Date().toISOString()})`,
      `(a) commit-to-ack lag at ${Math.round(lag.achievedRate)} payments/s, ${lag.events} events:`,
      `    p50 ${ms(lag.p50)}  p95 ${ms(lag.p95)}  p99 ${ms(lag.p99)}  max ${ms(lag.max)}` +
        `  (target p99 <= 50 ms at 500/s)`,
      `(b) backlog drain, ${BACKLOG} rows, batch ${config.RELAY_BATCH_SIZE}, ` +
        `${config.RELAY_WORKERS} workers, median of ${ROUNDS}:` +
        ` ${perSecond(drain)} (${drains.map(perSecond).join(', ')})`,
      `(c) raw kafkajs sendBatch, same records and batch size, median of ${ROUNDS}:` +
        ` ${perSecond(raw)} (${raws.map(perSecond).join(', ')})`,
      `    drain / raw = ${((drain / raw) * 100).toFixed(0)}% (target >= 50%)`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    process.stdout.write(
      `${JSON.stringify({ lag, drain: { rows: BACKLOG, perSecond: drain, rounds: drains }, raw: { perSecond: raw, rounds: raws }, ratio: drain / raw })}\n`,
    );
  } finally {
    await kafkaAdmin
      .deleteTopics({ topics: [config.KAFKA_TOPIC_PAYMENTS, rawTopic] })
      .catch(() => undefined);
    await kafkaAdmin.disconnect();
    await pool.end();
    await dropScratchDatabaseOrReport(scratch, say);
  }
}

try {
  await main();
} catch (error) {
  say(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
}
