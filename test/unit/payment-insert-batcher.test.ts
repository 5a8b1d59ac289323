import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { NewPaymentRecord } from '../../src/payments/payment-insert-single.js';
import { createPaymentInsertBatcher } from '../../src/payments/payment-insert-batcher.js';
import type { Queryable } from '../../src/platform/database/db.js';

/**
 * When the batcher writes and with which statement; what each request gets when a batch fails.
 * The database outcomes (one transaction, taken keys, constraint failures, timeouts) are
 * test/integration/payment-insert-batch.test.ts.
 */

const EXPIRES = new Date('2030-01-01T00:00:00Z');

function record(key: string): NewPaymentRecord {
  return {
    merchantId: '00000000-0000-0000-0000-000000000001',
    idempotencyKey: key,
    fingerprint: Buffer.alloc(32),
    ttlSeconds: 60,
    response: { status: 202, body: `{"key":"${key}"}` },
    payment: {
      id: `payment-${key}`,
      amount: 1,
      currency: 'EUR',
      source: 'tok_visa',
      description: null,
      metadata: {},
      createdAt: new Date(0),
    },
    event: { id: `event-${key}`, type: 'payment.created', topic: 't', data: {} },
  };
}

/** A database that records each statement; `fail` makes the batch statement throw it. */
function fakeDb(fail?: Error) {
  const statements: { name: string; rows: number }[] = [];
  const db = {
    query: (config: { name: string; values: unknown[] }) => {
      const ids = config.values[3];
      const rows = Array.isArray(ids) ? ids.length : 1;
      statements.push({ name: config.name, rows });
      if (config.name === 'payments.insert-payment-batch') {
        if (fail) return Promise.reject(fail);
        // The key of the second row is taken: its request gets null.
        const written = (ids as string[]).filter((_, i) => i !== 1);
        return Promise.resolve({
          rows: written.map((id) => ({ payment_id: id, expires_at: EXPIRES })),
        });
      }
      return Promise.resolve({ rows: [{ expires_at: EXPIRES }] });
    },
  };
  return { db: db as unknown as Queryable, statements };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('createPaymentInsertBatcher', () => {
  it('when the batch is full, then it is written at once, in one statement', async () => {
    const { db, statements } = fakeDb();
    const insert = createPaymentInsertBatcher({ db, maxRows: 3, windowMs: 1_000, inFlight: 0 });
    const results = await Promise.all(['a', 'b', 'c'].map((key) => insert(record(key))));
    expect(statements).toEqual([{ name: 'payments.insert-payment-batch', rows: 3 }]);
    expect(results.map((stored) => stored?.paymentId ?? null)).toEqual([
      'payment-a',
      null,
      'payment-c',
    ]);
    expect(results[0]).toMatchObject({ status: 202, body: '{"key":"a"}', expiresAt: EXPIRES });
  });

  it('when the window ends first, then what has arrived is written; a lone request alone', async () => {
    const { db, statements } = fakeDb();
    const insert = createPaymentInsertBatcher({ db, maxRows: 64, windowMs: 5, inFlight: 0 });
    const two = Promise.all([insert(record('a')), insert(record('b'))]);
    await vi.advanceTimersByTimeAsync(4);
    expect(statements).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await two;
    const one = insert(record('c'));
    await vi.advanceTimersByTimeAsync(5);
    expect((await one)?.paymentId).toBe('payment-c');
    expect(statements).toEqual([
      { name: 'payments.insert-payment-batch', rows: 2 },
      { name: 'payments.insert-payment-once', rows: 1 },
    ]);
  });

  it('when a batch fails, then each request is written alone with its own outcome', async () => {
    const { db, statements } = fakeDb(Object.assign(new Error('check'), { code: '23514' }));
    const insert = createPaymentInsertBatcher({ db, maxRows: 2, windowMs: 5, inFlight: 0 });
    const results = await Promise.all([insert(record('a')), insert(record('b'))]);
    expect(results.map((stored) => stored?.paymentId)).toEqual(['payment-a', 'payment-b']);
    expect(statements.map((s) => s.name)).toEqual([
      'payments.insert-payment-batch',
      'payments.insert-payment-once',
      'payments.insert-payment-once',
    ]);
  });

  it('when Postgres is unavailable, then every request of the batch gets that error, no retry', async () => {
    const lost = new Error('Connection terminated unexpectedly');
    const { db, statements } = fakeDb(lost);
    const insert = createPaymentInsertBatcher({ db, maxRows: 2, windowMs: 5, inFlight: 0 });
    const results = await Promise.allSettled([insert(record('a')), insert(record('b'))]);
    expect(results).toEqual([
      { status: 'rejected', reason: lost },
      { status: 'rejected', reason: lost },
    ]);
    expect(statements).toHaveLength(1);
  });

  it('when fewer batches than inFlight are being written, then a request goes at once; else it waits for one to return', async () => {
    const { db, statements } = fakeDb();
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    // The first statement is held until the gate opens.
    const held: Queryable = {
      query: (config: never) =>
        statements.length === 0 ? gate.then(() => db.query(config)) : db.query(config),
    };
    const insert = createPaymentInsertBatcher({
      db: held,
      maxRows: 64,
      windowMs: 1_000,
      inFlight: 1,
    });
    const started = Date.now();
    const first = insert(record('a'));
    await vi.advanceTimersByTimeAsync(0); // the next turn: `a` is sent alone
    const queued = [insert(record('b')), insert(record('c'))];
    await vi.advanceTimersByTimeAsync(0);
    open();
    expect((await first)?.paymentId).toBe('payment-a');
    await vi.advanceTimersByTimeAsync(0); // the turn after the first write returned
    // Sent when the first write returned, not at the end of the window.
    expect((await Promise.all(queued)).map((stored) => stored?.paymentId ?? null)).toEqual([
      'payment-b',
      null,
    ]);
    expect(Date.now()).toBe(started);
    expect(statements).toEqual([
      { name: 'payments.insert-payment-once', rows: 1 },
      { name: 'payments.insert-payment-batch', rows: 2 },
    ]);
  });

  it.each([
    [1, 5],
    [64, 0],
  ])(
    'when max rows is %i and the window %i ms, then batching is off',
    async (maxRows, windowMs) => {
      const { db, statements } = fakeDb();
      const insert = createPaymentInsertBatcher({ db, maxRows, windowMs, inFlight: 2 });
      await Promise.all([insert(record('a')), insert(record('b'))]);
      expect(statements.map((s) => s.name)).toEqual([
        'payments.insert-payment-once',
        'payments.insert-payment-once',
      ]);
    },
  );
});
