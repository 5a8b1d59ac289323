import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcquirerTransientError } from '../../src/acquirer/acquirer.js';
import { replayDeadLetters } from '../../src/jobs/dead-letters/replay-dead-letters.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  createSettlementHarness,
  eventually,
  settled,
  type SettlementHarness,
} from '../support/settlement-harness.js';
import { startTestApi, type TestApi } from '../support/test-api.js';
import {
  createTwoPhase,
  manualPayment,
  paymentEvents,
  postHold,
  statusOf,
  workHold,
} from '../support/two-phase-harness.js';

/** `npm run dlq:replay` brings a dead hold job back, once per replay, like a dead charge. */
let db: TestDatabase;
let api: TestApi;
let harness: SettlementHarness;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  harness = await createSettlementHarness(db, { SETTLEMENT_MAX_ATTEMPTS: '2' }, 1);
  ({ apiKey } = await api.merchant());
});

afterAll(async () => {
  await harness.close();
  await api.close();
  await db.drop();
});

const silent = createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' });

async function holdJob(paymentId: string) {
  const { rows } = await db.pool.query<{ state: string }>(
    'SELECT state FROM hold_jobs WHERE payment_id = $1',
    [paymentId],
  );
  return rows[0]?.state ?? null;
}

describe('replaying a dead hold job', () => {
  it('when a cancel’s void was dead-lettered and is replayed after the acquirer recovered, then the hold job comes back once, the hold is voided once, and a second replay changes nothing', async () => {
    // The acquirer refuses every void until it recovers: the job's two attempts are used up.
    let voidsRefused = true;
    const twoPhase = createTwoPhase(harness, undefined, (holds) => ({
      ...holds,
      authorize: holds.authorize.bind(holds),
      capture: holds.capture.bind(holds),
      void: (request, signal) =>
        voidsRefused
          ? Promise.reject(new AcquirerTransientError('void refused', 'acquirer_transient'))
          : holds.void(request, signal),
    }));
    const { id } = await manualPayment(api, db, harness, twoPhase, { apiKey });
    const cancel = await postHold(api, {
      apiKey,
      paymentId: id,
      action: 'cancel',
      body: { cancellation_reason: 'abandoned' },
    });
    expect(cancel.status).toBe(202);
    expect(await workHold(db, twoPhase, id)).toBe('dead');
    expect(await statusOf(db, id)).toBe('requires_capture');
    expect(twoPhase.holds.books(id)).toMatchObject({ authorizations: 1, voids: 0 });

    voidsRefused = false;
    const role = await harness.start({ holdAcquirer: twoPhase.holds });
    try {
      const authorized = paymentEventId(id, 'payment.authorized');
      const replay = () =>
        replayDeadLetters(
          harness.platform.kafka,
          harness.platform.admin,
          {
            dlqTopic: harness.config.KAFKA_TOPIC_DLQ,
            mainTopic: harness.config.KAFKA_TOPIC_PAYMENTS,
            select: { eventId: authorized },
            database: db.pool,
          },
          silent,
        );
      expect((await replay()).replayed).toEqual([authorized]);
      await eventually('the replayed hold job carried out', async () =>
        (await statusOf(db, id)) === 'canceled' ? true : undefined,
      );
      expect(await holdJob(id)).toBeNull();
      expect(twoPhase.holds.books(id)).toMatchObject({ voids: 1, captures: 0, released: 1000 });

      // A second replay (a new token) reaches a payment whose hold job is gone: nothing happens.
      // A payment behind it on the one partition shows the copy was consumed.
      await replay();
      const barrier = await harness.createPayment();
      await harness.produce([await harness.createdRecord(barrier)]);
      await settled(db, barrier);
      const types = (await paymentEvents(db, id)).map((event) => event.event_type);
      expect(types).toEqual(['payment.created', 'payment.authorized', 'payment.canceled']);
      expect(twoPhase.holds.books(id)).toMatchObject({ voids: 1 });
      expect(await holdJob(id)).toBeNull();
    } finally {
      await role.close();
    }
  }, 60_000);
});
