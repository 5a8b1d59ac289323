import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHoldWorker } from '../../src/settlement/hold-worker.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  createSettlementHarness,
  eventually,
  type SettlementHarness,
} from '../support/settlement-harness.js';
import { getJson, startTestApi, type Answer, type TestApi } from '../support/test-api.js';
import {
  createTwoPhase,
  manualPayment,
  paymentEvents,
  postHold,
  workHold,
} from '../support/two-phase-harness.js';

let db: TestDatabase;
let api: TestApi;
let harness: SettlementHarness;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  // Same-key sends wait for the first one's answer (no 409), as a client retrying would get.
  api = await startTestApi(db, { IDEMPOTENCY_IN_FLIGHT: 'wait', IDEMPOTENCY_WAIT_MS: '20000' });
  harness = await createSettlementHarness(db, {}, 1);
  // 300 requests at once: a tier whose burst takes them (the race, not the rate limit, is tested).
  await db.pool.query(
    `INSERT INTO rate_limit_tiers (name, rate_per_second, burst) VALUES ('two-phase-race', 10000, 10000)`,
  );
  ({ apiKey } = await api.merchant('Racer', 'two-phase-race'));
});

afterAll(async () => {
  await harness.close();
  await api.close();
  await db.drop();
});

describe('two-phase races and expiry', () => {
  it('100 concurrent captures and cancels of one authorization (distinct keys, each sent 3 times): exactly one outcome, replays identical, books consistent', async () => {
    const twoPhase = createTwoPhase(harness);
    const { id } = await manualPayment(api, db, harness, twoPhase, { apiKey });
    const requests = Array.from({ length: 100 }, (_, i) => ({
      key: `race-${String(i)}-${crypto.randomUUID()}`,
      action: i % 2 === 0 ? ('capture' as const) : ('cancel' as const),
      body: i % 2 === 0 ? { amount_to_capture: 500 + i } : { cancellation_reason: 'abandoned' },
    }));
    // Three waves of all 100 keys at once: the first is the race, the next two replay every key
    // (a refusal is not stored, so a same-key twin in flight with a refused request waits for
    // IDEMPOTENCY_WAIT_MS and gets 409: the idempotency layer's rule, as for refunds).
    const answers: { request: (typeof requests)[number]; answer: Answer }[] = [];
    for (let wave = 0; wave < 3; wave++) {
      answers.push(
        ...(await Promise.all(
          requests.map((request) =>
            postHold(api, { apiKey, paymentId: id, ...request }).then((answer) => ({
              request,
              answer,
            })),
          ),
        )),
      );
    }
    const byKey = new Map<string, Answer[]>();
    for (const { request, answer } of answers) {
      byKey.set(request.key, [...(byKey.get(request.key) ?? []), answer]);
    }
    // Replays identical: every key's three answers have one status and one body.
    expect(answers).toHaveLength(300);
    for (const [key, sent] of byKey) {
      expect(new Set(sent.map((a) => a.status)).size, key).toBe(1);
      expect(new Set(sent.map((a) => a.text)).size, key).toBe(1);
    }
    const winners = [...byKey].filter(([, sent]) => sent[0]?.status === 202);
    expect(winners).toHaveLength(1);
    const winnerKey = winners[0]?.[0];
    const winner = requests.find((r) => r.key === winnerKey);
    if (!winner) throw new Error('no winner');
    const loserCode =
      winner.action === 'capture' ? 'payment_already_captured' : 'payment_already_canceled';
    for (const [key, sent] of byKey) {
      if (key === winnerKey) continue;
      expect([sent[0]?.status, sent[0]?.json.code], key).toEqual([422, loserCode]);
    }
    const { rows } = await db.pool.query<{ action: string; amount: string | null }>(
      'SELECT action, amount FROM payment_hold_decisions WHERE payment_id = $1',
      [id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]?.action).toBe(winner.action);

    expect(await workHold(db, twoPhase, id)).toBe('done');
    const books = twoPhase.holds.books(id);
    const read = await getJson(api, `/payments/${id}`, apiKey);
    if (winner.action === 'capture') {
      const amount = winner.body.amount_to_capture ?? 0;
      expect(books).toMatchObject({ captures: 1, voids: 0, captured: amount });
      expect(books.released).toBe(1000 - amount);
      expect(read.json).toMatchObject({ status: 'settled', amount_captured: amount });
    } else {
      expect(books).toMatchObject({ captures: 0, voids: 1, captured: 0, released: 1000 });
      expect(read.json).toMatchObject({ status: 'canceled', cancellation_reason: 'abandoned' });
    }
    const types = (await paymentEvents(db, id)).map((e) => e.event_type);
    expect(types).toEqual([
      'payment.created',
      'payment.authorized',
      winner.action === 'capture' ? 'payment.settled' : 'payment.canceled',
    ]);
  });

  it('when nobody decides by capture_before, then a hold worker started later voids it and cancels the payment as expired', async () => {
    // A one-second window; the worker that authorized it is not the one that expires it.
    const twoPhase = createTwoPhase(harness, 1);
    const { id } = await manualPayment(api, db, harness, twoPhase, { apiKey });
    const authorized = await getJson(api, `/payments/${id}`, apiKey);
    expect(authorized.json.status).toBe('requires_capture');
    const { rows } = await db.pool.query<{ due: Date; capture_before: Date }>(
      `SELECT j.next_attempt_at AS due, p.capture_before FROM hold_jobs j
         JOIN payments p ON p.id = j.payment_id WHERE j.payment_id = $1`,
      [id],
    );
    expect(rows[0]?.due.getTime()).toBe(rows[0]?.capture_before.getTime());

    const restarted = {
      ...twoPhase,
      holdWorker: createHoldWorker({
        pool: harness.platform.pool,
        holdAcquirer: twoPhase.holds,
        deadLetters: harness.deadLetters(),
        logger: harness.platform.logger,
        config: harness.config,
      }),
    };
    expect(await workHold(db, restarted, id)).toBe('done');
    expect(twoPhase.holds.books(id)).toMatchObject({
      authorizations: 1,
      captures: 0,
      voids: 1,
      released: 1000,
    });
    const read = await eventually('canceled', async () => {
      const answer = await getJson(api, `/payments/${id}`, apiKey);
      return answer.json.status === 'canceled' ? answer : undefined;
    });
    expect(read.json).toMatchObject({ status: 'canceled', cancellation_reason: 'expired' });
    // After the expiry, a capture is refused with the canceled payment's code.
    const late = await postHold(api, { apiKey, paymentId: id, action: 'capture' });
    expect([late.status, late.json.code]).toEqual([422, 'payment_already_canceled']);
    const events = await paymentEvents(db, id);
    expect(events.map((e) => e.event_type)).toEqual([
      'payment.created',
      'payment.authorized',
      'payment.canceled',
    ]);
    expect(events[2]?.data).toMatchObject({ cancellation_reason: 'expired' });
  });
});
