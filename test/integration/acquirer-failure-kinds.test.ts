import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NO_FAULT, type AcquirerFault } from '../../src/acquirer/acquirer-faults.js';
import { createHttpAcquirer } from '../../src/acquirer/http-acquirer.js';
import { DLQ_HEADERS } from '../../src/jobs/dead-letters/dead-letter.js';
import { startSimulatorServer, type SimulatorServer } from '../support/simulator-server.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  createSettlementHarness,
  eventually,
  readTopic,
  settled,
  settlementFacts,
  type SettlementHarness,
} from '../support/settlement-harness.js';

/**
 * The job engine's three kinds of acquirer failure (issue 36, DESIGN 106), with settlement
 * calling a real HTTP acquirer server (its faults set in the test) and no breaker, so each rule
 * is seen on its own: a call not sent is not an attempt; an unknown outcome is followed by an
 * inquiry, not a second charge; the budget of a retryable answer is the retry window, and the
 * dead letter says what the last inquiry answered.
 */

let db: TestDatabase;
let simulator: SimulatorServer;
let acquirerUrl: string;
let harness: SettlementHarness | undefined;

beforeAll(async () => {
  db = await createTestDatabase();
  simulator = await startSimulatorServer(db);
  acquirerUrl = simulator.url;
});
afterEach(async () => {
  simulator.faults.set(NO_FAULT);
  await harness?.close();
  harness = undefined;
});
afterAll(async () => {
  await simulator.close();
  await db.drop();
});

const fault = (mode: AcquirerFault['mode']) => {
  simulator.faults.set({ ...NO_FAULT, mode });
};

async function job(paymentId: string) {
  const { rows } = await db.pool.query<{
    state: string;
    attempts: number;
    not_sent: number;
    needs_inquiry: boolean;
    last_error_class: string | null;
  }>(
    `SELECT state, attempts, not_sent, needs_inquiry, last_error_class
       FROM settlement_jobs WHERE payment_id = $1`,
    [paymentId],
  );
  return rows[0];
}

/** A settlement instance (1 partition) calling `url` over HTTP, with `overrides`. */
async function settlementCalling(url: string, overrides: Record<string, string> = {}) {
  harness = await createSettlementHarness(db, overrides, 1);
  await harness.start({ acquirer: createHttpAcquirer(url) });
  return harness;
}

async function paymentOf(h: SettlementHarness, source = 'tok_visa'): Promise<string> {
  const id = await h.createPayment(source);
  await h.produce([await h.createdRecord(id)]);
  return id;
}

describe('acquirer failures by kind', () => {
  it('when every call is refused (nothing listens), then none is an attempt: the job stays pending with its attempts given back, however many times it tries', async () => {
    const h = await settlementCalling('http://127.0.0.1:1', { SETTLEMENT_MAX_ATTEMPTS: '2' });
    const id = await paymentOf(h);
    const waiting = await eventually('ten refused calls', async () => {
      const row = await job(id);
      return row && row.not_sent >= 10 ? row : undefined;
    });
    expect(waiting).toMatchObject({
      state: 'pending',
      attempts: 0,
      last_error_class: 'acquirer_unavailable',
    });
    expect(await settlementFacts(db, id)).toMatchObject({ status: 'processing', calls: 0 });
  });

  it('when the acquirer answers 503 before processing, then it is not an attempt, and the payment settles once it accepts calls', async () => {
    const h = await settlementCalling(acquirerUrl, { SETTLEMENT_MAX_ATTEMPTS: '2' });
    fault('unavailable');
    const id = await paymentOf(h);
    await eventually('five refusals', async () => {
      const row = await job(id);
      return row && row.not_sent >= 5 ? row : undefined;
    });
    expect(await job(id)).toMatchObject({ state: 'pending', attempts: 0 });
    fault('none');
    expect(await settled(db, id)).toMatchObject({ calls: 1, approved_charges: 1 });
  });

  it('when the answer is dropped after the charge, then the next step is an inquiry: the payment settles from the books without a second call', async () => {
    const h = await settlementCalling(acquirerUrl, { SETTLEMENT_BACKOFF_BASE_MS: '500' });
    fault('drop');
    const id = await paymentOf(h);
    await eventually('the charge dropped, an inquiry due', async () => {
      const row = await job(id);
      return row?.needs_inquiry ? row : undefined;
    });
    fault('none');
    const facts = await settled(db, id);
    expect(facts).toMatchObject({ calls: 1, replayed_calls: 0, approved_charges: 1 });
    expect(facts.result_events).toBe(1);
  });

  it('when the acquirer keeps answering a retryable error, then the job is retried for the retry window (not a count), then dead-lettered', async () => {
    const h = await settlementCalling(acquirerUrl, {
      SETTLEMENT_MAX_ATTEMPTS: '1000',
      SETTLEMENT_RETRY_WINDOW_SECONDS: '2',
    });
    const id = await paymentOf(h, 'tok_unavailable');
    const dead = await eventually('dead after the window', async () => {
      const row = await job(id);
      return row?.state === 'dead' ? row : undefined;
    });
    expect(dead.attempts).toBeGreaterThan(5);
    const letters = await readTopic(h.platform.kafka, h.config.KAFKA_TOPIC_DLQ, 1);
    expect(letters[0]?.headers).toMatchObject({
      [DLQ_HEADERS.errorClass]: 'acquirer_transient',
      [DLQ_HEADERS.attempts]: String(dead.attempts),
      [DLQ_HEADERS.lastInquiry]: 'none',
      [DLQ_HEADERS.notSent]: '0',
    });
  });

  it('when an outage comes between retryable answers, then its refused calls do not replace the last error: the letter names the answers (acquirer_transient), not the outage', async () => {
    const h = await settlementCalling(acquirerUrl, {
      SETTLEMENT_MAX_ATTEMPTS: '1000',
      SETTLEMENT_RETRY_WINDOW_SECONDS: '3',
    });
    const id = await paymentOf(h, 'tok_unavailable');
    // The answer recorded, not just the attempt claimed: `attempts` counts at the claim, and a
    // fault set while that first call is in flight would refuse it (a CI run's flake).
    await eventually('a retryable answer', async () => {
      const row = await job(id);
      return row?.last_error_class === 'acquirer_transient' ? row : undefined;
    });
    fault('unavailable');
    const waiting = await eventually('refused calls', async () => {
      const row = await job(id);
      return row && row.not_sent >= 2 ? row : undefined;
    });
    expect(waiting).toMatchObject({ state: 'pending', last_error_class: 'acquirer_transient' });
    fault('none');
    await eventually('dead after the window', async () => {
      const row = await job(id);
      return row?.state === 'dead' ? row : undefined;
    });
    const letters = await readTopic(h.platform.kafka, h.config.KAFKA_TOPIC_DLQ, 1);
    const letter = letters.find((l) => l.key === id);
    expect(letter?.headers[DLQ_HEADERS.errorClass]).toBe('acquirer_transient');
    expect(Number(letter?.headers[DLQ_HEADERS.notSent])).toBeGreaterThanOrEqual(2);
  });

  it('when the outcome stays unknown past the window, then the acquirer is asked before the dead letter, and the letter carries its "not found"', async () => {
    const h = await settlementCalling(acquirerUrl, {
      SETTLEMENT_MAX_ATTEMPTS: '1000',
      SETTLEMENT_RETRY_WINDOW_SECONDS: '1',
    });
    const id = await paymentOf(h, 'tok_timeout');
    await eventually('dead after the window', async () => {
      const row = await job(id);
      return row?.state === 'dead' ? row : undefined;
    });
    const letters = await readTopic(h.platform.kafka, h.config.KAFKA_TOPIC_DLQ, 1);
    expect(letters[0]?.headers).toMatchObject({
      [DLQ_HEADERS.errorClass]: 'acquirer_timeout',
      [DLQ_HEADERS.lastInquiry]: 'not_found',
    });
    expect(await settlementFacts(db, id)).toMatchObject({ status: 'processing', charges: 0 });
  });
});
