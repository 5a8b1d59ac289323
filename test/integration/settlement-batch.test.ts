import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  createSettlementHarness,
  eventually,
  settled,
  type SettlementHarness,
} from '../support/settlement-harness.js';

/**
 * The consumer records a whole batch in one transaction. A fault on one record of the batch
 * (a trigger that raises on its job's INSERT while a flag row names it) must leave nothing of
 * the batch behind and its offsets uncommitted; once the fault clears, the redelivered batch is
 * recorded, each payment once.
 */

const BATCH = 10;
const FAILING = 6; // the sixth record of the batch

let db: TestDatabase;
let harness: SettlementHarness;

beforeAll(async () => {
  db = await createTestDatabase();
  harness = await createSettlementHarness(db, {}, 1);
  await db.pool.query(`
    CREATE TABLE test_fault (payment_id uuid PRIMARY KEY);
    CREATE SEQUENCE test_fault_hits;
    -- SECURITY DEFINER: the trigger fires in settlement's statements (payments_settlement),
    -- which may not read the test's own table and sequence.
    CREATE FUNCTION test_fail_marked_job() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM test_fault WHERE payment_id = NEW.payment_id) THEN
        PERFORM nextval('test_fault_hits'); -- not rolled back: counts the failed tries
        RAISE EXCEPTION 'injected fault on payment %', NEW.payment_id;
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_fail_marked_job BEFORE INSERT ON settlement_jobs
      FOR EACH ROW EXECUTE FUNCTION test_fail_marked_job();
  `);
});
afterAll(async () => {
  await harness.close();
  await db.drop();
});

async function faultHits(): Promise<number> {
  const { rows } = await db.pool.query<{ n: string }>(
    `SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM test_fault_hits`,
  );
  return Number(rows[0]?.n ?? 0);
}

async function committedOffset(): Promise<string | undefined> {
  const offsets = await harness.platform.admin.fetchOffsets({
    groupId: harness.config.KAFKA_CONSUMER_GROUP,
    topics: [harness.config.KAFKA_TOPIC_PAYMENTS],
  });
  return offsets[0]?.partitions.find((p) => p.partition === 0)?.offset;
}

describe('settlement batch intake', () => {
  it('when the transaction fails on one record half-way through a batch, then nothing of the batch is recorded, the offset stays, and the redelivery records each payment once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < BATCH; i++) ids.push(await harness.createPayment());
    const failing = ids[FAILING - 1] ?? '';
    await db.pool.query('INSERT INTO test_fault (payment_id) VALUES ($1)', [failing]);
    // Produced in one request before the consumer starts: one fetch, one batch.
    const records = await Promise.all(ids.map((id) => harness.createdRecord(id)));
    await harness.produce(records);
    await harness.start();

    await eventually('the batch failed twice', async () =>
      (await faultHits()) >= 2 ? true : undefined,
    );
    const { rows } = await db.pool.query<{
      processed: number;
      jobs: number;
      pending: number;
    }>(
      `SELECT (SELECT count(*)::int FROM processed_events) AS processed,
              (SELECT count(*)::int FROM settlement_jobs) AS jobs,
              (SELECT count(*)::int FROM payments WHERE status = 'pending') AS pending`,
    );
    expect(rows[0]).toEqual({ processed: 0, jobs: 0, pending: BATCH });
    expect(['-1', '0', undefined]).toContain(await committedOffset());

    await db.pool.query('DELETE FROM test_fault');
    for (const id of ids) await settled(db, id);
    const totals = await db.pool.query<{
      processed: number;
      charges: number;
      results: number;
    }>(
      `SELECT (SELECT count(*)::int FROM processed_events) AS processed,
              (SELECT count(*)::int FROM acquirer_simulator_charges) AS charges,
              (SELECT count(*)::int FROM outbox WHERE event_type = 'payment.settled') AS results`,
    );
    expect(totals.rows[0]).toEqual({ processed: BATCH, charges: BATCH, results: BATCH });
    await eventually('the offset committed past the batch', async () =>
      (await committedOffset()) === String(BATCH) ? true : undefined,
    );
  });
});
