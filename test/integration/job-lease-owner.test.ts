import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRefundSimulator } from '../../src/acquirer/refund-simulator.js';
import { metricsRegistry } from '../../src/platform/telemetry/metrics.js';
import type { ClaimedRefundJob } from '../../src/refunds/refund-job-store.js';
import { createRefundWorker } from '../../src/refunds/refund-worker.js';
import type { SettlementJob } from '../../src/settlement/settlement-job-store.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postRefund, settledPayment } from '../support/refund-client.js';
import {
  createSettlementHarness,
  eventually,
  settlementFacts,
  type SettlementHarness,
} from '../support/settlement-harness.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * A worker whose lease ran out writes nothing on the job (issue 25, defect 3): worker A claims a
 * job and pauses after the acquirer answered; its lease ends (fast-forwarded here) and worker B
 * claims the job; then A's late write (retry, failure, dead, completion) must leave the row as
 * B has it (attempts not inflated, B's lease and owner token intact) and be counted as a lost
 * lease. The code under test runs as the settlement login; the owner pool only sets up and looks.
 */

type Write = 'retry' | 'failure' | 'dead' | 'complete';

let db: TestDatabase;
let api: TestApi;
let apiKey: string;
let harness: SettlementHarness | undefined;
const releases: (() => void)[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  ({ apiKey } = await api.merchant());
});
afterEach(async () => {
  for (const release of releases.splice(0)) release();
  await harness?.close();
  harness = undefined;
});
afterAll(async () => {
  await api.close();
  await db.drop();
});

async function leasesLost(kind: 'settlement' | 'refund'): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric('jobs_lease_lost_total')?.get();
  return metric?.values.find((v) => v.labels.kind === kind)?.value ?? 0;
}

/** A promise the test resolves, and the resolver (also run after each test, so nothing hangs). */
function gate(): { opened: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  releases.push(open);
  return { opened, open };
}

/** Reports the first value it is given, once. */
function signal<T>(): { reached: Promise<T>; reach: (value: T) => void } {
  let reach: (value: T) => void = () => undefined;
  const reached = new Promise<T>((resolve) => {
    reach = resolve;
  });
  return { reached, reach };
}

/** The job's row as a later write would change it. */
async function row(table: 'settlement_jobs' | 'refund_jobs', id: string) {
  const key = table === 'settlement_jobs' ? 'payment_id' : 'refund_id';
  const { rows } = await db.pool.query<Record<string, unknown>>(
    `SELECT state, attempts, next_attempt_at, locked_until, lease_owner, first_failure_at,
            last_failure_at, last_error_class, last_error
       FROM ${table} WHERE ${key} = $1`,
    [id],
  );
  return rows[0];
}

/**
 * Waits until A's late write is done: counted as a lost lease or, if it was applied, visible in
 * the row. Returns the row then.
 */
async function afterLateWrite(
  kind: 'settlement' | 'refund',
  lostBefore: number,
  before: Record<string, unknown> | undefined,
  current: () => Promise<Record<string, unknown> | undefined>,
) {
  return eventually('worker A done with its late write', async () => {
    const now = await current();
    const lost = await leasesLost(kind);
    return lost > lostBefore || JSON.stringify(now) !== JSON.stringify(before)
      ? { now, lost: lost - lostBefore }
      : undefined;
  });
}

describe('settlement: writes after a lost lease', () => {
  const SOURCE: Record<Write, string> = {
    retry: 'tok_unavailable', // transient: A schedules a retry
    failure: 'tok_visa', // A's step fails after the charge: A records the failure
    dead: 'tok_unavailable', // A's only attempt fails: A dead-letters
    complete: 'tok_visa', // approved: A completes
  };

  it.each<Write>(['retry', 'failure', 'dead', 'complete'])(
    "when worker A's lease ran out and worker B claimed the job, then A's late %s write changes nothing and counts as a lost lease",
    async (write) => {
      // Long leases (only A's is ended, by the test); two slots, so the same process has a free
      // one to claim the job as B; a single attempt for the dead case.
      const h = await createSettlementHarness(
        db,
        {
          SETTLEMENT_LEASE_MS: '60000',
          SETTLEMENT_CONCURRENCY: '2',
          SETTLEMENT_MAX_ATTEMPTS: write === 'dead' ? '1' : '5',
        },
        1,
      );
      harness = h;
      const aPaused = signal<SettlementJob>();
      const bPaused = signal<SettlementJob>();
      const releaseA = gate();
      const releaseB = gate();
      let paymentId = '';
      await h.start({
        afterCharge: async (job) => {
          if (job.paymentId !== paymentId) return;
          if (job.attempts === 1) {
            aPaused.reach(job);
            await releaseA.opened;
            if (write === 'failure') throw new Error('the completion step failed');
          } else {
            bPaused.reach(job);
            await releaseB.opened;
          }
        },
      });
      paymentId = await h.createPayment(SOURCE[write]);
      await h.produce([await h.createdRecord(paymentId)]);

      const a = await aPaused.reached;
      await db.pool.query('UPDATE settlement_jobs SET locked_until = now() WHERE payment_id = $1', [
        paymentId,
      ]);
      if (write === 'dead') {
        // B's claim finds the attempts used up: it dead-letters without calling the acquirer.
        await eventually('B dead-lettered the job', async () =>
          (await row('settlement_jobs', paymentId))?.state === 'dead' ? true : undefined,
        );
      } else {
        const b = await bPaused.reached;
        expect(b.attempts).toBe(2);
      }
      const before = await row('settlement_jobs', paymentId);
      const lostBefore = await leasesLost('settlement');

      releaseA.open();
      const { now, lost } = await afterLateWrite('settlement', lostBefore, before, () =>
        row('settlement_jobs', paymentId),
      );

      expect(now).toEqual(before);
      expect(lost).toBe(1);
      if (write === 'dead') {
        expect(now).toMatchObject({ state: 'dead', attempts: 1, lease_owner: null });
      } else {
        expect(now).toMatchObject({ state: 'pending', attempts: 2, last_error_class: null });
        expect(now?.lease_owner).not.toBe(a.leaseOwner);
        expect(now?.lease_owner).toBe((await bPaused.reached).leaseOwner);
        expect((now?.locked_until as Date).getTime()).toBeGreaterThan(Date.now() + 30_000);
      }
      // A settled payment is never dead-lettered by the other worker, nor the reverse.
      expect(await settlementFacts(db, paymentId)).toMatchObject({
        status: 'processing',
        result_events: 0,
      });
      releaseB.open();
      // Nothing of this case is claimed by the next one.
      await db.pool.query(`UPDATE settlement_jobs SET state = 'dead' WHERE payment_id = $1`, [
        paymentId,
      ]);
    },
  );
});

describe('refunds: writes after a lost lease', () => {
  const SOURCE: Record<Write, string> = {
    retry: 'tok_refund_unavailable',
    failure: 'tok_visa',
    dead: 'tok_refund_unavailable',
    complete: 'tok_visa',
  };

  it.each<Write>(['retry', 'failure', 'dead', 'complete'])(
    "when refund worker A's lease ran out and worker B claimed the job, then A's late %s write changes nothing and counts as a lost lease",
    async (write) => {
      const h = await createSettlementHarness(
        db,
        {
          REFUND_LEASE_MS: '60000',
          REFUND_MAX_ATTEMPTS: write === 'dead' ? '1' : '5',
        },
        1,
      );
      harness = h;
      const paymentId = await settledPayment(api, db, apiKey, {
        amount: 1000,
        source: SOURCE[write],
      });
      const res = await postRefund(api, { apiKey, paymentId, body: { amount: 300 } });
      expect(res.status).toBe(202);
      const refundId = res.json.id as string;

      const aPaused = signal<ClaimedRefundJob>();
      const bPaused = signal<ClaimedRefundJob>();
      const releaseA = gate();
      const releaseB = gate();
      const worker = (afterRefund: (job: ClaimedRefundJob) => Promise<void>) =>
        createRefundWorker({
          pool: h.platform.pool,
          acquirer: createRefundSimulator(h.platform.pool),
          deadLetters: h.deadLetters(),
          logger: h.platform.logger,
          config: h.config,
          afterRefund: (job) => (job.refund.id === refundId ? afterRefund(job) : Promise.resolve()),
        });
      const workerA = worker(async (job) => {
        aPaused.reach(job);
        await releaseA.opened;
        if (write === 'failure') throw new Error('the completion step failed');
      });
      const workerB = worker(async (job) => {
        bPaused.reach(job);
        await releaseB.opened;
      });

      const runA = workerA.runOnce();
      const a = await aPaused.reached;
      await db.pool.query('UPDATE refund_jobs SET locked_until = now() WHERE refund_id = $1', [
        refundId,
      ]);
      const runB = workerB.runOnce();
      if (write === 'dead') {
        expect(await runB).toEqual(['dead']);
      } else {
        expect((await bPaused.reached).attempts).toBe(2);
      }
      const before = await row('refund_jobs', refundId);
      const lostBefore = await leasesLost('refund');

      releaseA.open();
      const outcomesA = await runA;
      const { now, lost } = await afterLateWrite('refund', lostBefore, before, () =>
        row('refund_jobs', refundId),
      );

      expect(outcomesA).toEqual(['lease_lost']);
      expect(now).toEqual(before);
      expect(lost).toBe(1);
      if (write === 'dead') {
        expect(now).toMatchObject({ state: 'dead', attempts: 1, lease_owner: null });
      } else {
        expect(now).toMatchObject({ state: 'pending', attempts: 2, last_error_class: null });
        expect(now?.lease_owner).not.toBe(a.leaseOwner);
        expect(now?.lease_owner).toBe((await bPaused.reached).leaseOwner);
        expect((now?.locked_until as Date).getTime()).toBeGreaterThan(Date.now() + 30_000);
      }
      const { rows } = await db.pool.query<{ status: string }>(
        'SELECT status FROM refunds WHERE id = $1',
        [refundId],
      );
      expect(rows).toEqual([{ status: 'pending' }]);
      releaseB.open();
      await runB;
      await db.pool.query(`UPDATE refund_jobs SET state = 'dead' WHERE refund_id = $1`, [refundId]);
    },
  );
});
