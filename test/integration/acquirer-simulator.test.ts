import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAcquirerSimulator } from '../../src/acquirer/acquirer-simulator.js';
import type { ChargeRequest } from '../../src/acquirer/acquirer.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';

/** The simulator's own guarantee: one charge per idempotency key, whatever the calls race. */

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

function request(source: string): ChargeRequest {
  const paymentId = randomUUID();
  return { idempotencyKey: `charge:${paymentId}`, paymentId, amount: 100, currency: 'EUR', source };
}

async function books(key: string) {
  const charges = await db.pool.query<{ result: string }>(
    'SELECT result FROM acquirer_simulator_charges WHERE idempotency_key = $1',
    [key],
  );
  const calls = await db.pool.query<{ result: string; replayed: boolean }>(
    'SELECT result, replayed FROM acquirer_simulator_calls WHERE idempotency_key = $1 ORDER BY id',
    [key],
  );
  return { charges: charges.rows.map((r) => r.result), calls: calls.rows };
}

// The simulator runs on settlement's login in-process (ACQUIRER_URL unset) and on its own
// login as the acquirer role (deployed): every case runs on both.
describe.each(['settlement', 'acquirer'] as const)(
  'acquirer simulator on the %s login',
  (login) => {
    const options = { latencyMs: 0, transientFailureRate: 0, timeoutTokenDelayMs: 1_000 };

    it.each(['tok_visa', 'tok_decline'])(
      'when 20 calls for one key (%s) race, then it is charged once and every call gets the same answer',
      async (source) => {
        const simulator = createAcquirerSimulator(db.login(login), options);
        const charge = request(source);
        const answers = await Promise.all(
          Array.from({ length: 20 }, () => simulator.charge(charge, new AbortController().signal)),
        );
        expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
        expect(answers[0]?.outcome).toBe(source === 'tok_visa' ? 'approved' : 'declined');
        const { charges, calls } = await books(charge.idempotencyKey);
        expect(charges).toHaveLength(1);
        expect(calls).toHaveLength(20);
        expect(calls.filter((c) => !c.replayed)).toHaveLength(1);
      },
    );

    it('when 30 keys are charged in one turn, twice each, then each is charged once with its own answer and the second call replays it', async () => {
      const simulator = createAcquirerSimulator(db.login(login), options);
      const charges = Array.from({ length: 30 }, (_, i) =>
        request(i % 3 === 0 ? 'tok_decline' : 'tok_visa'),
      );
      const signal = new AbortController().signal;
      const answers = await Promise.all(
        [...charges, ...charges].map((charge) => simulator.charge(charge, signal)),
      );
      const references = new Set<string>();
      for (const [i, charge] of charges.entries()) {
        const [first, second] = [answers[i], answers[i + charges.length]];
        expect(second).toEqual(first);
        expect(first?.outcome).toBe(charge.source === 'tok_visa' ? 'approved' : 'declined');
        if (first?.outcome === 'approved') references.add(first.reference);
        const booked = await books(charge.idempotencyKey);
        expect(booked.charges).toHaveLength(1);
        expect(booked.calls.map((c) => c.replayed)).toEqual([false, true]);
      }
      expect(references.size).toBe(20);
    });

    it('when the failure rate strikes a charged key, then the call is a replay of the charge, not a failure', async () => {
      const charge = request('tok_visa');
      const first = await createAcquirerSimulator(db.login(login), options).charge(
        charge,
        new AbortController().signal,
      );
      const alwaysFailing = createAcquirerSimulator(db.login(login), {
        ...options,
        transientFailureRate: 1,
      });
      await expect(alwaysFailing.charge(charge, new AbortController().signal)).resolves.toEqual(
        first,
      );
      const fresh = request('tok_visa');
      await expect(alwaysFailing.charge(fresh, new AbortController().signal)).rejects.toThrow(
        /transient error/,
      );
      expect((await books(fresh.idempotencyKey)).calls).toEqual([
        { result: 'transient', replayed: false },
      ]);
    });

    it('when tok_transient_2 is called three times, then it fails twice and is charged on the third', async () => {
      const simulator = createAcquirerSimulator(db.login(login), options);
      const charge = request('tok_transient_2');
      const signal = new AbortController().signal;
      await expect(simulator.charge(charge, signal)).rejects.toThrow();
      await expect(simulator.charge(charge, signal)).rejects.toThrow();
      await expect(simulator.charge(charge, signal)).resolves.toMatchObject({
        outcome: 'approved',
      });
      expect((await books(charge.idempotencyKey)).charges).toEqual(['approved']);
    });
  },
);
