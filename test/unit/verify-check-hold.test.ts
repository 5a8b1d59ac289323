import { describe, expect, it } from 'vitest';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { checkHold, EXPIRY_ALLOWANCE_SECONDS } from '../../tools/verify/check-hold.js';
import type { HoldFacts } from '../../tools/verify/load-hold-facts.js';
import type { PaymentFacts } from '../../tools/verify/load-payment-facts.js';

const ID = '01a21e3c-158c-77ce-a197-eb78d9af7601';

function payment(status: PaymentFacts['status']): PaymentFacts {
  return {
    id: ID,
    merchantId: 'm',
    status,
    failureCode: null,
    ageSeconds: 600,
    updatedAgeSeconds: 600,
    keyRecords: 1,
    foreignKeyRecords: 0,
    mismatchedResponses: 0,
    approvedCharges: 0,
    declinedCharges: 0,
    freshApprovedCalls: 0,
    calls: 0,
    replayedCalls: 0,
    jobState: null,
    jobAttempts: null,
    processedCreatedIds: [],
    outbox: [],
  };
}

const once = { approved: 1, freshApprovedCalls: 1 };
const none = { approved: 0, freshApprovedCalls: 0 };
const authorized: HoldFacts = {
  amount: 1000,
  amountCaptured: null,
  amountRefunded: 0,
  refundsSum: 0,
  pastCaptureBeforeSeconds: -3600,
  hold: { state: 'held', authorized: 1000, captured: 0, released: 0 },
  authorize: once,
  capture: none,
  void: none,
  decision: null,
  holdJobState: 'pending',
};

const codes = (verdict: ReturnType<typeof checkHold>) => verdict.violations.map((v) => v.code);

describe('checkHold', () => {
  it('when a hold job is dead, then its payment.authorized letter on the DLQ makes it dead-lettered, and its absence a violation', () => {
    const dead = { ...authorized, holdJobState: 'dead' as const, pastCaptureBeforeSeconds: 3600 };
    const letter = new Map([[paymentEventId(ID, 'payment.authorized'), 1]]);
    const lettered = checkHold(
      payment('requires_capture'),
      dead,
      { events: undefined, deadLetters: letter },
      0,
    );
    expect(lettered.deadLettered).toBe(true);
    expect(codes(lettered)).toEqual(['hold_event_missing']);
    const missing = checkHold(
      payment('requires_capture'),
      dead,
      { events: undefined, deadLetters: new Map() },
      0,
    );
    expect(codes(missing)).toContain('hold_dead_letter_missing');
  });

  it('when the window passed, then it is in flight within the grace period and the expiry job’s allowance, and unresolved after them', () => {
    const past = { ...authorized, pastCaptureBeforeSeconds: 30 + EXPIRY_ALLOWANCE_SECONDS };
    expect(checkHold(payment('requires_capture'), past, null, 60)).toMatchObject({
      violations: [],
      inFlight: true,
    });
    expect(codes(checkHold(payment('requires_capture'), past, null, 10))).toEqual([
      'authorization_unresolved',
    ]);
    // With no grace at all (a checkpoint), a window just over is the expiry job's to finish.
    const justOver = { ...authorized, pastCaptureBeforeSeconds: 2 };
    expect(checkHold(payment('requires_capture'), justOver, null, 0)).toMatchObject({
      violations: [],
      inFlight: true,
    });
  });

  it('when a settled payment captured 600 of 1000, then 600 refunded passes and 601 does not', () => {
    const settled: HoldFacts = {
      ...authorized,
      amountCaptured: 600,
      amountRefunded: 600,
      refundsSum: 600,
      hold: { state: 'captured', authorized: 1000, captured: 600, released: 400 },
      capture: once,
      holdJobState: null,
    };
    expect(codes(checkHold(payment('settled'), settled, null, 0))).toEqual([]);
    expect(codes(checkHold(payment('settled'), { ...settled, refundsSum: 601 }, null, 0))).toEqual([
      'refunded_exceeds_captured',
    ]);
  });
});
