import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RefundAcquirer } from '../../src/acquirer/acquirer.js';
import { createRefundSimulator } from '../../src/acquirer/refund-simulator.js';
import { refundEventId } from '../../src/refunds/refund-event-id.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { reviveDeadJobs } from '../../src/jobs/job-store.js';
import { REFUND_JOBS } from '../../src/jobs/job-table.js';
import { createRefundWorker } from '../../src/refunds/refund-worker.js';
import { replayDeadLetters } from '../../src/jobs/dead-letters/replay-dead-letters.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postRefund, settledPayment } from '../support/refund-client.js';
import { refundWorkFacts, refundWorked } from '../support/refund-harness.js';
import {
  createSettlementHarness,
  eventually,
  settled,
  type SettlementHarness,
} from '../support/settlement-harness.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/** `npm run dlq:replay` brings a dead refund back, once per replay, like a dead charge. */
let db: TestDatabase;
let api: TestApi;
let harness: SettlementHarness;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  harness = await createSettlementHarness(db, { REFUND_MAX_ATTEMPTS: '2' }, 1);
  ({ apiKey } = await api.merchant());
});

afterAll(async () => {
  await harness.close();
  await api.close();
  await db.drop();
});

const silent = createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' });

describe('replaying a dead refund', () => {
  it('when a dead-lettered refund is replayed after the acquirer recovered, then its job comes back once, the refund succeeds once, and a second replay changes nothing', async () => {
    const { config, platform } = harness;
    const paymentId = await settledPayment(api, db, apiKey, {
      amount: 1000,
      source: 'tok_refund_unavailable',
    });
    const res = await postRefund(api, { apiKey, paymentId, body: { amount: 400 } });
    expect(res.status).toBe(202);
    const id = res.json.id as string;

    // Worked until its attempts are used up: dead, dead-lettered, still pending.
    const dying = createRefundWorker({
      pool: platform.pool,
      acquirer: createRefundSimulator(platform.pool),
      deadLetters: harness.deadLetters(),
      logger: platform.logger,
      config,
    });
    const dead = await eventually('refund dead', async () => {
      await dying.runOnce();
      const facts = await refundWorkFacts(db, id);
      return facts.job_state === 'dead' ? facts : undefined;
    });
    expect(dead).toMatchObject({ status: 'pending', amount_refunded: 400, acquirer_refunds: 0 });

    // The acquirer is back: the same calls now refund.
    const simulator = createRefundSimulator(platform.pool);
    const recovered: RefundAcquirer = {
      refund: (request, signal) => simulator.refund({ ...request, source: 'tok_visa' }, signal),
    };
    const role = await harness.start({ refundAcquirer: recovered });
    try {
      const replay = () =>
        replayDeadLetters(
          platform.kafka,
          platform.admin,
          {
            dlqTopic: config.KAFKA_TOPIC_DLQ,
            mainTopic: config.KAFKA_TOPIC_PAYMENTS,
            select: { eventId: refundEventId(id, 'refund.created') },
          },
          silent,
        );
      expect((await replay()).replayed).toEqual([refundEventId(id, 'refund.created')]);
      const done = await refundWorked(db, id, 'refund succeeded after the replay');
      expect(done).toMatchObject({
        status: 'succeeded',
        amount_refunded: 400,
        acquirer_refunds: 1,
        approved_refunds: 1,
        result_events: 1,
        job_state: null,
      });

      // A second replay (a new token) reaches a refund whose job is gone: nothing happens. A
      // payment behind it on the one partition shows the copy was consumed.
      await replay();
      const barrier = await harness.createPayment();
      await harness.produce([await harness.createdRecord(barrier)]);
      await settled(db, barrier);
      expect(await refundWorkFacts(db, id)).toMatchObject({
        status: 'succeeded',
        acquirer_refunds: 1,
        result_events: 1,
        job_state: null,
      });
    } finally {
      await role.close();
    }
  });

  it('when the same replayed copy is delivered again after the job died again, then it does not revive it; a new replay does', async () => {
    const paymentId = await settledPayment(api, db, apiKey, { amount: 1000 });
    const res = await postRefund(api, { apiKey, paymentId, body: { amount: 100 } });
    const id = res.json.id as string;
    const kill = () =>
      db.pool.query(`UPDATE refund_jobs SET state = 'dead' WHERE refund_id = $1`, [id]);
    await kill();
    expect(
      await reviveDeadJobs(db.login('settlement'), REFUND_JOBS, [{ id, token: 'run-1' }]),
    ).toEqual(new Map([[id, 'run-1']]));
    const revived = await db.pool.query<{ state: string; attempts: number }>(
      'SELECT state, attempts FROM refund_jobs WHERE refund_id = $1',
      [id],
    );
    expect(revived.rows).toEqual([{ state: 'pending', attempts: 0 }]);
    await kill();
    expect(
      await reviveDeadJobs(db.login('settlement'), REFUND_JOBS, [{ id, token: 'run-1' }]),
    ).toEqual(new Map());
    expect(
      await reviveDeadJobs(db.login('settlement'), REFUND_JOBS, [{ id, token: 'run-2' }]),
    ).toEqual(new Map([[id, 'run-2']]));
  });
});
