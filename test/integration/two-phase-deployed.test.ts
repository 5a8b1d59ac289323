import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { startDeployedFleet, type DeployedFleet } from '../support/deployed-fleet.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { eventually } from '../support/settlement-harness.js';

/**
 * Issue 40's walkthroughs as deployed: the acquirer, API, relay and settlement each their own
 * process on its own login, settlement calling the acquirer role's holds over HTTP. Each ends
 * with the acquirer's own books (its tables, read by the test as the owner): one hold, one
 * capture or one void, and the amounts.
 */
const WAIT_MS = 90_000;
/** Long enough to capture or cancel in, short enough for the expiry test to watch it pass. */
const WINDOW_SECONDS = 20;

let db: TestDatabase;
let fleet: DeployedFleet;
let apiKey: string;

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${fleet.apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${apiKey}`,
      ...(body === undefined
        ? {}
        : { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(15_000),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** A manual payment of 1000 EUR, once it is authorized (requires_capture). */
async function authorized(source = 'tok_visa'): Promise<string> {
  const created = await call('POST', '/payments', {
    amount: 1000,
    currency: 'EUR',
    source,
    capture_method: 'manual',
  });
  expect(created.status).toBe(202);
  const id = created.json.id as string;
  await statusBecomes(id, 'requires_capture');
  return id;
}

function statusBecomes(id: string, status: string) {
  return eventually(
    `payment ${id} ${status}`,
    async () => {
      const { json } = await call('GET', `/payments/${id}`);
      return json.status === status ? json : undefined;
    },
    WAIT_MS,
  );
}

async function books(id: string) {
  const hold = await db.pool.query<{
    amount_authorized: string;
    amount_captured: string;
    amount_released: string;
    state: string;
  }>(
    `SELECT amount_authorized, amount_captured, amount_released, state
       FROM acquirer_simulator_holds WHERE payment_id = $1`,
    [id],
  );
  const operations = await db.pool.query<{ operation: string; result: string }>(
    `SELECT operation, result FROM acquirer_simulator_hold_operations
      WHERE payment_id = $1 ORDER BY created_at`,
    [id],
  );
  return {
    holds: hold.rows.map((row) => ({
      authorized: Number(row.amount_authorized),
      captured: Number(row.amount_captured),
      released: Number(row.amount_released),
      state: row.state,
    })),
    operations: operations.rows.map((row) => `${row.operation} ${row.result}`),
  };
}

beforeAll(async () => {
  db = await createTestDatabase();
  // As deployed with the acquirer process: its books are its login's alone.
  await db.pool.query('CALL acquirer_books_own_login()');
  fleet = await startDeployedFleet(db, ['acquirer', 'api', 'relay', 'settlement'], {
    settlement: { AUTHORIZATION_WINDOW_SECONDS: String(WINDOW_SECONDS) },
  });
  apiKey = (await createMerchant(db.pool, 'Two-phase merchant')).apiKey;
}, 180_000);
afterAll(async () => {
  const codes = await fleet.stop();
  await db.drop();
  expect(codes).toEqual({ settlement: 0, relay: 0, api: 0, acquirer: 0 });
});

describe('two-phase payments, deployed', () => {
  it('when authorized, partly captured and partly refunded, then the books hold one authorization and one capture, and the refund is within the captured amount', async () => {
    const id = await authorized();
    expect((await call('POST', `/payments/${id}/capture`, { amount_to_capture: 600 })).status).toBe(
      202,
    );
    const settled = await statusBecomes(id, 'settled');
    expect(settled).toMatchObject({ amount: 1000, amount_captured: 600 });

    const beyond = await call('POST', `/payments/${id}/refunds`, { amount: 700 });
    expect(beyond.status).toBe(422);
    const refund = await call('POST', `/payments/${id}/refunds`, { amount: 200 });
    expect(refund.status).toBe(202);
    await eventually(
      'refund succeeded',
      async () => {
        const { rows } = await db.pool.query<{ status: string }>(
          'SELECT status FROM refunds WHERE id = $1',
          [refund.json.id],
        );
        return rows[0]?.status === 'succeeded' ? true : undefined;
      },
      WAIT_MS,
    );

    expect(await books(id)).toEqual({
      holds: [{ authorized: 1000, captured: 600, released: 400, state: 'captured' }],
      operations: ['authorize approved', 'capture approved'],
    });
  });

  it('when authorized and canceled, then the books hold one authorization and one void, all released', async () => {
    const id = await authorized();
    const canceled = await call('POST', `/payments/${id}/cancel`, {
      cancellation_reason: 'requested_by_customer',
    });
    expect(canceled.status).toBe(202);
    expect(await statusBecomes(id, 'canceled')).toMatchObject({
      cancellation_reason: 'requested_by_customer',
    });
    expect((await call('POST', `/payments/${id}/capture`, {})).json).toMatchObject({
      code: 'payment_already_canceled',
    });

    expect(await books(id)).toEqual({
      holds: [{ authorized: 1000, captured: 0, released: 1000, state: 'voided' }],
      operations: ['authorize approved', 'void approved'],
    });
  });

  it('when nobody decides within the window, then the hold is voided and the payment canceled as expired', async () => {
    const id = await authorized();
    const expired = await statusBecomes(id, 'canceled');
    expect(expired).toMatchObject({ cancellation_reason: 'expired' });
    expect(Date.parse(expired.canceled_at as string)).toBeGreaterThanOrEqual(
      Date.parse(expired.capture_before as string),
    );

    expect(await books(id)).toEqual({
      holds: [{ authorized: 1000, captured: 0, released: 1000, state: 'voided' }],
      operations: ['authorize approved', 'void approved'],
    });
  });
});
