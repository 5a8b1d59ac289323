import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  createSettlementHarness,
  settled,
  settlementFacts,
  type SettlementHarness,
} from '../support/settlement-harness.js';

/** A slow acquirer call occupies one slot of the worker, not the whole batch. */

let db: TestDatabase;
let harness: SettlementHarness;

beforeAll(async () => {
  db = await createTestDatabase();
  harness = await createSettlementHarness(db, {
    SETTLEMENT_CONCURRENCY: '2',
    ACQUIRER_TIMEOUT_MS: '5000',
    // The lease outlasts the slow call (checked at boot), so no other slot re-claims its job.
    SETTLEMENT_LEASE_MS: '10000',
    // The role's refund worker shares the acquirer timeout: its lease is checked at boot too.
    REFUND_LEASE_MS: '10000',
  });
  await harness.start();
});
afterAll(async () => {
  await harness.close();
  await db.drop();
});

describe('settlement worker slots', () => {
  it('when one call hangs until its timeout, then the payments behind it settle meanwhile', async () => {
    const slow = await harness.createPayment('tok_timeout');
    const fast = await Promise.all(Array.from({ length: 6 }, () => harness.createPayment()));
    await harness.produce([await harness.createdRecord(slow)]);
    await harness.produce(await Promise.all(fast.map((id) => harness.createdRecord(id))));
    for (const id of fast) await settled(db, id, 'settled', 10_000);
    // All settled while the slow call is still waiting for its 5 s timeout: no failure has been
    // recorded for it yet, so the other slot kept claiming instead of waiting for the batch.
    const { rows } = await db.pool.query<{ attempts: number; last_error_class: string | null }>(
      'SELECT attempts, last_error_class FROM settlement_jobs WHERE payment_id = $1',
      [slow],
    );
    expect(rows).toEqual([{ attempts: 1, last_error_class: null }]);
    expect(await settlementFacts(db, slow)).toMatchObject({ status: 'processing', calls: 1 });
  });
});
