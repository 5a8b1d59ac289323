import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postRefund, settledPayment } from '../support/refund-client.js';
import { refundWorkFacts, refundWorked } from '../support/refund-harness.js';
import { startRoleProcess } from '../support/role-process.js';
import {
  createSettlementHarness,
  eventually,
  FAST_SETTLEMENT,
  type SettlementHarness,
} from '../support/settlement-harness.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The refund version of settlement-kill: the acquirer has refunded, our transaction has not
 * committed (frozen behind a lock on the outbox it needs), and the process is SIGKILLed.
 */

let db: TestDatabase;
let api: TestApi;
let harness: SettlementHarness;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  harness = await createSettlementHarness(db, {}, 1);
});
afterAll(async () => {
  await harness.close();
  await api.close();
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

const waitingOnOutbox = async (): Promise<number> => {
  const { rows } = await db.login('settlement').query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'
        AND query LIKE '%INSERT INTO outbox (%'`,
  );
  return rows[0]?.n ?? 0;
};

describe('refund worker killed between the acquirer refund and the commit', () => {
  it('when it is SIGKILLed there and restarted, then the acquirer refunds once and the refund succeeds once', async () => {
    const { apiKey } = await api.merchant();
    const paymentId = await settledPayment(api, db, apiKey, { amount: 1000 });
    const created = await postRefund(api, { apiKey, paymentId, body: { amount: 250 } });
    expect(created.status).toBe(202);
    const id = created.json.id as string;

    const blocker = await db.pool.connect();
    let first: ReturnType<typeof startRoleProcess> | undefined;
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE outbox IN SHARE MODE');
      first = startRoleProcess('apps/settlement/main.js', settlementEnv());
      await eventually('refund waiting on its commit after the acquirer refunded', async () => {
        const facts = await refundWorkFacts(db, id);
        return facts.approved_refunds === 1 && (await waitingOnOutbox()) === 1 ? true : undefined;
      });
      expect(await first.stop('SIGKILL')).toBeNull();
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    await eventually('the dead backend gone', async () => {
      const { rows } = await db.login('settlement').query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND query LIKE '%INSERT INTO outbox (%' AND state <> 'idle'
            AND pid <> pg_backend_pid()`,
      );
      return rows[0]?.n === 0 ? true : undefined;
    });
    expect(await refundWorkFacts(db, id)).toMatchObject({
      status: 'pending',
      approved_refunds: 1,
      result_events: 0,
      job_state: 'pending',
    });

    const second = startRoleProcess('apps/settlement/main.js', settlementEnv());
    try {
      const done = await refundWorked(db, id, 'refund completed after the restart');
      expect(done).toMatchObject({
        status: 'succeeded',
        amount_refunded: 250,
        acquirer_refunds: 1,
        approved_refunds: 1,
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
