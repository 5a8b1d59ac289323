import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizeIdempotencyKey,
  captureIdempotencyKey,
} from '../../src/acquirer/hold-acquirer.js';
import { createHttpAcquirer } from '../../src/acquirer/http-acquirer.js';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { loginUrl, startDeployedFleet, type DeployedFleet } from '../support/deployed-fleet.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { eventually, FAST_SETTLEMENT, settlementFacts } from '../support/settlement-harness.js';

/**
 * Issue 29 item 3: the acquirer as its own process. Every role runs as its own process on its
 * own login; settlement and the refund worker reach the acquirer over HTTP (ACQUIRER_URL), and
 * the settlement login has no grant on the acquirer's books (acquirer_books_own_login(), as
 * deployed), which only the acquirer's login, payments_acquirer, reads and writes. The books
 * must show one charge per payment whatever is killed.
 */

const WAIT_MS = 90_000;
const INSUFFICIENT_PRIVILEGE = '42501';
// Generous attempts: a payment must outlive an acquirer that is down for a while, not go dead.
const PATIENT_SETTLEMENT = {
  SETTLEMENT_MAX_ATTEMPTS: '100',
  SETTLEMENT_BACKOFF_CAP_MS: '300',
  REFUND_MAX_ATTEMPTS: '100',
  REFUND_BACKOFF_CAP_MS: '300',
};
// Calls in flight long enough for a SIGKILL to land in the middle of some.
const SLOW_ACQUIRER = { ACQUIRER_SIM_LATENCY_MS: '100' };

let db: TestDatabase;
let fleet: DeployedFleet;
let apiKey: string;

async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${fleet.apiUrl}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': crypto.randomUUID(),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 202)
    throw new Error(`POST ${path}: ${String(res.status)} ${JSON.stringify(json)}`);
  return json;
}

const pay = async (source: string) =>
  (await post('/payments', { amount: 1000, currency: 'EUR', source })).id as string;

/** Resolves with the payment's facts once its status is final (settled or failed). */
const finalFacts = (id: string) =>
  eventually(
    `payment ${id} final`,
    async () => {
      const facts = await settlementFacts(db, id);
      return ['settled', 'failed'].includes(facts.status) ? facts : undefined;
    },
    WAIT_MS,
  );

/** The Postgres error code of `sql` run as `role`, or 'ok'. */
async function attempt(role: 'acquirer' | 'settlement', sql: string): Promise<string> {
  const client = new pg.Client({ connectionString: loginUrl(db.url, role) });
  await client.connect();
  try {
    await client.query(sql);
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  } finally {
    await client.end();
  }
}

/** The acquirer again on its old port (settlement's ACQUIRER_URL), after a SIGKILL. */
function restartAcquirer(): RoleProcess {
  const proc = startRoleProcess('apps/acquirer/main.js', {
    ...fleet.env,
    ...SLOW_ACQUIRER,
    ACQUIRER_PORT: new URL(fleet.acquirerUrl).port,
    DATABASE_URL: loginUrl(db.url, 'acquirer'),
  });
  fleet.processes.set('acquirer', proc);
  return proc;
}

function restartSettlement(): RoleProcess {
  const proc = startRoleProcess('apps/settlement/main.js', {
    ...fleet.env,
    ...FAST_SETTLEMENT,
    ...PATIENT_SETTLEMENT,
    ACQUIRER_URL: fleet.acquirerUrl,
    DATABASE_URL: loginUrl(db.url, 'settlement'),
  });
  fleet.processes.set('settlement', proc);
  return proc;
}

beforeAll(async () => {
  db = await createTestDatabase();
  // As deployed with the acquirer process: settlement's login loses the books.
  await db.pool.query('CALL acquirer_books_own_login()');
  fleet = await startDeployedFleet(db, ['acquirer', 'api', 'relay', 'settlement'], {
    acquirer: SLOW_ACQUIRER,
    settlement: PATIENT_SETTLEMENT,
  });
  apiKey = (await createMerchant(db.pool, 'Acquirer process merchant')).apiKey;
}, 180_000);
afterAll(async () => {
  const codes = await fleet.stop();
  await db.drop();
  expect(codes).toEqual({ settlement: 0, relay: 0, api: 0, acquirer: 0 });
});

describe('the acquirer as its own process', () => {
  it('when the logins are tried, then only the acquirer login reads its books, and it reads nothing else', async () => {
    expect(await attempt('acquirer', 'SELECT count(*) FROM acquirer_simulator_charges')).toBe('ok');
    expect(await attempt('acquirer', 'SELECT count(*) FROM acquirer_simulator_refunds')).toBe('ok');
    expect(await attempt('acquirer', 'SELECT count(*) FROM payments')).toBe(INSUFFICIENT_PRIVILEGE);
    expect(await attempt('settlement', 'SELECT count(*) FROM acquirer_simulator_charges')).toBe(
      INSUFFICIENT_PRIVILEGE,
    );
    expect(await attempt('settlement', 'SELECT count(*) FROM acquirer_simulator_calls')).toBe(
      INSUFFICIENT_PRIVILEGE,
    );
  });

  it('when a hold is authorized and partly captured through it, then the books on its login have the hold, which settlement cannot read', async () => {
    const acquirer = createHttpAcquirer(fleet.acquirerUrl, { token: fleet.env.ACQUIRER_TOKEN });
    const paymentId = crypto.randomUUID();
    const hold = { paymentId, currency: 'EUR', source: 'tok_visa' };
    const signal = () => AbortSignal.timeout(15_000);
    await expect(
      acquirer.authorize(
        { ...hold, idempotencyKey: authorizeIdempotencyKey(paymentId), amount: 1_000 },
        signal(),
      ),
    ).resolves.toMatchObject({ outcome: 'approved' });
    await expect(
      acquirer.capture(
        { ...hold, idempotencyKey: captureIdempotencyKey(paymentId), amount: 700 },
        signal(),
      ),
    ).resolves.toMatchObject({ outcome: 'approved' });
    const { rows } = await db.pool.query(
      `SELECT state, amount_captured::int AS captured, amount_released::int AS released
         FROM acquirer_simulator_holds WHERE payment_id = $1`,
      [paymentId],
    );
    expect(rows).toEqual([{ state: 'captured', captured: 700, released: 300 }]);
    expect(await attempt('settlement', 'SELECT count(*) FROM acquirer_simulator_holds')).toBe(
      INSUFFICIENT_PRIVILEGE,
    );
  });

  it('when payments settle, fail, retry and are refunded through it, then each is charged once and the refund once', async () => {
    const visa = await pay('tok_visa');
    const decline = await pay('tok_decline');
    const transient = await pay('tok_transient_2');
    expect(await finalFacts(visa)).toMatchObject({
      status: 'settled',
      charges: 1,
      approved_charges: 1,
      result_events: 1,
    });
    expect(await finalFacts(decline)).toMatchObject({
      status: 'failed',
      failure_code: 'card_declined',
      charges: 1,
      approved_charges: 0,
    });
    // Two transient answers over HTTP (503), then the approval: three calls, one charge.
    expect(await finalFacts(transient)).toMatchObject({
      status: 'settled',
      charges: 1,
      approved_charges: 1,
      calls: 3,
    });

    const refund = await post(`/payments/${visa}/refunds`, { amount: 400 });
    const refundId = refund.id as string;
    const done = await eventually(
      `refund ${refundId} final`,
      async () => {
        const { rows } = await db.pool.query<{ status: string }>(
          'SELECT status FROM refunds WHERE id = $1',
          [refundId],
        );
        return rows[0]?.status === 'pending' ? undefined : rows[0];
      },
      WAIT_MS,
    );
    expect(done.status).toBe('succeeded');
    const { rows } = await db.pool.query<{ n: number; amount: string }>(
      `SELECT count(*)::int AS n, sum(amount)::text AS amount
         FROM acquirer_simulator_refunds WHERE refund_id = $1 AND result = 'approved'`,
      [refundId],
    );
    expect(rows[0]).toEqual({ n: 1, amount: '400' });
  });

  it('when the acquirer and then settlement are SIGKILLed mid-run and restarted, then nothing is charged twice and every payment settles', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await pay(i % 2 === 0 ? 'tok_visa' : 'tok_transient_1'));
    // Calls are in flight (100 ms each): the acquirer dies under some of them.
    await eventually('a first charge', async () => {
      const { rows } = await db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM acquirer_simulator_calls WHERE payment_id = ANY($1)',
        [ids],
      );
      return (rows[0]?.n ?? 0) > 0 ? true : undefined;
    });
    expect(await fleet.processes.get('acquirer')?.stop('SIGKILL')).toBeNull();
    for (let i = 0; i < 10; i++) ids.push(await pay(i % 2 === 0 ? 'tok_visa' : 'tok_transient_1'));
    await restartAcquirer().logLine('acquirer ready');

    for (let i = 0; i < 10; i++) ids.push(await pay('tok_visa'));
    await eventually('a charge after the restart', async () => {
      const { rows } = await db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM acquirer_simulator_charges WHERE payment_id = ANY($1)',
        [ids.slice(20)],
      );
      return (rows[0]?.n ?? 0) > 0 ? true : undefined;
    });
    // Settlement dies between a charge and its completion for some payments.
    expect(await fleet.processes.get('settlement')?.stop('SIGKILL')).toBeNull();
    await restartSettlement().logLine('settlement ready');

    for (const id of ids) {
      expect(await finalFacts(id)).toMatchObject({
        status: 'settled',
        charges: 1,
        approved_charges: 1,
        result_events: 1,
        job_state: null,
      });
    }
  }, 240_000);
});
