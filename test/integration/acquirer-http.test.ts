import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcquirerTransientError, classifyAcquirerFailure } from '../../src/acquirer/acquirer.js';
import { NO_FAULT } from '../../src/acquirer/acquirer-faults.js';
import { createHttpAcquirer } from '../../src/acquirer/http-acquirer.js';
import { startSimulatorServer, type SimulatorServer } from '../support/simulator-server.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';

/**
 * The acquirer over HTTP (issue 29): the client sends each charge with its idempotency key, the
 * server answers from the simulator's books, so a repeated key is never charged twice; a
 * transient failure is a 503 and classified as such; a silent acquirer is cut by the caller's
 * timeout.
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

function charge(source: string) {
  const paymentId = randomUUID();
  return { idempotencyKey: `charge_${paymentId}`, paymentId, amount: 100, currency: 'EUR', source };
}

async function charges(key: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ result: string }>(
    'SELECT result FROM acquirer_simulator_charges WHERE idempotency_key = $1',
    [key],
  );
  return rows.map((row) => row.result);
}

const noTimeout = () => AbortSignal.timeout(5_000);

describe('acquirer over HTTP', () => {
  it('when one key is charged five times at once, then it is charged once and every call gets the same answer', async () => {
    const request = charge('tok_visa');
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => acquirer.charge(request, noTimeout())),
    );
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(answers[0]).toMatchObject({ outcome: 'approved' });
    expect(await charges(request.idempotencyKey)).toEqual(['approved']);
  });

  it('when the card is declined, then the answer is a final decline', async () => {
    const request = charge('tok_decline');
    expect(await acquirer.charge(request, noTimeout())).toEqual({
      outcome: 'declined',
      code: 'card_declined',
    });
  });

  it('when the acquirer answers a retryable error (tok_unavailable), then the call fails as transient, answered (not acquirer_unavailable), and nothing is charged', async () => {
    const request = charge('tok_unavailable');
    const failure = await acquirer.charge(request, noTimeout()).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(AcquirerTransientError);
    const classified = classifyAcquirerFailure(failure);
    expect(classified.errorClass).toBe('acquirer_transient');
    expect(classified.delivery).toBeUndefined(); // answered: a counted attempt
    expect(await charges(request.idempotencyKey)).toEqual([]);
  });

  it('when the acquirer stays silent, then the caller timeout ends the call as acquirer_timeout', async () => {
    const request = charge('tok_timeout');
    const failure = await acquirer
      .charge(request, AbortSignal.timeout(200))
      .catch((error: unknown) => error);
    expect(classifyAcquirerFailure(failure).errorClass).toBe('acquirer_timeout');
  });

  it('when nothing listens at the address, then the call fails as transient and not sent', async () => {
    const nowhere = createHttpAcquirer('http://127.0.0.1:1');
    const failure = await nowhere
      .charge(charge('tok_visa'), noTimeout())
      .catch((error: unknown) => error);
    expect(classifyAcquirerFailure(failure)).toMatchObject({
      errorClass: 'acquirer_unavailable',
      delivery: 'not_sent',
    });
  });

  it('when the simulator answers a retryable error, then it is an answer, not an unknown outcome', async () => {
    const failure = await acquirer
      .charge(charge('tok_transient_1'), noTimeout())
      .catch((error: unknown) => error);
    expect(classifyAcquirerFailure(failure).delivery).toBeUndefined();
  });
});

describe('acquirer over HTTP: inquiries and faults (issue 36)', () => {
  const failureOf = (call: Promise<unknown>) =>
    call.then(
      () => {
        throw new Error('the call succeeded');
      },
      (error: unknown) => error,
    );

  it('when a charged key and an unknown key are inquired about, then the books answer the charge and "not found"', async () => {
    const request = charge('tok_visa');
    const answer = await acquirer.charge(request, noTimeout());
    expect(await acquirer.inquireCharge(request.idempotencyKey, noTimeout())).toEqual(answer);
    expect(await acquirer.inquireCharge(`charge_${randomUUID()}`, noTimeout())).toBeNull();
    expect(await acquirer.inquireRefund(`refund_${randomUUID()}`, noTimeout())).toBeNull();
  });

  it('when the acquirer answers 503 before processing, then the call was not sent, its Retry-After is kept, and nothing is charged', async () => {
    simulator.faults.set({ ...NO_FAULT, mode: 'unavailable', retry_after_seconds: 3 });
    try {
      const request = charge('tok_visa');
      const failure = await failureOf(acquirer.charge(request, noTimeout()));
      expect(failure).toMatchObject({ delivery: 'not_sent', retryAfterMs: 3_000 });
      expect(classifyAcquirerFailure(failure)).toMatchObject({
        delivery: 'not_sent',
        notBeforeMs: 3_000,
      });
      expect(await charges(request.idempotencyKey)).toEqual([]);
    } finally {
      simulator.faults.set(NO_FAULT);
    }
  });

  it('when the answer is dropped after the charge, then the caller sees an unknown outcome and the inquiry finds the charge', async () => {
    simulator.faults.set({ ...NO_FAULT, mode: 'drop' });
    const request = charge('tok_visa');
    try {
      const failure = await failureOf(acquirer.charge(request, noTimeout()));
      expect(classifyAcquirerFailure(failure).delivery).toBe('unknown');
      expect(await acquirer.inquireCharge(request.idempotencyKey, noTimeout())).toMatchObject({
        outcome: 'approved',
      });
    } finally {
      simulator.faults.set(NO_FAULT);
    }
    expect(await charges(request.idempotencyKey)).toEqual(['approved']);
  });

  it('when the acquirer hangs, then the timeout leaves the outcome unknown and nothing is charged', async () => {
    simulator.faults.set({ ...NO_FAULT, mode: 'hang' });
    const request = charge('tok_visa');
    try {
      const failure = await failureOf(acquirer.charge(request, AbortSignal.timeout(200)));
      expect(classifyAcquirerFailure(failure)).toMatchObject({
        errorClass: 'acquirer_timeout',
        delivery: 'unknown',
      });
    } finally {
      simulator.faults.set(NO_FAULT);
    }
    expect(await charges(request.idempotencyKey)).toEqual([]);
  });

  it('when the acquirer is slow, then the call waits the latency and is answered', async () => {
    simulator.faults.set({ ...NO_FAULT, mode: 'slow', latency_ms: 300 });
    try {
      const started = Date.now();
      await expect(acquirer.charge(charge('tok_visa'), noTimeout())).resolves.toMatchObject({
        outcome: 'approved',
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    } finally {
      simulator.faults.set(NO_FAULT);
    }
  });
});
