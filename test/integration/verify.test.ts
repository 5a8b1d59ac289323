import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DLQ_HEADERS } from '../../src/jobs/dead-letters/dead-letter.js';
import { toKafkaRecord } from '../../src/outbox/cloud-event.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { createIdempotentProducer, publish } from '../../src/platform/kafka/kafka.js';
import type { VerifyReport } from '../../tools/verify/verify-payments.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postPayment, type TestApi } from '../support/test-api.js';
import { startTestPipeline } from '../support/test-pipeline.js';
import { runVerifyCli } from '../support/verify-cli.js';

/**
 * The real `npm run verify` CLI (dist-tools/tools/cli/verify.js) against a small world made by the real
 * pipeline (API -> relay -> Kafka -> settlement), first consistent, then with one violation
 * injected at a time.
 */

let db: TestDatabase;
let api: TestApi;
const ids: Record<string, string> = {};

function verifyCli(...args: string[]) {
  return runVerifyCli(db, api.platform.config, args);
}

/** Appends records to a topic as a misbehaving producer would (a copy, a stale or forged one). */
async function publishRaw(
  topic: string,
  records: Parameters<typeof publish>[1][number]['records'],
) {
  const producer = createIdempotentProducer(api.platform.kafka);
  await producer.connect();
  try {
    await publish(producer, [{ topic, records }]);
  } finally {
    await producer.disconnect();
  }
}

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestPipeline(db);
  const { apiKey } = await api.merchant();
  const sources = {
    visa: 'tok_visa',
    visa2: 'tok_visa',
    declined: 'tok_decline',
    transient: 'tok_transient_2',
    unavailable: 'tok_unavailable',
  };
  for (const [name, source] of Object.entries(sources)) {
    const answer = await postPayment(api, {
      apiKey,
      key: `${name === 'visa2' ? 'other' : 'world'}-${name}`,
      body: { amount: 1000, currency: 'EUR', source },
    });
    expect(answer.status).toBe(202);
    ids[name] = answer.json.id as string;
  }
});
afterAll(async () => {
  await api.close();
  await db.drop();
});

describe('npm run verify', () => {
  it('when the pipeline kept every invariant, then it waits for the drain and exits 0 with the counts', async () => {
    const result = await verifyCli('--wait', '30', '--grace', '0', '--json');
    expect(result.stderr).toContain('pipeline drained');
    // On a failure, the report says which invariant verify found broken.
    expect(result.code, result.stdout).toBe(0);
    const report = JSON.parse(result.stdout) as VerifyReport;
    expect(report.violations).toEqual([]);
    expect(report.payments).toMatchObject({
      total: 5,
      settled: 3,
      failed: 1,
      processing: 1,
      deadLettered: 1,
      pending: 0,
      inFlight: 0,
    });
    expect(report.keys).toBe(5);
    expect(report.acquirer).toMatchObject({ approved: 3, declined: 1 });
    // 5 payment.created, 3 settled, 1 failed; the dead-lettered one has no result.
    expect(report.events?.distinct).toBe(9);
    expect(report.deadLetters?.eventIds).toBe(1);
    // tok_unavailable: the acquirer answered a retryable error for the whole window, a legitimate
    // dead letter with its own reason, not an outage (DESIGN 112).
    expect(report.deadLetters?.byReason).toEqual({ acquirer_transient: 1 });

    const text = await verifyCli('--grace', '0');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('by reason: 1 acquirer_transient');
    expect(text.stdout).toContain('violations    none');
  });

  it('when a settled payment gets a second approved charge, then it exits 1 naming duplicate_charge, and a scope without that payment still passes', async () => {
    const paymentId = ids.visa2 ?? '';
    await db.pool.query(
      `INSERT INTO acquirer_simulator_charges (idempotency_key, payment_id, result, reference)
       VALUES ($1, $2, 'approved', 'sim_injected')`,
      [`charge_again_${paymentId}`, paymentId],
    );
    try {
      const result = await verifyCli('--grace', '0');
      expect(result.code).toBe(1);
      expect(result.stdout).toContain('duplicate_charge x1');
      expect(result.stdout).toContain(paymentId);
      expect(result.stdout).toContain('2 approved and 0 declined charges');

      expect((await verifyCli('--grace', '0', '--key-prefix', 'other-')).code).toBe(1);
      const elsewhere = await verifyCli('--grace', '0', '--key-prefix', 'world-');
      expect(elsewhere.stdout).toContain('payments      4:');
      expect(elsewhere.code).toBe(0);
    } finally {
      await db.pool.query(
        `DELETE FROM acquirer_simulator_charges WHERE reference = 'sim_injected'`,
      );
    }
    expect((await verifyCli('--grace', '0')).code).toBe(0);
  });

  it('when a processing payment loses its settlement job, then it exits 1 naming missing_settlement', async () => {
    const paymentId = ids.unavailable ?? '';
    const { rows } = await db.pool.query<{ job: unknown }>(
      'DELETE FROM settlement_jobs WHERE payment_id = $1 RETURNING to_jsonb(settlement_jobs) AS job',
      [paymentId],
    );
    expect(rows).toHaveLength(1);
    try {
      const result = await verifyCli('--grace', '0');
      expect(result.code).toBe(1);
      expect(result.stdout).toContain('missing_settlement x1');
      expect(result.stdout).toContain(`${paymentId}  processing, no settlement job`);
      expect(result.stdout).not.toContain('duplicate_charge');
    } finally {
      await db.pool.query(
        'INSERT INTO settlement_jobs SELECT * FROM jsonb_populate_record(NULL::settlement_jobs, $1)',
        [JSON.stringify(rows[0]?.job)],
      );
    }
    expect((await verifyCli('--grace', '0')).code).toBe(0);
  });

  it('when a payment is left pending past the grace period, then it exits 1 naming stuck_pending, and not within it', async () => {
    const paymentId = ids.visa ?? '';
    const { rows } = await db.pool.query<{ status: string }>(
      'SELECT status FROM payments WHERE id = $1',
      [paymentId],
    );
    await db.pool.query(`UPDATE payments SET status = 'pending' WHERE id = $1`, [paymentId]);
    try {
      const late = await verifyCli('--grace', '0', '--no-kafka');
      expect(late.code).toBe(1);
      expect(late.stdout).toContain('stuck_pending x1');
      // A settled payment put back to pending also contradicts its charge.
      expect(late.stdout).toContain('charged_not_settled x1');
      const early = await verifyCli('--grace', '3600', '--no-kafka');
      expect(early.stdout).not.toContain('stuck_pending');
    } finally {
      await db.pool.query('UPDATE payments SET status = $2 WHERE id = $1', [
        paymentId,
        rows[0]?.status,
      ]);
    }
  });

  it('when a dead job has no letter on the dead-letter topic, then it exits 1 naming dead_letter_missing', async () => {
    const paymentId = ids.unavailable ?? '';
    const result = await runVerifyCli(
      db,
      { ...api.platform.config, KAFKA_TOPIC_DLQ: `${api.platform.config.KAFKA_TOPIC_DLQ}-absent` },
      ['--grace', '0'],
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('dead_letter_missing x1');
    expect(result.stdout).toContain(paymentId);
    expect(result.stdout).not.toContain('duplicate_dead_letter');
  });

  it('when a stale copy of payment.created lands after the payment.failed, then verify counts it as a stale copy, not an order violation', async () => {
    const paymentId = ids.declined ?? '';
    // The right event id (a relay that sent it again after its lease ended, issue 25 defect 5).
    const stale = toKafkaRecord({
      eventId: paymentEventId(paymentId, 'payment.created'),
      eventType: 'payment.created',
      aggregateId: paymentId,
      data: { id: paymentId },
      createdAt: new Date(),
    });
    await publishRaw(api.platform.config.KAFKA_TOPIC_PAYMENTS, [stale]);

    const result = await verifyCli('--grace', '0');
    expect(result.stdout).toContain('stale copies  1 copies of payment.created after its result');
    expect(result.stdout).not.toContain('events_out_of_order');
    expect(result.stdout).not.toContain('duplicate_event_ids');
  });

  it('when a dead letter reaches the dead-letter topic twice, then it exits 1 naming duplicate_dead_letter', async () => {
    const paymentId = ids.unavailable ?? '';
    const eventId = paymentEventId(paymentId, 'payment.created');
    const before = JSON.parse((await verifyCli('--grace', '0', '--json')).stdout) as VerifyReport;
    expect(before.counts.duplicate_dead_letter).toBeUndefined();

    // A second letter for the same job and life: no replay token anywhere on the payments topic.
    await publishRaw(api.platform.config.KAFKA_TOPIC_DLQ, [
      {
        key: paymentId,
        value: JSON.stringify({ id: eventId }),
        headers: {
          [DLQ_HEADERS.eventId]: eventId,
          [DLQ_HEADERS.originalTopic]: api.platform.config.KAFKA_TOPIC_PAYMENTS,
          [DLQ_HEADERS.originalPartition]: '-1',
          [DLQ_HEADERS.originalOffset]: '-1',
        },
      },
    ]);
    const result = await verifyCli('--grace', '0');
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('duplicate_dead_letter x1');
    expect(result.stdout).toContain(
      `${paymentId}  2 dead letters with event id ${eventId}, 0 replays`,
    );
  });

  it('when a payment.created copy with a foreign event id reaches the topic, then it exits 1 naming wrong_event_id and duplicate_event_ids', async () => {
    const paymentId = ids.visa ?? '';
    const producer = createIdempotentProducer(api.platform.kafka);
    await producer.connect();
    const forged = toKafkaRecord({
      eventId: crypto.randomUUID(),
      eventType: 'payment.created',
      aggregateId: paymentId,
      data: { id: paymentId },
      createdAt: new Date(),
    });
    await publish(producer, [
      { topic: api.platform.config.KAFKA_TOPIC_PAYMENTS, records: [forged] },
    ]);
    await producer.disconnect();

    const result = await verifyCli('--grace', '0');
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('duplicate_event_ids x1');
    expect(result.stdout).toMatch(/wrong_event_id x\d/);
    expect(result.stdout).toContain(paymentId);
  });

  it('when a charge is dead-lettered for a call that never reached the acquirer, then it exits 1 naming acquirer_unavailable_dead_letter, and counts it by reason', async () => {
    const paymentId = ids.visa2 ?? '';
    const eventId = paymentEventId(paymentId, 'payment.created');
    const before = JSON.parse((await verifyCli('--grace', '0', '--json')).stdout) as VerifyReport;
    expect(before.counts.acquirer_unavailable_dead_letter).toBeUndefined();

    // What an outage cost a payment before issue 36: refused calls counted, then the DLQ.
    await publishRaw(api.platform.config.KAFKA_TOPIC_DLQ, [
      {
        key: paymentId,
        value: JSON.stringify({ id: eventId }),
        headers: {
          [DLQ_HEADERS.eventId]: eventId,
          [DLQ_HEADERS.errorClass]: 'acquirer_unavailable',
          [DLQ_HEADERS.originalTopic]: api.platform.config.KAFKA_TOPIC_PAYMENTS,
          [DLQ_HEADERS.originalPartition]: '0',
          [DLQ_HEADERS.originalOffset]: '0',
        },
      },
    ]);
    const result = await verifyCli('--grace', '0', '--json');
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as VerifyReport;
    expect(report.counts.acquirer_unavailable_dead_letter).toBe(1);
    expect(report.violations).toContainEqual({
      code: 'acquirer_unavailable_dead_letter',
      paymentId,
      detail: `dead letter ${eventId}: acquirer_unavailable`,
    });
    expect(report.deadLetters?.byReason).toMatchObject({
      acquirer_transient: 1,
      acquirer_unavailable: 1,
    });
    // A scope without that payment does not judge its letter.
    const scoped = await verifyCli('--grace', '0', '--key-prefix', 'world-', '--json');
    expect(
      (JSON.parse(scoped.stdout) as VerifyReport).counts.acquirer_unavailable_dead_letter,
    ).toBeUndefined();
  });

  it('when the arguments are wrong, then it exits 2 with the usage', async () => {
    const result = await verifyCli('--wait', 'soon');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--wait must be a number of seconds');
    expect(result.stderr).toContain('usage: npm run verify');
  });
});
