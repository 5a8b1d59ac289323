import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { startRoleProcess } from '../support/role-process.js';
import {
  createSettlementHarness,
  eventually,
  FAST_SETTLEMENT,
  settled,
  settlementFacts,
  type SettlementHarness,
} from '../support/settlement-harness.js';

/**
 * The crash that matters for I4: the acquirer has charged, our transaction has not committed,
 * and the process dies (SIGKILL, no shutdown code runs). The commit is frozen at that exact
 * point by holding a lock the settlement transaction needs (its outbox INSERT), so the kill
 * lands between the two steps every time.
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

function settlementEnv(): Record<string, string> {
  const { config } = harness;
  return {
    DATABASE_URL: config.DATABASE_URL,
    REDIS_URL: config.REDIS_URL,
    KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
    KAFKA_TOPIC_PAYMENTS: config.KAFKA_TOPIC_PAYMENTS,
    KAFKA_TOPIC_DLQ: config.KAFKA_TOPIC_DLQ,
    KAFKA_CONSUMER_GROUP: config.KAFKA_CONSUMER_GROUP,
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
    ...FAST_SETTLEMENT,
  };
}

describe('settlement process killed between the charge and the commit', () => {
  it('when it is SIGKILLed there and restarted, then the payment is charged once and settled once', async () => {
    const id = await harness.createPayment();
    const record = await harness.createdRecord(id);

    const first = startRoleProcess('apps/settlement/main.js', settlementEnv());
    await first.logLine('settlement ready');
    const blocker = await db.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE outbox IN SHARE MODE');
      await harness.produce([record]);
      // The charge is on the acquirer's books and our commit is stuck behind the lock.
      await eventually('settlement waiting on its commit after charging', async () => {
        const facts = await settlementFacts(db, id);
        const { rows } = await db.login('settlement').query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'
              AND query LIKE '%INSERT INTO outbox (%'`,
        );
        return facts.approved_charges === 1 && rows[0]?.n === 1 ? true : undefined;
      });
      expect(await first.stop('SIGKILL')).toBeNull();
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    // Nothing of the dead process's transaction survived.
    await eventually('the dead backend gone', async () => {
      const { rows } = await db.login('settlement').query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND query LIKE '%INSERT INTO outbox (%' AND state <> 'idle'
            AND pid <> pg_backend_pid()`,
      );
      return rows[0]?.n === 0 ? true : undefined;
    });
    expect(await settlementFacts(db, id)).toMatchObject({
      status: 'processing',
      approved_charges: 1,
      result_events: 0,
      job_state: 'pending',
    });

    const second = startRoleProcess('apps/settlement/main.js', settlementEnv());
    try {
      // The worker resumes the job without waiting for the group to forget the dead member.
      expect(await settled(db, id)).toMatchObject({
        approved_charges: 1,
        calls: 2,
        replayed_calls: 1,
        result_events: 1,
        job_state: null,
      });
    } finally {
      expect(await second.stop('SIGTERM')).toBe(0);
    }
  });
});
