import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextJobDueAt } from '../../src/jobs/job-store.js';
import { SETTLEMENT_JOBS } from '../../src/jobs/job-table.js';
import { claimDueJobs } from '../../src/settlement/settlement-job-store.js';

const nextDueAt = (db: Parameters<typeof nextJobDueAt>[0]) => nextJobDueAt(db, SETTLEMENT_JOBS);
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { createSettlementHarness, type SettlementHarness } from '../support/settlement-harness.js';

/**
 * The worker's claim and its "when is the next job due", on the claimable-time index
 * (migration 0018): a job is claimable once it is due and its lease, if any, has ended. No
 * settlement process runs here; jobs are written directly, with times relative to the
 * database's clock.
 */

let db: TestDatabase;
let harness: SettlementHarness;

beforeAll(async () => {
  db = await createTestDatabase();
  harness = await createSettlementHarness(db, {}, 1);
});
afterAll(async () => {
  await harness.close();
  await db.drop();
});

/** A pending job due `dueInSeconds` from now, leased until `leasedForSeconds` from now. */
async function job(dueInSeconds: number, leasedForSeconds: number | null): Promise<string> {
  const paymentId = await harness.createPayment();
  await db.pool.query(
    `INSERT INTO settlement_jobs (payment_id, event_id, next_attempt_at, locked_until,
                                  source_topic, source_partition, source_offset, message_value)
     VALUES ($1, gen_random_uuid(), now() + make_interval(secs => $2),
             now() + make_interval(secs => $3), 'payments', 0, '0', '{}')`,
    [paymentId, dueInSeconds, leasedForSeconds],
  );
  return paymentId;
}

async function secondsFromNow(at: Date | null): Promise<number | null> {
  if (at === null) return null;
  const { rows } = await db.pool.query<{ s: number }>(
    'SELECT extract(epoch FROM $1::timestamptz - now())::float8 AS s',
    [at],
  );
  return rows[0]?.s ?? null;
}

describe('settlement job claims', () => {
  it('when jobs are leased, not yet due, or free, then a claim takes only the free ones, soonest claimable first, and next-due names the earliest lease or due time', async () => {
    await db.pool.query('DELETE FROM settlement_jobs');
    const leased = await Promise.all(Array.from({ length: 20 }, () => job(-5, 60)));
    const later = await job(30, null);
    const leaseEnded = await job(-10, -2);
    const due = await job(-5, null);

    const claimed = await claimDueJobs(db.login('settlement'), 10, 60_000, 5);

    // Claimable 5 s ago (due, never leased) comes before claimable 2 s ago (due 10 s ago, but
    // leased until 2 s ago).
    expect(claimed.map((c) => c.paymentId)).toEqual([due, leaseEnded]);
    expect(claimed.map((c) => c.attempts)).toEqual([1, 1]);
    expect(await claimDueJobs(db.login('settlement'), 10, 60_000, 5)).toEqual([]);
    const claimedIds = new Set(claimed.map((c) => c.paymentId));
    expect(leased.some((id) => claimedIds.has(id))).toBe(false);
    expect(claimedIds.has(later)).toBe(false);

    // Everything pending is leased (60 s) or due in 30 s: the next claimable moment is in ~30 s.
    const next = await secondsFromNow(await nextDueAt(db.login('settlement')));
    expect(next).toBeGreaterThan(25);
    expect(next).toBeLessThanOrEqual(30);
  });

  it('when no job is pending, then next-due is null; a dead job is never claimed', async () => {
    await db.pool.query('DELETE FROM settlement_jobs');
    expect(await nextDueAt(db.login('settlement'))).toBeNull();
    const dead = await job(-5, null);
    await db.pool.query(`UPDATE settlement_jobs SET state = 'dead' WHERE payment_id = $1`, [dead]);
    expect(await claimDueJobs(db.login('settlement'), 10, 60_000, 5)).toEqual([]);
    expect(await nextDueAt(db.login('settlement'))).toBeNull();
  });
});
