// First: it replaces a kafkajs module before kafkajs loads (kafkajs-read-committed.ts).
import '../../src/platform/kafka/kafkajs-read-committed.js';
import { ConfigResourceTypes } from 'kafkajs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AcquirerTransientError,
  type Acquirer,
  type ChargeResult,
} from '../../src/acquirer/acquirer.js';
import { NO_FAULT } from '../../src/acquirer/acquirer-faults.js';
import { createHttpAcquirer } from '../../src/acquirer/http-acquirer.js';
import { toDeadLetter } from '../../src/jobs/dead-letters/dead-letter.js';
import {
  purgePublishedDeadLetters,
  storeDeadLetter,
} from '../../src/jobs/dead-letters/dead-letter-store.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { replayDeadLetters } from '../../src/jobs/dead-letters/replay-dead-letters.js';
import { ensureSettlementTopics } from '../../src/settlement/settlement-topics.js';
import { startSimulatorServer, type SimulatorServer } from '../support/simulator-server.js';
import { createTestDatabase, uniqueSuffix, type TestDatabase } from '../support/isolation.js';
import {
  createSettlementHarness,
  eventually,
  settled,
  settlementFacts,
  type SettlementHarness,
} from '../support/settlement-harness.js';

/**
 * Issue 36 item 4 (DESIGN 111): a dead letter is replayable for as long as its job is dead. Its
 * row outlives DEAD_LETTER_RETENTION_SECONDS while the job is dead, `dlq:replay` reads it from
 * Postgres when the topic no longer has it, and the revived job asks the acquirer's books by
 * idempotency key before it sends: 8 days on, one charge, whether or not the charge went through
 * before the letter.
 */

let db: TestDatabase;
let simulator: SimulatorServer;
let acquirerUrl: string;
let harness: SettlementHarness | undefined;
const silent = createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' });

beforeAll(async () => {
  db = await createTestDatabase();
  simulator = await startSimulatorServer(db);
  acquirerUrl = simulator.url;
});
afterEach(async () => {
  simulator.faults.set(NO_FAULT);
  await harness?.close();
  harness = undefined;
});
afterAll(async () => {
  await simulator.close();
  await db.drop();
});

/** The HTTP acquirer, with what settlement asked of it in order; `reject` answers a 4xx first. */
function recordingAcquirer(reject: { on: boolean }) {
  const http = createHttpAcquirer(acquirerUrl);
  const asked: string[] = [];
  const acquirer: Acquirer = {
    charge(request, signal): Promise<ChargeResult> {
      asked.push('charge');
      if (reject.on)
        return Promise.reject(
          new AcquirerTransientError('acquirer answered 400', 'acquirer_rejected', 'answered'),
        );
      return http.charge(request, signal);
    },
    inquireCharge(key, signal) {
      asked.push('inquire');
      return http.inquireCharge(key, signal);
    },
  };
  return { acquirer, asked };
}

/** Eight days pass: the letter, its job and the topic's retention (the topic is emptied). */
async function eightDaysLater(h: SettlementHarness, paymentId: string): Promise<void> {
  await db.pool.query(
    `UPDATE dead_letters
        SET created_at = now() - interval '8 days',
            published_at = coalesce(published_at, now()) - interval '8 days'
      WHERE job_id = $1`,
    [paymentId],
  );
  await db.pool.query(
    `UPDATE settlement_jobs
        SET first_failure_at = now() - interval '8 days', last_failure_at = now() - interval '8 days'
      WHERE payment_id = $1`,
    [paymentId],
  );
  const offsets = await h.platform.admin.fetchTopicOffsets(h.config.KAFKA_TOPIC_DLQ);
  await h.platform.admin.deleteTopicRecords({
    topic: h.config.KAFKA_TOPIC_DLQ,
    partitions: offsets.map(({ partition }) => ({ partition, offset: '-1' })),
  });
}

function replay(h: SettlementHarness, withDatabase: boolean) {
  return replayDeadLetters(
    h.platform.kafka,
    h.platform.admin,
    {
      dlqTopic: h.config.KAFKA_TOPIC_DLQ,
      mainTopic: h.config.KAFKA_TOPIC_PAYMENTS,
      select: { all: true },
      ...(withDatabase ? { database: db.pool } : {}),
    },
    silent,
  );
}

async function lettersOf(paymentId: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM dead_letters WHERE job_id = $1',
    [paymentId],
  );
  return rows[0]?.n ?? 0;
}

describe('a dead letter replayed days later', () => {
  it('when a charge was dead-lettered 8 days ago and the topic has dropped it, then its row is still kept, dlq:replay reads it from Postgres, and the payment settles with one inquiry and one charge', async () => {
    const reject = { on: true };
    const { acquirer, asked } = recordingAcquirer(reject);
    const h = await createSettlementHarness(
      db,
      { SETTLEMENT_MAX_ATTEMPTS: '1000', SETTLEMENT_RETRY_WINDOW_SECONDS: '1' },
      1,
    );
    harness = h;
    const first = await h.start({ acquirer });
    const id = await h.createPayment();
    await h.produce([await h.createdRecord(id)]);
    await eventually('the job dead, its letter on the topic', async () => {
      const { rows } = await db.pool.query(
        `SELECT 1 FROM settlement_jobs j JOIN dead_letters d ON d.job_id = j.payment_id
          WHERE j.payment_id = $1 AND j.state = 'dead' AND d.published_at IS NOT NULL`,
        [id],
      );
      return rows.length === 1 ? true : undefined;
    });
    await first.close();
    await eightDaysLater(h, id);

    // The retention purge keeps the letter of a dead job, however old.
    await purgePublishedDeadLetters(db.login('settlement'), 7 * 86_400);
    expect(await lettersOf(id)).toBe(1);
    // The topic no longer has it: a replay from the topic alone finds nothing.
    expect((await replay(h, false)).replayed).toEqual([]);

    reject.on = false;
    asked.length = 0;
    await h.start({ acquirer });
    const result = await replay(h, true);
    expect(result).toMatchObject({
      replayed: [paymentEventId(id, 'payment.created')],
      fromDatabase: 1,
    });
    expect(await settled(db, id)).toMatchObject({
      calls: 1,
      approved_charges: 1,
      result_events: 1,
      job_state: null,
    });
    expect(asked).toEqual(['inquire', 'charge']);

    // Its job is no longer dead: the old letter goes with the next purge, and nothing is left
    // to replay.
    await purgePublishedDeadLetters(db.login('settlement'), 7 * 86_400);
    expect(await lettersOf(id)).toBe(0);
    expect((await replay(h, true)).stored).toBe(0);
  });

  it('when the charge went through before the letter (its answer lost, dead-lettered by a release that did not ask), then the replay 8 days later finds it in the books and settles without a second charge', async () => {
    const { acquirer, asked } = recordingAcquirer({ on: false });
    const h = await createSettlementHarness(
      db,
      { SETTLEMENT_BACKOFF_BASE_MS: '10000', SETTLEMENT_BACKOFF_CAP_MS: '20000' },
      1,
    );
    harness = h;
    const first = await h.start({ acquirer });
    simulator.faults.set({ ...NO_FAULT, mode: 'drop' });
    const id = await h.createPayment();
    const record = await h.createdRecord(id);
    await h.produce([record]);
    await eventually('charged, the answer dropped', async () => {
      const { rows } = await db.pool.query(
        'SELECT 1 FROM settlement_jobs WHERE payment_id = $1 AND needs_inquiry',
        [id],
      );
      return rows.length === 1 ? true : undefined;
    });
    await first.close();
    simulator.faults.set(NO_FAULT);
    // What a release before DESIGN 106 wrote: the job dead without an inquiry, and its letter.
    const eventId = paymentEventId(id, 'payment.created');
    await db.pool.query(
      `UPDATE settlement_jobs SET state = 'dead', needs_inquiry = false, lease_owner = NULL,
              locked_until = NULL, last_error_class = 'acquirer_connection_lost'
        WHERE payment_id = $1`,
      [id],
    );
    await storeDeadLetter(db.login('settlement'), {
      dedupKey: `settlement:${id}:`,
      eventId,
      topic: h.config.KAFKA_TOPIC_DLQ,
      job: { kind: 'settlement', id },
      record: toDeadLetter(
        {
          topic: h.config.KAFKA_TOPIC_PAYMENTS,
          partition: 0,
          offset: '0',
          key: id,
          value: String(record.value),
        },
        {
          eventId,
          errorClass: 'acquirer_connection_lost',
          errorMessage: 'socket hang up',
          attempts: 5,
          firstFailureAt: new Date(),
          lastFailureAt: new Date(),
        },
      ),
    });
    await eightDaysLater(h, id);
    await purgePublishedDeadLetters(db.login('settlement'), 7 * 86_400);
    expect(await lettersOf(id)).toBe(1);

    asked.length = 0;
    await h.start({ acquirer });
    expect((await replay(h, true)).replayed).toEqual([eventId]);
    expect(await settled(db, id)).toMatchObject({
      calls: 1,
      replayed_calls: 0,
      approved_charges: 1,
      result_events: 1,
    });
    expect(asked).toEqual(['inquire']);
    expect((await settlementFacts(db, id)).charges).toBe(1);
  });

  it('when settlement creates the dead-letter topic, then the topic has the configured retention', async () => {
    const h = await createSettlementHarness(db, {}, 1);
    harness = h;
    const topic = `dlq-retention-${uniqueSuffix()}`;
    await ensureSettlementTopics(h.platform.admin, {
      ...h.config,
      KAFKA_TOPIC_DLQ: topic,
      KAFKA_TOPIC_DLQ_RETENTION_SECONDS: 45 * 86_400,
    });
    const described = await h.platform.admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }],
      includeSynonyms: false,
    });
    const entry = described.resources[0]?.configEntries.find(
      (e) => e.configName === 'retention.ms',
    );
    expect(entry?.configValue).toBe(String(45 * 86_400 * 1_000));
    await h.platform.admin.deleteTopics({ topics: [topic] });
  });
});
