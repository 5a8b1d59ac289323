import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postRefund } from '../support/refund-client.js';
import { refundWorkFacts } from '../support/refund-harness.js';
import { createSettlementHarness, type SettlementHarness } from '../support/settlement-harness.js';
import { getJson, postPayment, startTestApi, type TestApi } from '../support/test-api.js';
import {
  createTwoPhase,
  manualPayment,
  paymentEvents,
  postHold,
  statusOf,
  workHold,
  type TwoPhase,
} from '../support/two-phase-harness.js';
import { eventually } from '../support/settlement-harness.js';
import { createRefundWorker } from '../../src/refunds/refund-worker.js';
import { createRefundSimulator } from '../../src/acquirer/refund-simulator.js';

let db: TestDatabase;
let api: TestApi;
let harness: SettlementHarness;
let twoPhase: TwoPhase;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { IDEMPOTENCY_IN_FLIGHT: 'wait', IDEMPOTENCY_WAIT_MS: '10000' });
  harness = await createSettlementHarness(db, {}, 1);
  twoPhase = createTwoPhase(harness);
  ({ apiKey } = await api.merchant());
});

afterAll(async () => {
  await harness.close();
  await api.close();
  await db.drop();
});

const types = async (id: string) => (await paymentEvents(db, id)).map((e) => e.event_type);

describe('manual capture', () => {
  it('when authorized, then requires_capture with capture_before, one hold, and payment.authorized', async () => {
    const before = Date.now();
    const { id, created } = await manualPayment(api, db, harness, twoPhase, { apiKey });
    expect(created.json).toMatchObject({ status: 'pending', capture_method: 'manual' });
    const read = await getJson(api, `/payments/${id}`, apiKey);
    expect(read.json).toMatchObject({
      status: 'requires_capture',
      capture_method: 'manual',
      amount_capturable: 1000,
    });
    const captureBefore = Date.parse(read.json.capture_before as string);
    expect(captureBefore - before).toBeGreaterThan(604_700_000);
    expect(twoPhase.holds.books(id)).toMatchObject({ authorizations: 1, held: 1000 });
    const events = await paymentEvents(db, id);
    expect(events.map((e) => e.event_type)).toEqual(['payment.created', 'payment.authorized']);
    expect(events[1]?.event_id).toBe(paymentEventId(id, 'payment.authorized'));
  });

  it('authorize -> partial capture -> refund of part: settled with amount_captured, the rest released, refunds only within the capture', async () => {
    const { id } = await manualPayment(api, db, harness, twoPhase, { apiKey });
    // Not refundable before the capture.
    const early = await postRefund(api, { apiKey, paymentId: id, body: { amount: 100 } });
    expect(early.status).toBe(422);
    expect(early.json.code).toBe('payment_not_refundable');

    const key = crypto.randomUUID();
    const capture = await postHold(api, {
      apiKey,
      paymentId: id,
      action: 'capture',
      key,
      body: { amount_to_capture: 600 },
    });
    expect(capture.status).toBe(202);
    const replay = await postHold(api, {
      apiKey,
      paymentId: id,
      action: 'capture',
      key,
      body: { amount_to_capture: 600 },
    });
    expect(replay.status).toBe(202);
    expect(replay.text).toBe(capture.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');

    expect(await workHold(db, twoPhase, id)).toBe('done');
    expect(twoPhase.holds.books(id)).toEqual({
      authorizations: 1,
      captures: 1,
      voids: 0,
      held: 1000,
      captured: 600,
      released: 400,
    });
    const read = await getJson(api, `/payments/${id}`, apiKey);
    expect(read.json).toMatchObject({
      status: 'settled',
      amount_captured: 600,
      amount_capturable: 0,
      amount_refunded: 0,
    });
    const events = await paymentEvents(db, id);
    expect(events.map((e) => e.event_type)).toEqual([
      'payment.created',
      'payment.authorized',
      'payment.settled',
    ]);
    expect(events[2]?.data).toMatchObject({ status: 'settled', amount_captured: 600 });

    // A second capture, and a cancel after the capture: the contract's codes.
    const again = await postHold(api, { apiKey, paymentId: id, action: 'capture' });
    expect([again.status, again.json.code]).toEqual([422, 'payment_already_captured']);
    const cancel = await postHold(api, { apiKey, paymentId: id, action: 'cancel' });
    expect([cancel.status, cancel.json.code]).toEqual([422, 'payment_already_captured']);

    // Refunds: at most the 600 captured, not the 1000 authorized.
    const over = await postRefund(api, { apiKey, paymentId: id, body: { amount: 700 } });
    expect([over.status, over.json.code]).toEqual([422, 'refund_exceeds_payment']);
    const refund = await postRefund(api, { apiKey, paymentId: id, body: { amount: 250 } });
    expect(refund.status).toBe(202);
    const refunds = createRefundWorker({
      pool: harness.platform.pool,
      acquirer: createRefundSimulator(harness.platform.pool),
      deadLetters: harness.deadLetters(),
      logger: harness.platform.logger,
      config: harness.config,
    });
    const refundId = refund.json.id as string;
    const facts = await eventually('refund worked', async () => {
      await refunds.runOnce();
      const worked = await refundWorkFacts(db, refundId);
      return worked.status === 'pending' ? undefined : worked;
    });
    expect(facts).toMatchObject({ status: 'succeeded', amount_refunded: 250 });
    const rest = await postRefund(api, { apiKey, paymentId: id, body: {} });
    expect(rest.status).toBe(202);
    expect(rest.json.amount).toBe(350);
  });

  it('authorize -> cancel: canceled with its reason, the hold voided, payment.canceled; capture after cancel refused', async () => {
    const { id } = await manualPayment(api, db, harness, twoPhase, { apiKey });
    const cancel = await postHold(api, {
      apiKey,
      paymentId: id,
      action: 'cancel',
      body: { cancellation_reason: 'requested_by_customer' },
    });
    expect(cancel.status).toBe(202);
    const capture = await postHold(api, { apiKey, paymentId: id, action: 'capture' });
    expect([capture.status, capture.json.code]).toEqual([422, 'payment_already_canceled']);
    expect(await workHold(db, twoPhase, id)).toBe('done');
    expect(twoPhase.holds.books(id)).toMatchObject({
      authorizations: 1,
      captures: 0,
      voids: 1,
      captured: 0,
      released: 1000,
    });
    const read = await getJson(api, `/payments/${id}`, apiKey);
    expect(read.json).toMatchObject({
      status: 'canceled',
      cancellation_reason: 'requested_by_customer',
      amount_capturable: 0,
    });
    expect(typeof read.json.canceled_at).toBe('string');
    expect(await types(id)).toEqual(['payment.created', 'payment.authorized', 'payment.canceled']);
  });

  it('when the acquirer declines the capture, then the hold is voided and the payment failed with capture_declined', async () => {
    const { id } = await manualPayment(api, db, harness, twoPhase, {
      apiKey,
      source: 'tok_capture_decline',
    });
    const capture = await postHold(api, { apiKey, paymentId: id, action: 'capture' });
    expect(capture.status).toBe(202);
    expect(await workHold(db, twoPhase, id)).toBe('done');
    expect(twoPhase.holds.books(id)).toMatchObject({ captures: 0, voids: 1, released: 1000 });
    const read = await getJson(api, `/payments/${id}`, apiKey);
    expect(read.json).toMatchObject({ status: 'failed', failure_code: 'capture_declined' });
    expect(await types(id)).toEqual(['payment.created', 'payment.authorized', 'payment.failed']);
  });

  it('when the authorization is declined, then failed as today, no hold job, no authorized event', async () => {
    const { id } = await manualPayment(api, db, harness, twoPhase, {
      apiKey,
      source: 'tok_decline',
    });
    expect(await statusOf(db, id)).toBe('failed');
    expect(await types(id)).toEqual(['payment.created', 'payment.failed']);
    const capture = await postHold(api, { apiKey, paymentId: id, action: 'capture' });
    expect([capture.status, capture.json.code]).toEqual([422, 'payment_not_capturable']);
  });

  it('when the request is wrong, then the contract codes and nothing is decided', async () => {
    const automatic = await postPayment(api, {
      apiKey,
      body: { amount: 1000, currency: 'EUR', source: 'tok_visa' },
    });
    expect(automatic.json.capture_method).toBeUndefined();
    const auto = await postHold(api, {
      apiKey,
      paymentId: automatic.json.id as string,
      action: 'capture',
    });
    expect([auto.status, auto.json.code]).toEqual([422, 'capture_method_automatic']);

    const pending = await postPayment(api, {
      apiKey,
      body: { amount: 1000, currency: 'EUR', source: 'tok_visa', capture_method: 'manual' },
    });
    const early = await postHold(api, {
      apiKey,
      paymentId: pending.json.id as string,
      action: 'cancel',
    });
    expect([early.status, early.json.code]).toEqual([409, 'payment_authorization_pending']);

    const { id } = await manualPayment(api, db, harness, twoPhase, { apiKey });
    const over = await postHold(api, {
      apiKey,
      paymentId: id,
      action: 'capture',
      body: { amount_to_capture: 1001 },
    });
    expect([over.status, over.json.code]).toEqual([422, 'amount_exceeds_authorization']);
    const badReason = await postHold(api, {
      apiKey,
      paymentId: id,
      action: 'cancel',
      body: { cancellation_reason: 'expired' },
    });
    expect([badReason.status, badReason.json.code]).toEqual([400, 'validation_failed']);
    const unknown = await postHold(api, {
      apiKey,
      paymentId: crypto.randomUUID(),
      action: 'capture',
    });
    expect(unknown.status).toBe(404);
    const { rows } = await db.pool.query(
      'SELECT 1 FROM payment_hold_decisions WHERE payment_id = $1',
      [id],
    );
    expect(rows).toEqual([]);
  });
});
