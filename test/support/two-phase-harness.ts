import type { Acquirer } from '../../src/acquirer/acquirer.js';
import type { HoldAcquirer } from '../../src/acquirer/hold-acquirer.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { recordCreatedEvents } from '../../src/settlement/record-created-events.js';
import { createHoldWorker, type HoldWorker } from '../../src/settlement/hold-worker.js';
import {
  createSettlementWorker,
  type SettlementWorker,
} from '../../src/settlement/settlement-worker.js';
import { createHoldAcquirerDouble } from './hold-acquirer-double.js';
import type { TestDatabase } from './isolation.js';
import { eventually, type SettlementHarness } from './settlement-harness.js';
import { postPayment, type Answer, type TestApi } from './test-api.js';

/** A charge-only acquirer that must not be called: manual payments are authorized instead. */
const NO_CHARGES: Acquirer = {
  charge: () => Promise.reject(new Error('a manual payment was charged')),
};

export interface TwoPhase {
  holds: ReturnType<typeof createHoldAcquirerDouble>;
  settlement: SettlementWorker;
  holdWorker: HoldWorker;
}

/** Settlement and hold workers on the harness's pool, both with the in-memory HoldAcquirer. */
export function createTwoPhase(
  harness: SettlementHarness,
  windowSeconds?: number,
  /** What the workers call instead of the double itself (fault injection); its books stay. */
  wrap: (holds: HoldAcquirer) => HoldAcquirer = (holds) => holds,
): TwoPhase {
  const holds = createHoldAcquirerDouble();
  const called = wrap(holds);
  const config =
    windowSeconds === undefined
      ? harness.config
      : { ...harness.config, AUTHORIZATION_WINDOW_SECONDS: windowSeconds };
  const common = {
    pool: harness.platform.pool,
    deadLetters: harness.deadLetters(),
    logger: harness.platform.logger,
    config,
  };
  return {
    holds,
    settlement: createSettlementWorker({ ...common, acquirer: NO_CHARGES, holdAcquirer: called }),
    holdWorker: createHoldWorker({ ...common, holdAcquirer: called }),
  };
}

/** POST /payments/{id}/<action> as a client would send it. */
export async function postHold(
  api: TestApi,
  options: {
    apiKey: string;
    paymentId: string;
    action: 'capture' | 'cancel';
    key?: string;
    body?: unknown;
  },
): Promise<Answer> {
  const res = await fetch(api.url(`/payments/${options.paymentId}/${options.action}`), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${options.apiKey}`,
      'idempotency-key': options.key ?? crypto.randomUUID(),
      'content-type': 'application/json',
    },
    body: JSON.stringify(options.body ?? {}),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON; callers assert on text
  }
  return { status: res.status, headers: res.headers, text, json };
}

/**
 * A manual payment created through the API and authorized by settlement (its payment.created
 * recorded as the consumer would, then the settlement worker run until the payment moved).
 */
export async function manualPayment(
  api: TestApi,
  db: TestDatabase,
  harness: SettlementHarness,
  twoPhase: TwoPhase,
  options: { apiKey: string; amount?: number; source?: string },
): Promise<{ id: string; created: Answer }> {
  const created = await postPayment(api, {
    apiKey: options.apiKey,
    body: {
      amount: options.amount ?? 1000,
      currency: 'EUR',
      source: options.source ?? 'tok_visa',
      capture_method: 'manual',
    },
  });
  if (created.status !== 202) throw new Error(`payment not created: ${created.text}`);
  const id = created.json.id as string;
  const record = await harness.createdRecord(id);
  await recordCreatedEvents(harness.platform.pool, [
    {
      eventId: paymentEventId(id, 'payment.created'),
      paymentId: id,
      replayToken: null,
      source: {
        topic: harness.config.KAFKA_TOPIC_PAYMENTS,
        partition: 0,
        offset: '0',
        key: record.key,
        value: record.value.toString(),
      },
    },
  ]);
  await eventually(`payment ${id} authorized or failed`, async () => {
    await twoPhase.settlement.runOnce();
    const status = await statusOf(db, id);
    return status === 'processing' || status === 'pending' ? undefined : status;
  });
  return { id, created };
}

export async function statusOf(db: TestDatabase, id: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ status: string }>(
    'SELECT status FROM payments WHERE id = $1',
    [id],
  );
  return rows[0]?.status;
}

/** Runs the hold worker until the payment's hold job is gone (or dead); the job's state. */
export function workHold(db: TestDatabase, twoPhase: TwoPhase, paymentId: string) {
  return eventually(`hold of ${paymentId} worked`, async () => {
    await twoPhase.holdWorker.runOnce();
    const { rows } = await db.pool.query<{ state: string }>(
      'SELECT state FROM hold_jobs WHERE payment_id = $1',
      [paymentId],
    );
    const state = rows[0]?.state;
    return state === 'pending' ? undefined : (state ?? 'done');
  });
}

/** The payment's result events in the outbox, in order: type and data. */
export async function paymentEvents(db: TestDatabase, paymentId: string) {
  const { rows } = await db.pool.query<{
    event_type: string;
    event_id: string;
    data: Record<string, unknown>;
  }>(`SELECT event_type, event_id, data FROM outbox WHERE aggregate_id = $1 ORDER BY id`, [
    paymentId,
  ]);
  return rows;
}
