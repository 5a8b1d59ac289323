import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { classifyAcquirerFailure } from '../../src/acquirer/acquirer.js';
import {
  authorizeIdempotencyKey,
  captureIdempotencyKey,
  HOLD_DECLINE_CODES,
  voidIdempotencyKey,
} from '../../src/acquirer/hold-acquirer.js';
import { createHoldSimulator } from '../../src/acquirer/hold-simulator.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';

/**
 * The simulator's two-step books (issue 40 item 6, DESIGN 128): a hold per payment, captured in
 * part or in whole (the rest released) or voided, each decline with its code, each key answered
 * once and replayed after, and concurrent captures and voids of one hold decided by exactly one.
 */

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const signal = () => AbortSignal.timeout(10_000);
const options = { latencyMs: 0, transientFailureRate: 0, timeoutTokenDelayMs: 1_000 };

interface Books {
  state: string;
  authorized: number;
  captured: number;
  released: number;
}

async function holdOf(paymentId: string): Promise<Books | undefined> {
  const { rows } = await db.pool.query<Books>(
    `SELECT state, amount_authorized::int AS authorized, amount_captured::int AS captured,
            amount_released::int AS released
       FROM acquirer_simulator_holds WHERE payment_id = $1`,
    [paymentId],
  );
  return rows[0];
}

async function callsOf(key: string): Promise<{ result: string; replayed: boolean }[]> {
  const { rows } = await db.pool.query<{ result: string; replayed: boolean }>(
    'SELECT result, replayed FROM acquirer_simulator_hold_calls WHERE idempotency_key = $1 ORDER BY id',
    [key],
  );
  return rows;
}

/** A payment's three requests with the service's keys; `amount` is the hold. */
function payment(source = 'tok_visa', amount = 1_000) {
  const paymentId = randomUUID();
  return {
    paymentId,
    authorize: {
      idempotencyKey: authorizeIdempotencyKey(paymentId),
      paymentId,
      amount,
      currency: 'EUR',
      source,
    },
    capture: (captured: number, key = captureIdempotencyKey(paymentId)) => ({
      idempotencyKey: key,
      paymentId,
      amount: captured,
      currency: 'EUR',
      source,
    }),
    void: (key = voidIdempotencyKey(paymentId)) => ({ idempotencyKey: key, paymentId, source }),
  };
}

const declined = (code: string) => ({ outcome: 'declined', code });

// In-process on settlement's login (ACQUIRER_URL unset) and deployed on the acquirer's own.
describe.each(['settlement', 'acquirer'] as const)('hold simulator on the %s login', (login) => {
  const simulator = () => createHoldSimulator(db.login(login), options);

  it('when 600 of a 1,000 hold is captured, then the books say captured 600, released 400, and one hold', async () => {
    const sim = simulator();
    const p = payment();
    expect(await sim.authorize(p.authorize, signal())).toMatchObject({ outcome: 'approved' });
    expect(await holdOf(p.paymentId)).toEqual({
      state: 'held',
      authorized: 1_000,
      captured: 0,
      released: 0,
    });
    expect(await sim.capture(p.capture(600), signal())).toMatchObject({ outcome: 'approved' });
    const books = await holdOf(p.paymentId);
    expect(books).toEqual({ state: 'captured', authorized: 1_000, captured: 600, released: 400 });
    expect((books?.captured ?? 0) + (books?.released ?? 0)).toBe(books?.authorized);
  });

  it('when a hold is voided, then all of it is released and nothing captured', async () => {
    const sim = simulator();
    const p = payment();
    await sim.authorize(p.authorize, signal());
    expect(await sim.void(p.void(), signal())).toMatchObject({ outcome: 'approved' });
    expect(await holdOf(p.paymentId)).toEqual({
      state: 'voided',
      authorized: 1_000,
      captured: 0,
      released: 1_000,
    });
  });

  it('when tok_decline is authorized, then it is declined card_declined, no hold is placed, and a capture or void finds no authorization', async () => {
    const sim = simulator();
    const p = payment('tok_decline');
    expect(await sim.authorize(p.authorize, signal())).toEqual(declined('card_declined'));
    expect(await holdOf(p.paymentId)).toBeUndefined();
    expect(await sim.capture(p.capture(100), signal())).toEqual(
      declined(HOLD_DECLINE_CODES.noAuthorization),
    );
    expect(await sim.void(p.void(), signal())).toEqual(
      declined(HOLD_DECLINE_CODES.noAuthorization),
    );
  });

  it('when more than the hold is captured, then it is declined amount_exceeds_authorization and the hold stays whole for a capture under another key', async () => {
    const sim = simulator();
    const p = payment();
    await sim.authorize(p.authorize, signal());
    expect(await sim.capture(p.capture(1_001), signal())).toEqual(
      declined(HOLD_DECLINE_CODES.amountExceedsAuthorization),
    );
    expect(await holdOf(p.paymentId)).toMatchObject({ state: 'held', captured: 0 });
    expect(await sim.capture(p.capture(1_000, `capture_other_${p.paymentId}`), signal())).toEqual(
      expect.objectContaining({ outcome: 'approved' }),
    );
    expect(await holdOf(p.paymentId)).toMatchObject({ captured: 1_000, released: 0 });
  });

  it('when a voided hold is captured, then authorization_voided; when a captured one is voided or captured again, then already_captured', async () => {
    const sim = simulator();
    const voided = payment();
    await sim.authorize(voided.authorize, signal());
    await sim.void(voided.void(), signal());
    expect(await sim.capture(voided.capture(100), signal())).toEqual(
      declined(HOLD_DECLINE_CODES.authorizationVoided),
    );
    expect(await sim.void(voided.void(`void_again_${voided.paymentId}`), signal())).toEqual(
      declined(HOLD_DECLINE_CODES.authorizationVoided),
    );

    const captured = payment();
    await sim.authorize(captured.authorize, signal());
    await sim.capture(captured.capture(300), signal());
    expect(await sim.void(captured.void(), signal())).toEqual(
      declined(HOLD_DECLINE_CODES.alreadyCaptured),
    );
    expect(
      await sim.capture(captured.capture(300, `capture_again_${captured.paymentId}`), signal()),
    ).toEqual(declined(HOLD_DECLINE_CODES.alreadyCaptured));
    expect(await holdOf(captured.paymentId)).toEqual({
      state: 'captured',
      authorized: 1_000,
      captured: 300,
      released: 700,
    });
    expect(await holdOf(voided.paymentId)).toMatchObject({ state: 'voided', released: 1_000 });
  });

  it('when tok_capture_decline is authorized and captured, then the capture is declined capture_declined and the hold can still be voided', async () => {
    const sim = simulator();
    const p = payment('tok_capture_decline');
    expect(await sim.authorize(p.authorize, signal())).toMatchObject({ outcome: 'approved' });
    expect(await sim.capture(p.capture(500), signal())).toEqual(
      declined(HOLD_DECLINE_CODES.captureDeclined),
    );
    expect(await holdOf(p.paymentId)).toMatchObject({ state: 'held', captured: 0 });
    expect(await sim.void(p.void(), signal())).toMatchObject({ outcome: 'approved' });
    expect(await holdOf(p.paymentId)).toMatchObject({ state: 'voided', released: 1_000 });
  });

  it('when each key is sent again, then its stored answer is replayed (the same reference, the same decline), whatever the hold became since', async () => {
    const sim = simulator();
    const p = payment();
    const authorized = await sim.authorize(p.authorize, signal());
    const tooMuch = p.capture(5_000);
    expect(await sim.capture(tooMuch, signal())).toEqual(
      declined(HOLD_DECLINE_CODES.amountExceedsAuthorization),
    );
    const captured = await sim.capture(p.capture(1_000, `capture_ok_${p.paymentId}`), signal());
    expect(await sim.authorize(p.authorize, signal())).toEqual(authorized);
    expect(await sim.capture(tooMuch, signal())).toEqual(
      declined(HOLD_DECLINE_CODES.amountExceedsAuthorization),
    );
    expect(await sim.capture(p.capture(1_000, `capture_ok_${p.paymentId}`), signal())).toEqual(
      captured,
    );
    expect(await callsOf(p.authorize.idempotencyKey)).toEqual([
      { result: 'approved', replayed: false },
      { result: 'approved', replayed: true },
    ]);
    const holds = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM acquirer_simulator_holds WHERE payment_id = $1',
      [p.paymentId],
    );
    expect(holds.rows[0]?.n).toBe(1);
  });

  it('when 50 captures and voids of one hold race under distinct keys, then exactly one is approved and the others are declined with the state it left', async () => {
    // 25 connections open before the race, so the calls overlap in the database (a cold pool
    // would connect one at a time and hand them out after the hold was decided).
    const pool = new pg.Pool({ connectionString: db.roleUrl(login), max: 25 });
    pool.on('error', () => undefined);
    onTestFinished(() => pool.end());
    await Promise.all(Array.from({ length: 25 }, () => pool.query('SELECT pg_sleep(0.05)')));
    const sim = createHoldSimulator(pool, options);
    const p = payment();
    await sim.authorize(p.authorize, signal());
    const calls = Array.from({ length: 50 }, (_, i) =>
      i % 2 === 0
        ? sim.capture(p.capture(400, `capture_${String(i)}_${p.paymentId}`), signal())
        : sim.void(p.void(`void_${String(i)}_${p.paymentId}`), signal()),
    );
    const answers = await Promise.all(calls);
    const approved = answers.flatMap((answer, i) => (answer.outcome === 'approved' ? [i] : []));
    expect(approved).toHaveLength(1);
    const books = await holdOf(p.paymentId);
    const winnerCaptured = (approved[0] ?? 1) % 2 === 0;
    expect(books).toEqual(
      winnerCaptured
        ? { state: 'captured', authorized: 1_000, captured: 400, released: 600 }
        : { state: 'voided', authorized: 1_000, captured: 0, released: 1_000 },
    );
    const code = winnerCaptured
      ? HOLD_DECLINE_CODES.alreadyCaptured
      : HOLD_DECLINE_CODES.authorizationVoided;
    expect(answers.filter((answer) => answer.outcome === 'declined')).toEqual(
      Array.from({ length: 49 }, () => declined(code)),
    );
    const stored = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM acquirer_simulator_hold_operations
        WHERE payment_id = $1 AND operation <> 'authorize'`,
      [p.paymentId],
    );
    expect(stored.rows[0]?.n).toBe(50);
  });

  it('when keys are inquired about, then each operation finds its own answers and null for a key never carried out', async () => {
    const sim = simulator();
    const p = payment();
    const authorized = await sim.authorize(p.authorize, signal());
    const captured = await sim.capture(p.capture(250), signal());
    expect(await sim.inquireAuthorization(p.authorize.idempotencyKey, signal())).toEqual(
      authorized,
    );
    expect(await sim.inquireCapture(captureIdempotencyKey(p.paymentId), signal())).toEqual(
      captured,
    );
    expect(await sim.inquireVoid(voidIdempotencyKey(p.paymentId), signal())).toBeNull();
    // A key is found only as the operation it was: an authorization is not a capture.
    expect(await sim.inquireCapture(p.authorize.idempotencyKey, signal())).toBeNull();
    const refused = payment('tok_decline');
    await sim.authorize(refused.authorize, signal());
    expect(await sim.inquireAuthorization(refused.authorize.idempotencyKey, signal())).toEqual(
      declined('card_declined'),
    );
  });
});

describe('hold simulator failures', () => {
  const sim = (overrides: Partial<typeof options> = {}) =>
    createHoldSimulator(db.login('acquirer'), { ...options, ...overrides });
  const failure = (call: Promise<unknown>) =>
    call.then(
      () => null,
      (error: unknown) => error,
    );

  it('when tok_transient_2 is authorized three times, then it fails twice (answered) and holds on the third', async () => {
    const p = payment('tok_transient_2');
    for (const _ of [1, 2]) {
      const error = await failure(sim().authorize(p.authorize, signal()));
      expect(classifyAcquirerFailure(error)).toMatchObject({ errorClass: 'acquirer_transient' });
      expect(classifyAcquirerFailure(error).delivery).toBeUndefined();
    }
    expect(await holdOf(p.paymentId)).toBeUndefined();
    expect(await sim().authorize(p.authorize, signal())).toMatchObject({ outcome: 'approved' });
    expect(await holdOf(p.paymentId)).toMatchObject({ state: 'held' });
  });

  it('when tok_unavailable is authorized, then every call fails transiently and nothing is held or stored', async () => {
    const p = payment('tok_unavailable');
    expect(await failure(sim().authorize(p.authorize, signal()))).toMatchObject({
      errorClass: 'acquirer_transient',
    });
    expect(await holdOf(p.paymentId)).toBeUndefined();
    expect(await sim().inquireAuthorization(p.authorize.idempotencyKey, signal())).toBeNull();
  });

  it('when tok_timeout is authorized, then the call ends as an unknown outcome and nothing is held', async () => {
    const p = payment('tok_timeout');
    const error = await failure(sim({ timeoutTokenDelayMs: 50 }).authorize(p.authorize, signal()));
    expect(classifyAcquirerFailure(error)).toMatchObject({
      errorClass: 'acquirer_timeout',
      delivery: 'unknown',
    });
    expect(await holdOf(p.paymentId)).toBeUndefined();
  });

  it('when the failure rate strikes, then a fresh call fails and a key already answered is replayed', async () => {
    const p = payment();
    const authorized = await sim().authorize(p.authorize, signal());
    const flaky = sim({ transientFailureRate: 1 });
    expect(await flaky.authorize(p.authorize, signal())).toEqual(authorized);
    expect(await failure(flaky.capture(p.capture(100), signal()))).toMatchObject({
      errorClass: 'acquirer_transient',
    });
    expect(await holdOf(p.paymentId)).toMatchObject({ state: 'held', captured: 0 });
  });
});
