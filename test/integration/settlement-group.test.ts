import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Acquirer } from '../../src/acquirer/acquirer.js';
import { createAcquirerSimulator } from '../../src/acquirer/acquirer-simulator.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  createSettlementHarness,
  eventually,
  type SettlementHarness,
} from '../support/settlement-harness.js';

const PAYMENTS = 2_000;

let db: TestDatabase;
let harness: SettlementHarness;

beforeAll(async () => {
  db = await createTestDatabase();
  harness = await createSettlementHarness(db, {}, 3);
});
afterAll(async () => {
  await harness.close();
  await db.drop();
});

/** The simulator, counting the calls this instance made. */
function countingAcquirer(): Acquirer & { calls: number } {
  const simulator = createAcquirerSimulator(db.login('settlement'), {
    latencyMs: 0,
    transientFailureRate: 0,
    timeoutTokenDelayMs: 1_000,
  });
  const counting = {
    calls: 0,
    charge: (...args: Parameters<Acquirer['charge']>) => {
      counting.calls++;
      return simulator.charge(...args);
    },
  };
  return counting;
}

describe('two settlement consumers in one group on a 3-partition topic', () => {
  it(`when ${PAYMENTS} payments are delivered (each twice), then each is charged once and settled once`, async () => {
    const a = countingAcquirer();
    const b = countingAcquirer();
    await harness.start({ acquirer: a });
    await harness.start({ acquirer: b });

    const ids: string[] = [];
    for (let i = 0; i < PAYMENTS; i++) ids.push(await harness.createPayment());
    const records = await Promise.all(ids.map((id) => harness.createdRecord(id)));
    for (let i = 0; i < records.length; i += 500) {
      const batch = records.slice(i, i + 500);
      await harness.produce([...batch, ...batch]); // every event delivered twice
    }

    await eventually(
      `${PAYMENTS} payments settled`,
      async () => {
        const { rows } = await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM payments WHERE status = 'settled'`,
        );
        return rows[0]?.n === PAYMENTS ? true : undefined;
      },
      120_000,
    );

    const { rows } = await db.pool.query<{
      charged_once: number;
      charged_more: number;
      results: number;
      processed: number;
      jobs: number;
    }>(
      `SELECT (SELECT count(*)::int FROM (SELECT payment_id FROM acquirer_simulator_charges
                GROUP BY payment_id HAVING count(*) = 1) c) AS charged_once,
              (SELECT count(*)::int FROM (SELECT payment_id FROM acquirer_simulator_charges
                GROUP BY payment_id HAVING count(*) > 1) c) AS charged_more,
              (SELECT count(*)::int FROM outbox WHERE event_type = 'payment.settled') AS results,
              (SELECT count(*)::int FROM processed_events) AS processed,
              (SELECT count(*)::int FROM settlement_jobs) AS jobs`,
    );
    expect(rows[0]).toEqual({
      charged_once: PAYMENTS,
      charged_more: 0,
      results: PAYMENTS,
      processed: PAYMENTS,
      jobs: 0,
    });
    // Both consumers did real work.
    expect(a.calls).toBeGreaterThan(0);
    expect(b.calls).toBeGreaterThan(0);
    expect(a.calls + b.calls).toBeGreaterThanOrEqual(PAYMENTS);
  });
});
