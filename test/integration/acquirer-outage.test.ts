import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { startDeployedFleet, type DeployedFleet } from '../support/deployed-fleet.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { eventually } from '../support/settlement-harness.js';

/**
 * Issue 36: an acquirer outage never dead-letters a payment. Every role is its own process;
 * the acquirer's faults are set on its internal listener (PUT /acquirer/fault). Settlement keeps
 * the tests' attempt guard of 5 (FAST_SETTLEMENT), so a call that never reached the acquirer
 * counting as an attempt, or an unknown outcome re-sent instead of asked about, would show as
 * dead letters or second charges here.
 */

/** Issue 36's Done-when: the acquirer down 2 minutes while 5,000 payments (and refunds) arrive. */
const OUTAGE_MS = 120_000;
const PAYMENTS_BEFORE = 500;
const PAYMENTS_DURING = 5_000;
/** Every payment and refund final within 60 s of the acquirer's return. */
const RECOVERY_MS = 60_000;
/** Issue 36: every answer dropped after the charge for 20 s. */
const DROP_MS = 20_000;

let db: TestDatabase;
let fleet: DeployedFleet;
let apiKey: string;
let acquirerAdmin: string;
let settlementMetrics: string;

async function post(path: string, body: unknown): Promise<string> {
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
  const json = (await res.json()) as { id: string };
  if (res.status !== 202) throw new Error(`POST ${path}: ${String(res.status)}`);
  return json.id;
}

/** `count` payments (tok_visa), posted 10 at a time. */
async function pay(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 10) {
    const batch = Array.from({ length: Math.min(10, count - i) }, () =>
      post('/payments', { amount: 1_000, currency: 'EUR', source: 'tok_visa' }),
    );
    ids.push(...(await Promise.all(batch)));
  }
  return ids;
}

async function refund(paymentIds: readonly string[]): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < paymentIds.length; i += 10) {
    const batch = paymentIds
      .slice(i, i + 10)
      .map((id) => post(`/payments/${id}/refunds`, { amount: 300 }));
    ids.push(...(await Promise.all(batch)));
  }
  return ids;
}

async function setFault(fault: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${acquirerAdmin}/acquirer/fault`, {
    method: 'PUT',
    body: JSON.stringify(fault),
  });
  expect(res.status).toBe(200);
}

/** Waits until none of `payments` and `refunds` is pending or processing any more. */
async function allFinal(
  payments: readonly string[],
  refunds: readonly string[],
  timeoutMs: number,
) {
  await eventually(
    'every payment and refund final',
    async () => {
      const { rows } = await db.pool.query<{ open: number }>(
        `SELECT (SELECT count(*) FROM payments WHERE id = ANY($1) AND status NOT IN ('settled', 'failed'))
              + (SELECT count(*) FROM refunds WHERE id = ANY($2) AND status = 'pending') AS open`,
        [payments, refunds],
      );
      return Number(rows[0]?.open) === 0 ? true : undefined;
    },
    timeoutMs,
  );
}

/** What the books and our tables say about `payments` and `refunds` once final. */
async function ledger(payments: readonly string[], refunds: readonly string[]) {
  const { rows } = await db.pool.query<Record<string, number>>(
    `SELECT
       (SELECT count(*)::int FROM payments WHERE id = ANY($1) AND status = 'settled') AS settled,
       (SELECT count(*)::int FROM acquirer_simulator_calls
         WHERE payment_id = ANY($1) AND result = 'approved' AND NOT replayed) AS first_charges,
       (SELECT count(DISTINCT payment_id)::int FROM acquirer_simulator_charges
         WHERE payment_id = ANY($1) AND result = 'approved') AS charged_payments,
       (SELECT count(*)::int FROM refunds WHERE id = ANY($2) AND status = 'succeeded') AS refunded,
       (SELECT count(*)::int FROM acquirer_simulator_refund_calls
         WHERE refund_id = ANY($2) AND result = 'approved' AND NOT replayed) AS first_refunds,
       (SELECT count(*)::int FROM dead_letters) AS dead_letters,
       (SELECT count(*)::int FROM settlement_jobs WHERE state = 'dead')
         + (SELECT count(*)::int FROM refund_jobs WHERE state = 'dead') AS dead_jobs`,
    [payments, refunds],
  );
  return rows[0];
}

/** A counter's value on settlement's /metrics (0 when absent). */
async function metric(name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${settlementMetrics}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query('CALL acquirer_books_own_login()');
  fleet = await startDeployedFleet(db, ['acquirer', 'api', 'relay', 'settlement'], {
    settlement: { ACQUIRER_BREAKER_OPEN_MS: '1000' },
  });
  const port = async (role: 'acquirer' | 'settlement') =>
    String((await fleet.processes.get(role)?.logLine('internal listener ready'))?.port);
  acquirerAdmin = `http://127.0.0.1:${await port('acquirer')}`;
  settlementMetrics = `http://127.0.0.1:${await port('settlement')}`;
  // 5,000 payments in two minutes measure the outage, not the rate limit: the widest tier.
  await defineTier(db.pool, BENCH_TIER);
  apiKey = (await createMerchant(db.pool, 'Acquirer outage merchant', BENCH_TIER.name)).apiKey;
}, 180_000);
afterAll(async () => {
  const codes = await fleet.stop();
  await db.drop();
  expect(codes).toEqual({ settlement: 0, relay: 0, api: 0, acquirer: 0 });
});

describe('an acquirer outage', () => {
  it(`when the acquirer is down for ${String(OUTAGE_MS / 1000)} s while ${String(PAYMENTS_DURING)} payments and ${String(PAYMENTS_BEFORE)} refunds arrive, then nothing is dead-lettered, the breaker opens and closes, and each settles within ${String(RECOVERY_MS / 1000)} s of its return by its one charge`, async () => {
    const before = await pay(PAYMENTS_BEFORE);
    await allFinal(before, [], 120_000);
    const settlement = fleet.processes.get('settlement');
    await setFault({ mode: 'down' });
    const downAt = Date.now();
    const during = await pay(PAYMENTS_DURING);
    const refunds = await refund(before);
    await settlement?.logLine(
      'acquirer breaker opened: no charge or refund is claimed until a probe succeeds',
    );
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM acquirer_simulator_calls WHERE payment_id = ANY($1)`,
      [during],
    );
    expect(rows[0]?.n).toBe(0);
    await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - downAt))));
    await setFault({ mode: 'none' });
    const upAt = Date.now();

    await allFinal([...before, ...during], refunds, RECOVERY_MS);
    const recoveryMs = Date.now() - upAt;
    process.stdout.write(`acquirer outage: all final ${String(recoveryMs)} ms after its return\n`);
    expect(recoveryMs).toBeLessThan(RECOVERY_MS);
    await settlement?.logLine('acquirer breaker closed');
    const all = PAYMENTS_BEFORE + PAYMENTS_DURING;
    expect(await ledger([...before, ...during], refunds)).toEqual({
      settled: all,
      first_charges: all,
      charged_payments: all,
      refunded: PAYMENTS_BEFORE,
      first_refunds: PAYMENTS_BEFORE,
      dead_letters: 0,
      dead_jobs: 0,
    });
  }, 600_000);

  it(`when every answer is dropped after the charge for ${String(DROP_MS / 1000)} s, then no payment or refund is done twice, none is dead-lettered, and each is resolved through an inquiry`, async () => {
    const settledBefore = await pay(40);
    await allFinal(settledBefore, [], RECOVERY_MS);
    const foundBefore = await metric('acquirer_inquiries_total', 'kind="charge",result="found"');
    await setFault({ mode: 'drop', duration_ms: DROP_MS });
    const dropAt = Date.now();
    const payments = await pay(80);
    const refunds = await refund(settledBefore);
    // Everything above was sent while answers were dropped; the rest of the window passes too.
    expect(Date.now() - dropAt).toBeLessThan(DROP_MS);
    await allFinal(payments, refunds, 90_000);
    expect(await ledger(payments, refunds)).toEqual({
      settled: 80,
      first_charges: 80,
      charged_payments: 80,
      refunded: 40,
      first_refunds: 40,
      dead_letters: 0,
      dead_jobs: 0,
    });
    const found = await metric('acquirer_inquiries_total', 'kind="charge",result="found"');
    expect(found - foundBefore).toBeGreaterThanOrEqual(1);
    expect(
      await metric('acquirer_inquiries_total', 'kind="refund",result="found"'),
    ).toBeGreaterThanOrEqual(1);
  }, 240_000);
});
