// The lifecycle order of one payment's events, as a consumer of payments.events can check it:
// payment.created < payment.settled | payment.failed (automatic capture, or a declined
// authorization); payment.created < payment.authorized < payment.settled | payment.canceled
// (manual capture: its payment.settled carries `capture_method: "manual"`), or
// payment.authorized < payment.failed (a capture the issuer declined: the hold is voided); then, after
// settled or failed, refund.created < refund.succeeded | refund.failed (for the same refund id;
// the events of different refunds interleave freely).
// Pure: no I/O, so the rules are tested on their own (test/unit/consumer-kit-order.test.ts).

import { EVENT_TYPES } from '../events/event-types.js';

export type PaymentStage = 'created' | 'authorized' | 'settled' | 'failed' | 'canceled';
export type RefundStage = 'created' | 'succeeded' | 'failed';

/** Where one payment (a CloudEvent subject) stands, as far as its events applied so far tell. */
export interface SubjectState {
  payment?: PaymentStage;
  /** Each refund's stage by refund id (the `data.id` of its refund.* events). */
  refunds?: Record<string, RefundStage>;
}

/** The part of an event the rules read: its type and, for refund events, `data.id`. */
export interface OrderedEvent {
  type: string;
  data?: unknown;
}

/**
 * In order: `next` is the subject's state after the event. Out of order: `problem` says why,
 * and `next` is the state if the event were applied anyway (a stage is never moved backwards);
 * `missing` is the event type that must come first when one is missing (the event is early),
 * null when a later stage was reached already (the event is late: nothing can put it in order).
 * Types outside the lifecycle are in order and leave the state as it is.
 */
export type OrderVerdict =
  | { inOrder: true; next: SubjectState }
  | { inOrder: false; problem: string; next: SubjectState; missing: string | null };

/** The event types whose order is checked: every type of the topic (src/events/). */
export const LIFECYCLE_TYPES = EVENT_TYPES;

export function checkOrder(state: SubjectState, event: OrderedEvent): OrderVerdict {
  switch (event.type) {
    case 'payment.created':
      return state.payment === undefined
        ? ok({ ...state, payment: 'created' })
        : late(state, `payment.created after payment.${state.payment}`);
    case 'payment.authorized':
    case 'payment.settled':
    case 'payment.failed':
    case 'payment.canceled':
      return paymentStep(state, event);
    case 'refund.created':
    case 'refund.succeeded':
    case 'refund.failed':
      return refundStep(state, event);
    default:
      return ok(state);
  }
}

/** The stage each payment event follows: the first listed when it is the one missing. */
const PAYMENT_PREDECESSORS: Record<string, { stage: PaymentStage; after: PaymentStage[] }> = {
  'payment.authorized': { stage: 'authorized', after: ['created'] },
  'payment.settled': { stage: 'settled', after: ['created', 'authorized'] },
  'payment.failed': { stage: 'failed', after: ['created', 'authorized'] },
  'payment.canceled': { stage: 'canceled', after: ['authorized'] },
};
const RANK: Record<PaymentStage, number> = {
  created: 0,
  authorized: 1,
  settled: 2,
  failed: 2,
  canceled: 2,
};

function paymentStep(state: SubjectState, event: OrderedEvent): OrderVerdict {
  const rule = PAYMENT_PREDECESSORS[event.type];
  if (rule === undefined) return ok(state);
  // A manual payment is captured from `authorized` only: its settled event says it is manual.
  const after =
    event.type === 'payment.settled' && captureMethodOf(event.data) === 'manual'
      ? (['authorized'] as PaymentStage[])
      : rule.after;
  const next = { ...state, payment: rule.stage };
  if (state.payment === undefined) {
    return early(next, `${event.type} before payment.created`, 'payment.created');
  }
  if (after.includes(state.payment)) return ok(next);
  const needed = after.find((stage) => RANK[stage] > RANK[state.payment ?? 'created']);
  if (needed !== undefined) {
    return early(next, `${event.type} before payment.${needed}`, `payment.${needed}`);
  }
  return late(state, `${event.type} after payment.${state.payment}`);
}

function refundStep(state: SubjectState, event: OrderedEvent): OrderVerdict {
  const refundId = refundIdOf(event.data);
  if (refundId === undefined) return late(state, `${event.type} without a refund id (data.id)`);
  const current = state.refunds?.[refundId];
  const withRefund = (stage: RefundStage): SubjectState => ({
    ...state,
    refunds: { ...state.refunds, [refundId]: stage },
  });
  if (event.type === 'refund.created') {
    if (current !== undefined) return late(state, `refund.created after refund.${current}`);
    if (state.payment === 'settled' || state.payment === 'failed') {
      return ok(withRefund('created'));
    }
    if (state.payment === 'canceled') return late(state, 'refund.created after payment.canceled');
    const seen = state.payment === undefined ? 'no payment event' : `payment.${state.payment}`;
    const problem = `refund.created before the payment's result (${seen})`;
    return early(withRefund('created'), problem, 'payment.settled | payment.failed');
  }
  const stage: RefundStage = event.type === 'refund.succeeded' ? 'succeeded' : 'failed';
  if (current === 'created') return ok(withRefund(stage));
  if (current === undefined) {
    return early(withRefund(stage), `${event.type} before refund.created`, 'refund.created');
  }
  return late(state, `${event.type} after refund.${current}`);
}

function captureMethodOf(data: unknown): unknown {
  return typeof data === 'object' && data !== null && 'capture_method' in data
    ? data.capture_method
    : undefined;
}

function refundIdOf(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null || !('id' in data)) return undefined;
  return typeof data.id === 'string' && data.id !== '' ? data.id : undefined;
}

const ok = (next: SubjectState): OrderVerdict => ({ inOrder: true, next });

/** Its predecessor is missing: applying it anyway moves the stage forwards. */
const early = (next: SubjectState, problem: string, missing: string): OrderVerdict => ({
  inOrder: false,
  problem,
  next,
  missing,
});

/** A later stage was already reached: applying it anyway leaves the state as it is. */
const late = (state: SubjectState, problem: string): OrderVerdict => ({
  inOrder: false,
  problem,
  next: state,
  missing: null,
});
