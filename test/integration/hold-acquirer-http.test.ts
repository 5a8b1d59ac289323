import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyAcquirerFailure } from '../../src/acquirer/acquirer.js';
import { NO_FAULT } from '../../src/acquirer/acquirer-faults.js';
import {
  authorizeIdempotencyKey,
  captureIdempotencyKey,
  HOLD_DECLINE_CODES,
  voidIdempotencyKey,
} from '../../src/acquirer/hold-acquirer.js';
import { createHttpAcquirer } from '../../src/acquirer/http-acquirer.js';
import { startSimulatorServer, type SimulatorServer } from '../support/simulator-server.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';

/**
 * The two-step operations over HTTP (issue 40, DESIGN 128): the client's authorize, capture and
 * void reach the acquirer role's server, answered from the hold books on the acquirer's login;
 * declines keep their codes, inquiries find each key, and the faults classify the calls as for
 * charges (not sent, unknown).
 */

let db: TestDatabase;
let simulator: SimulatorServer;
let acquirer: ReturnType<typeof createHttpAcquirer>;

beforeAll(async () => {
  db = await createTestDatabase();
  simulator = await startSimulatorServer(db);
  acquirer = createHttpAcquirer(simulator.url);
});
afterAll(async () => {
  await simulator.close();
  await db.drop();
});

const signal = () => AbortSignal.timeout(10_000);

function payment(source = 'tok_visa') {
  const paymentId = randomUUID();
  const base = { paymentId, currency: 'EUR', source };
  return {
    paymentId,
    authorize: { ...base, idempotencyKey: authorizeIdempotencyKey(paymentId), amount: 1_000 },
    capture: (amount: number, idempotencyKey = captureIdempotencyKey(paymentId)) => ({
      ...base,
      idempotencyKey,
      amount,
    }),
    void: (idempotencyKey = voidIdempotencyKey(paymentId)) => ({
      paymentId,
      source,
      idempotencyKey,
    }),
  };
}

async function holdOf(paymentId: string) {
  const { rows } = await db.pool.query<{ state: string; captured: number; released: number }>(
    `SELECT state, amount_captured::int AS captured, amount_released::int AS released
       FROM acquirer_simulator_holds WHERE payment_id = $1`,
    [paymentId],
  );
  return rows[0];
}

const failureOf = (call: Promise<unknown>) =>
  call.then(
    () => {
      throw new Error('the call succeeded');
    },
    (error: unknown) => error,
  );

describe('holds over HTTP', () => {
  it('when a hold is authorized and 250 of it captured, then the books have it and each inquiry finds its answer', async () => {
    const p = payment();
    const authorized = await acquirer.authorize(p.authorize, signal());
    expect(authorized).toMatchObject({ outcome: 'approved' });
    const captured = await acquirer.capture(p.capture(250), signal());
    expect(captured).toMatchObject({ outcome: 'approved' });
    expect(await holdOf(p.paymentId)).toEqual({ state: 'captured', captured: 250, released: 750 });
    expect(await acquirer.inquireAuthorization(p.authorize.idempotencyKey, signal())).toEqual(
      authorized,
    );
    expect(await acquirer.inquireCapture(captureIdempotencyKey(p.paymentId), signal())).toEqual(
      captured,
    );
    expect(await acquirer.inquireVoid(voidIdempotencyKey(p.paymentId), signal())).toBeNull();
    // The same key again: the stored answer, not a second capture.
    expect(await acquirer.capture(p.capture(250), signal())).toEqual(captured);
  });

  it('when holds are declined, voided and captured out of order, then each answer carries its code', async () => {
    const refused = payment('tok_decline');
    expect(await acquirer.authorize(refused.authorize, signal())).toEqual({
      outcome: 'declined',
      code: 'card_declined',
    });
    const issuerRefuses = payment('tok_capture_decline');
    await acquirer.authorize(issuerRefuses.authorize, signal());
    expect(await acquirer.capture(issuerRefuses.capture(100), signal())).toEqual({
      outcome: 'declined',
      code: HOLD_DECLINE_CODES.captureDeclined,
    });
    const voided = payment();
    await acquirer.authorize(voided.authorize, signal());
    expect(await acquirer.void(voided.void(), signal())).toMatchObject({ outcome: 'approved' });
    expect(await acquirer.capture(voided.capture(100), signal())).toEqual({
      outcome: 'declined',
      code: HOLD_DECLINE_CODES.authorizationVoided,
    });
    expect(await holdOf(voided.paymentId)).toEqual({
      state: 'voided',
      captured: 0,
      released: 1_000,
    });
  });

  it('when 20 captures and voids of one hold race over HTTP, then exactly one is approved', async () => {
    const p = payment();
    await acquirer.authorize(p.authorize, signal());
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0
          ? acquirer.capture(p.capture(1_000, `capture_${String(i)}_${p.paymentId}`), signal())
          : acquirer.void(p.void(`void_${String(i)}_${p.paymentId}`), signal()),
      ),
    );
    expect(answers.filter((answer) => answer.outcome === 'approved')).toHaveLength(1);
    const books = await holdOf(p.paymentId);
    expect(books?.state === 'captured' ? books.captured : books?.released).toBe(1_000);
  });

  it('when a capture is malformed (amount 0), then the acquirer refuses it (400: answered) and nothing is captured', async () => {
    const p = payment();
    await acquirer.authorize(p.authorize, signal());
    const failure = await failureOf(acquirer.capture(p.capture(0), signal()));
    expect(classifyAcquirerFailure(failure)).toMatchObject({ errorClass: 'acquirer_rejected' });
    expect(await holdOf(p.paymentId)).toMatchObject({ state: 'held' });
  });
});

describe('holds over HTTP: faults', () => {
  it('when the acquirer answers 503 before processing, then the authorization was not sent, its Retry-After is kept, and nothing is held', async () => {
    simulator.faults.set({ ...NO_FAULT, mode: 'unavailable', retry_after_seconds: 2 });
    const p = payment();
    try {
      const failure = await failureOf(acquirer.authorize(p.authorize, signal()));
      expect(classifyAcquirerFailure(failure)).toMatchObject({
        errorClass: 'acquirer_unavailable',
        delivery: 'not_sent',
        notBeforeMs: 2_000,
      });
    } finally {
      simulator.faults.set(NO_FAULT);
    }
    expect(await holdOf(p.paymentId)).toBeUndefined();
  });

  it('when the answer to a void is dropped, then the outcome is unknown and the inquiry finds the void done', async () => {
    const p = payment();
    await acquirer.authorize(p.authorize, signal());
    simulator.faults.set({ ...NO_FAULT, mode: 'drop' });
    try {
      const failure = await failureOf(acquirer.void(p.void(), signal()));
      expect(classifyAcquirerFailure(failure).delivery).toBe('unknown');
      expect(await acquirer.inquireVoid(voidIdempotencyKey(p.paymentId), signal())).toMatchObject({
        outcome: 'approved',
      });
    } finally {
      simulator.faults.set(NO_FAULT);
    }
    expect(await holdOf(p.paymentId)).toEqual({ state: 'voided', captured: 0, released: 1_000 });
  });

  it('when the acquirer hangs, then the capture times out with an unknown outcome and the hold is untouched', async () => {
    const p = payment();
    await acquirer.authorize(p.authorize, signal());
    simulator.faults.set({ ...NO_FAULT, mode: 'hang' });
    try {
      const failure = await failureOf(acquirer.capture(p.capture(100), AbortSignal.timeout(200)));
      expect(classifyAcquirerFailure(failure)).toMatchObject({
        errorClass: 'acquirer_timeout',
        delivery: 'unknown',
      });
    } finally {
      simulator.faults.set(NO_FAULT);
    }
    expect(await holdOf(p.paymentId)).toMatchObject({ state: 'held', captured: 0 });
    expect(await acquirer.inquireCapture(captureIdempotencyKey(p.paymentId), signal())).toBeNull();
  });
});
