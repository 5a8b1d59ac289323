// The lifecycle order of one payment's events, as a consumer of payments.events can check it:
// payment.created < payment.settled | payment.failed < refund.created < refund.succeeded |
// refund.failed (for the same refund id; the events of different refunds interleave freely).
// Pure: no I/O, so the rules are tested on their own (test/unit/consumer-kit-order.test.ts).

import { EVENT_TYPES } from '../events/event-types.js';

export type PaymentStage = 'created' | 'settled' | 'failed';
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
 * and `next` is the state if the event were applied anyway (a stage is never moved backwards).
 * Types outside the lifecycle are in order and leave the state as it is.
 */
export type OrderVerdict =
  { inOrder: true; next: SubjectState } | { inOrder: false; problem: string; next: SubjectState };

/** The event types whose order is checked: every type of the topic (src/events/). */
export const LIFECYCLE_TYPES = EVENT_TYPES;

export function checkOrder(state: SubjectState, event: OrderedEvent): OrderVerdict {
  switch (event.type) {
    case 'payment.created':
      return state.payment === undefined
        ? ok({ ...state, payment: 'created' })
        : late(state, `payment.created after payment.${state.payment}`);
    case 'payment.settled':
    case 'payment.failed':
      return paymentResult(state, event.type === 'payment.settled' ? 'settled' : 'failed');
    case 'refund.created':
    case 'refund.succeeded':
    case 'refund.failed':
      return refundStep(state, event);
    default:
      return ok(state);
  }
}

function paymentResult(state: SubjectState, stage: 'settled' | 'failed'): OrderVerdict {
  if (state.payment === 'created') return ok({ ...state, payment: stage });
  if (state.payment === undefined) {
    return early({ ...state, payment: stage }, `payment.${stage} before payment.created`);
  }
  return late(state, `payment.${stage} after payment.${state.payment}`);
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
    const seen = state.payment === undefined ? 'no payment event' : `payment.${state.payment}`;
    return early(withRefund('created'), `refund.created before the payment's result (${seen})`);
  }
  const stage: RefundStage = event.type === 'refund.succeeded' ? 'succeeded' : 'failed';
  if (current === 'created') return ok(withRefund(stage));
  if (current === undefined) return early(withRefund(stage), `${event.type} before refund.created`);
  return late(state, `${event.type} after refund.${current}`);
}

function refundIdOf(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null || !('id' in data)) return undefined;
  return typeof data.id === 'string' && data.id !== '' ? data.id : undefined;
}

const ok = (next: SubjectState): OrderVerdict => ({ inOrder: true, next });

/** Its predecessor is missing: applying it anyway moves the stage forwards. */
const early = (next: SubjectState, problem: string): OrderVerdict => ({
  inOrder: false,
  problem,
  next,
});

/** A later stage was already reached: applying it anyway leaves the state as it is. */
const late = (state: SubjectState, problem: string): OrderVerdict => ({
  inOrder: false,
  problem,
  next: state,
});
