import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRefundSimulator } from '../../src/acquirer/refund-simulator.js';
import { refundEventId } from '../../src/refunds/refund-event-id.js';
import { metricsRegistry } from '../../src/platform/telemetry/metrics.js';
import { createRefundWorker, type RefundWorker } from '../../src/refunds/refund-worker.js';
import { verifyPayments } from '../../tools/verify/verify-payments.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postRefund, settledPayment } from '../support/refund-client.js';
import { refundWorkFacts } from '../support/refund-harness.js';
import {
  createSettlementHarness,
  eventually,
  readTopic,
  type SettlementHarness,
} from '../support/settlement-harness.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

let db: TestDatabase;
let api: TestApi;
let harness: SettlementHarness;
let worker: RefundWorker;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  harness = await createSettlementHarness(db, { REFUND_MAX_ATTEMPTS: '3' }, 1);
  ({ apiKey } = await api.merchant());
  const { config, platform } = harness;
  worker = createRefundWorker({
    pool: platform.pool,
    acquirer: createRefundSimulator(platform.pool),
    deadLetters: harness.deadLetters(),
    logger: platform.logger,
    config,
  });
});

afterAll(async () => {
  await harness.close();
  await api.close();
  await db.drop();
});

/** A settled payment with `source`, refunded by `amount` through the API; the refund id. */
async function refund(source: string, amount = 400): Promise<{ id: string; paymentId: string }> {
  const paymentId = await settledPayment(api, db, apiKey, { amount: 1000, source });
  const res = await postRefund(api, { apiKey, paymentId, body: { amount } });
  expect(res.status).toBe(202);
  return { id: res.json.id as string, paymentId };
}

/** Runs the worker until the refund's job is gone or dead. */
async function workUntilDone(refundId: string) {
  return eventually(`refund ${refundId} worked`, async () => {
    await worker.runOnce();
    const facts = await refundWorkFacts(db, refundId);
    return facts.job_state === 'pending' ? undefined : facts;
  });
}

describe('the refund worker', () => {
  it('when the acquirer approves, then succeeded once, with one refund.succeeded event keyed by the payment', async () => {
    const { id, paymentId } = await refund('tok_visa');
    expect(await workUntilDone(id)).toMatchObject({
      status: 'succeeded',
      failure_code: null,
      amount_refunded: 400,
      acquirer_refunds: 1,
      approved_refunds: 1,
      calls: 1,
      result_events: 1,
      job_state: null,
    });
    const event = await db.pool.query<{ event_id: string; aggregate_id: string; data: unknown }>(
      `SELECT event_id, aggregate_id, data FROM outbox WHERE event_type = 'refund.succeeded'
        AND data->>'id' = $1`,
      [id],
    );
    expect(event.rows[0]).toMatchObject({
      event_id: refundEventId(id, 'refund.succeeded'),
      aggregate_id: paymentId,
      data: { id, status: 'succeeded', payment_id: paymentId },
    });
  });

  it('when the acquirer declines, then failed with refund_declined and the amount released', async () => {
    const { id } = await refund('tok_refund_decline');
    expect(await workUntilDone(id)).toMatchObject({
      status: 'failed',
      failure_code: 'refund_declined',
      amount_refunded: 0,
      acquirer_refunds: 1,
      approved_refunds: 0,
      result_events: 1,
    });
    const event = await db.pool.query(
      `SELECT event_id FROM outbox WHERE event_type = 'refund.failed' AND data->>'id' = $1`,
      [id],
    );
    expect(event.rows).toEqual([{ event_id: refundEventId(id, 'refund.failed') }]);
  });

  it('when the acquirer fails transiently twice, then it is retried and succeeds on the third call', async () => {
    const { id } = await refund('tok_refund_transient_2');
    expect(await workUntilDone(id)).toMatchObject({
      status: 'succeeded',
      approved_refunds: 1,
      calls: 3,
      result_events: 1,
    });
  });

  it('when the acquirer stays unavailable, then dead-lettered after the attempt limit, pending, amount kept', async () => {
    const { id, paymentId } = await refund('tok_refund_unavailable');
    expect(await workUntilDone(id)).toMatchObject({
      status: 'pending',
      amount_refunded: 400,
      acquirer_refunds: 0,
      calls: 3,
      result_events: 0,
      job_state: 'dead',
    });
    const letters = await readTopic(harness.platform.kafka, harness.config.KAFKA_TOPIC_DLQ, 1);
    const letter = letters.find(
      (r) => r.headers.dlq_event_id === refundEventId(id, 'refund.created'),
    );
    expect(letter).toBeDefined();
    expect(letter?.key).toBe(paymentId);
    expect(letter?.headers).toMatchObject({
      dlq_error_class: 'acquirer_transient',
      dlq_attempts: '3',
    });
    expect(JSON.parse(letter?.value?.toString() ?? '{}')).toMatchObject({
      type: 'refund.created',
      data: { id, status: 'pending' },
    });
  });

  it('when the refunds above were worked, then the refund counters say so: attempts by result, completions by status, the dead letter', async () => {
    const values = async (name: string) =>
      Object.fromEntries(
        ((await metricsRegistry.getSingleMetric(name)?.get())?.values ?? []).map((v) => [
          Object.values(v.labels).join(','),
          v.value,
        ]),
      );
    const attempts = await values('refund_acquirer_attempts_total');
    // approved: tok_visa and the transient refund's third call; 2 + 3 transient failures.
    expect(attempts).toMatchObject({ approved: 2, declined: 1 });
    const transient = Object.entries(attempts)
      .filter(([result]) => result !== 'approved' && result !== 'declined')
      .reduce((sum, [, n]) => sum + n, 0);
    expect(transient).toBe(5);
    expect(await values('refunds_completed_total')).toEqual({ succeeded: 2, failed: 1 });
    expect(await values('settlement_dead_letters_total')).toEqual({ acquirer_transient: 1 });
  });

  it('when every refund above is worked, then the verifier finds no refund violation (and one it plants)', async () => {
    const refundCodes = (violations: { code: string }[]) =>
      violations.map((v) => v.code).filter((c) => /refund/.test(c));
    // The verifier is an operator's tool that reads every table: the owner's login.
    const clean = await verifyPayments(
      { db: db.pool },
      { scope: {}, graceSeconds: 0, keyTtlSeconds: 86_400 },
    );
    expect(refundCodes(clean.violations)).toEqual([]);
    expect(clean.refunds).toMatchObject({ total: 4, succeeded: 2, failed: 1, deadLettered: 1 });
    const { id } = await refund('tok_visa', 100);
    await db.pool.query(`UPDATE refunds SET status = 'succeeded' WHERE id = $1`, [id]);
    const planted = await verifyPayments(
      { db: db.pool },
      { scope: {}, graceSeconds: 0, keyTtlSeconds: 86_400 },
    );
    expect(refundCodes(planted.violations).sort()).toEqual([
      'refund_job_mismatch',
      'refund_outcome_mismatch',
    ]);
  });
});
