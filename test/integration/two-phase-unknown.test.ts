import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcquirerTransientError } from '../../src/acquirer/acquirer.js';
import type { HoldAcquirer } from '../../src/acquirer/hold-acquirer.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { createSettlementHarness, type SettlementHarness } from '../support/settlement-harness.js';
import { getJson, startTestApi, type TestApi } from '../support/test-api.js';
import {
  createTwoPhase,
  manualPayment,
  paymentEvents,
  postHold,
  workHold,
} from '../support/two-phase-harness.js';

let db: TestDatabase;
let api: TestApi;
let harness: SettlementHarness;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  harness = await createSettlementHarness(db, {}, 1);
  ({ apiKey } = await api.merchant());
});

afterAll(async () => {
  await harness.close();
  await api.close();
  await db.drop();
});

/** The double, except that `operation`'s first answer is lost after the acquirer carried it out. */
function losingFirstAnswer(operation: 'authorize' | 'capture' | 'void') {
  return (holds: HoldAcquirer): HoldAcquirer => {
    let lost = false;
    const lose = async <T>(call: () => Promise<T>): Promise<T> => {
      const answer = await call();
      if (lost) return answer;
      lost = true;
      throw new AcquirerTransientError('answer lost', 'acquirer_timeout', 'unknown');
    };
    return {
      ...holds,
      authorize: (request, signal) =>
        operation === 'authorize'
          ? lose(() => holds.authorize(request, signal))
          : holds.authorize(request, signal),
      capture: (request, signal) =>
        operation === 'capture'
          ? lose(() => holds.capture(request, signal))
          : holds.capture(request, signal),
      void: (request, signal) =>
        operation === 'void'
          ? lose(() => holds.void(request, signal))
          : holds.void(request, signal),
    };
  };
}

describe('two-phase calls whose outcome is unknown', () => {
  it('when the authorization is carried out but its answer lost, then an inquiry finds it: one hold, requires_capture, one authorized event', async () => {
    const twoPhase = createTwoPhase(harness, undefined, losingFirstAnswer('authorize'));
    const { id } = await manualPayment(api, db, harness, twoPhase, { apiKey });
    expect((await getJson(api, `/payments/${id}`, apiKey)).json.status).toBe('requires_capture');
    // One authorize call: the second step was the inquiry, not a second call.
    expect(twoPhase.holds.calls.authorize).toBe(1);
    expect(twoPhase.holds.books(id)).toMatchObject({ authorizations: 1, held: 1000 });
    expect((await paymentEvents(db, id)).map((e) => e.event_type)).toEqual([
      'payment.created',
      'payment.authorized',
    ]);
  });

  it('when the capture is carried out but its answer lost, then an inquiry finds it: captured once, settled once', async () => {
    const twoPhase = createTwoPhase(harness, undefined, losingFirstAnswer('capture'));
    const { id } = await manualPayment(api, db, harness, twoPhase, { apiKey });
    const capture = await postHold(api, {
      apiKey,
      paymentId: id,
      action: 'capture',
      body: { amount_to_capture: 700 },
    });
    expect(capture.status).toBe(202);
    expect(await workHold(db, twoPhase, id)).toBe('done');
    expect(twoPhase.holds.calls.capture).toBe(1);
    expect(twoPhase.holds.books(id)).toMatchObject({ captures: 1, captured: 700, released: 300 });
    expect((await getJson(api, `/payments/${id}`, apiKey)).json).toMatchObject({
      status: 'settled',
      amount_captured: 700,
    });
    expect((await paymentEvents(db, id)).map((e) => e.event_type)).toEqual([
      'payment.created',
      'payment.authorized',
      'payment.settled',
    ]);
  });

  it('when the void is carried out but its answer lost, then an inquiry finds it: voided once, canceled once', async () => {
    const twoPhase = createTwoPhase(harness, undefined, losingFirstAnswer('void'));
    const { id } = await manualPayment(api, db, harness, twoPhase, { apiKey });
    const cancel = await postHold(api, { apiKey, paymentId: id, action: 'cancel' });
    expect(cancel.status).toBe(202);
    expect(await workHold(db, twoPhase, id)).toBe('done');
    expect(twoPhase.holds.calls.void).toBe(1);
    expect(twoPhase.holds.books(id)).toMatchObject({ voids: 1, released: 1000 });
    expect((await getJson(api, `/payments/${id}`, apiKey)).json).toMatchObject({
      status: 'canceled',
      cancellation_reason: null,
    });
  });
});
