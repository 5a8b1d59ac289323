import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafka, type KafkaClient } from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/isolation.js';
import {
  privateKafkaUnavailable,
  startPrivateKafka,
  type PrivateKafka,
} from '../support/private-kafka.js';
import { eventually } from '../support/settlement-harness.js';
import { quantile, report, steadyLoad, summarize } from '../support/steady-load.js';
import { postPayment, type TestApi } from '../support/test-api.js';
import { startTestPipeline } from '../support/test-pipeline.js';
import { readTopic } from '../support/topic-reader.js';

/**
 * Kafka frozen (SIGSTOP of a broker of this file's own: sockets open, nothing answered) while
 * the relay publishes and settlement consumes: POST does not notice, and after the thaw every
 * event is delivered in order per payment and settlement resumes, with no restart.
 */
const unavailable = privateKafkaUnavailable();
/** Longer than the request timeout below, so every Kafka client sees its requests time out. */
const FREEZE_MS = Number(process.env.GRAY_KAFKA_FREEZE_MS ?? 6_000);
let broker: PrivateKafka | undefined;
let db: TestDatabase;
let pipeline: TestApi;
let kafka: KafkaClient;
let topic: string;

beforeAll(async () => {
  if (unavailable) return;
  [broker, db] = await Promise.all([startPrivateKafka(), createTestDatabase()]);
  pipeline = await startTestPipeline(db, {
    KAFKA_BROKERS: broker.brokers,
    KAFKA_REQUEST_TIMEOUT_MS: '2000',
  });
  topic = pipeline.platform.config.KAFKA_TOPIC_PAYMENTS;
  const config = testConfig({ KAFKA_BROKERS: broker.brokers });
  kafka = createKafka(config, createLogger(config));
}, 120_000);
afterAll(async () => {
  if (unavailable) return;
  broker?.thaw();
  await pipeline.close();
  await Promise.all([broker?.destroy(), db.drop()]);
});

async function statuses(): Promise<Map<string, string>> {
  const { rows } = await db.pool.query<{ id: string; status: string }>(
    'SELECT id, status FROM payments',
  );
  return new Map(rows.map((r) => [r.id, r.status]));
}

describe('kafka frozen mid-load', () => {
  it.skipIf(unavailable !== undefined)(
    `when the broker freezes under 20 new payments/s, then POST is unaffected, and after the thaw every payment is settled and its events are on the topic in order, without a restart${unavailable ? ` (skipped: ${unavailable})` : ''}`,
    async () => {
      const { apiKey } = await pipeline.merchant();
      // The whole pipeline is up: a first payment is settled.
      const first = await postPayment(pipeline, { apiKey, key: 'first' });
      await eventually(
        'the first payment settled',
        async () =>
          (await statuses()).get(String(first.json.id)) === 'settled' ? true : undefined,
        60_000,
      );

      const loading = steadyLoad(pipeline, apiKey, {
        ratePerSecond: 20,
        durationMs: FREEZE_MS + 3_000,
        keyPrefix: 'kafka-freeze',
      });
      await new Promise((r) => setTimeout(r, 1_000));
      broker?.freeze();
      await new Promise((r) => setTimeout(r, FREEZE_MS));
      broker?.thaw();
      const results = await loading;
      const baseline = results.filter((r) => r.sentAtMs < 1_000);
      report(summarize('baseline (kafka up)', baseline));
      report(summarize(`kafka frozen ${FREEZE_MS} ms`, results));

      // POST never touches Kafka: all accepted, as fast as before (plus room for the machine).
      expect(results.filter((r) => r.answer.status !== 202)).toEqual([]);
      const machine = quantile(
        baseline.map((r) => r.latencyMs),
        0.99,
      );
      expect(
        quantile(
          results.map((r) => r.latencyMs),
          0.99,
        ),
      ).toBeLessThanOrEqual(1_000 + machine);

      // Settlement resumes by itself: every payment settled (the simulator approves these).
      const ids = [String(first.json.id), ...results.map((r) => String(r.answer.json.id))];
      const settledAfterMs = performance.now();
      await eventually(
        'every payment settled after the thaw',
        async () => {
          const now = await statuses();
          return ids.every((id) => now.get(id) === 'settled') ? true : undefined;
        },
        120_000,
      );
      report(
        `settled ${ids.length} payments ${Math.round(performance.now() - settledAfterMs)} ms after the load`,
      );

      // Every event delivered, in order per payment: created before settled, on one partition.
      const admin = kafka.admin();
      await admin.connect();
      try {
        const messages = await readTopic(kafka, admin, topic, 60_000);
        const byPayment = new Map<string, { type: string; partition: number }[]>();
        for (const m of [...messages].sort(
          (a, b) => a.partition - b.partition || a.offset - b.offset,
        )) {
          const list = byPayment.get(m.key) ?? [];
          list.push({ type: m.headers.ce_type ?? '', partition: m.partition });
          byPayment.set(m.key, list);
        }
        for (const id of ids) {
          const events = byPayment.get(id) ?? [];
          const firstCopies = events.filter(
            (e, i) => events.findIndex((o) => o.type === e.type) === i,
          );
          expect(firstCopies.map((e) => e.type)).toEqual(['payment.created', 'payment.settled']);
          expect(new Set(events.map((e) => e.partition)).size).toBe(1);
        }
      } finally {
        await admin.disconnect();
      }
    },
    240_000,
  );
});
