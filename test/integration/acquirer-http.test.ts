import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcquirerTransientError, classifyAcquirerFailure } from '../../src/acquirer/acquirer.js';
import { createAcquirerServer } from '../../src/acquirer/acquirer-http-server.js';
import { createAcquirerSimulator } from '../../src/acquirer/acquirer-simulator.js';
import { createHttpAcquirer } from '../../src/acquirer/http-acquirer.js';
import { createRefundSimulator } from '../../src/acquirer/refund-simulator.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';

/**
 * The acquirer over HTTP (issue 29): the client sends each charge with its idempotency key, the
 * server answers from the simulator's books, so a repeated key is never charged twice; a
 * transient failure is a 503 and classified as such; a silent acquirer is cut by the caller's
 * timeout.
 */

let db: TestDatabase;
let server: Server;
let acquirer: ReturnType<typeof createHttpAcquirer>;

beforeAll(async () => {
  db = await createTestDatabase();
  const pool = db.login('acquirer');
  server = createAcquirerServer({
    charges: createAcquirerSimulator(pool, {
      latencyMs: 0,
      transientFailureRate: 0,
      timeoutTokenDelayMs: 5_000,
    }),
    refunds: createRefundSimulator(pool),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  acquirer = createHttpAcquirer(`http://127.0.0.1:${String(port)}`);
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
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

  it('when the acquirer is unavailable, then the call fails as transient and nothing is charged', async () => {
    const request = charge('tok_unavailable');
    const failure = await acquirer.charge(request, noTimeout()).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(AcquirerTransientError);
    expect(classifyAcquirerFailure(failure).errorClass).toBe('acquirer_unavailable');
    expect(await charges(request.idempotencyKey)).toEqual([]);
  });

  it('when the acquirer stays silent, then the caller timeout ends the call as acquirer_timeout', async () => {
    const request = charge('tok_timeout');
    const failure = await acquirer
      .charge(request, AbortSignal.timeout(200))
      .catch((error: unknown) => error);
    expect(classifyAcquirerFailure(failure).errorClass).toBe('acquirer_timeout');
  });

  it('when nothing listens at the address, then the call fails as transient', async () => {
    const nowhere = createHttpAcquirer('http://127.0.0.1:1');
    const failure = await nowhere
      .charge(charge('tok_visa'), noTimeout())
      .catch((error: unknown) => error);
    expect(classifyAcquirerFailure(failure).errorClass).toBe('acquirer_unavailable');
  });
});
