import { paymentEventId } from '../../src/payments/payment-event-id.js';
import type { PaymentEvents } from './event-log.js';
import type { HoldFacts } from './load-hold-facts.js';
import type { PaymentFacts } from './load-payment-facts.js';
import type { Violation, ViolationCode } from './violation.js';

/**
 * The expiry is a hold job due at capture_before: it voids and cancels some seconds after it
 * (the worker's poll, a busy acquirer, a database failover). A payment is judged unresolved once
 * its window has been over this long beyond the grace.
 */
export const EXPIRY_ALLOWANCE_SECONDS = 60;

export interface HoldVerdict {
  violations: Violation[];
  /** Some check was suspended because the payment is within the grace period. */
  inFlight: boolean;
  /** requires_capture with a dead hold job whose payment.authorized is on the dead-letter topic. */
  deadLettered: boolean;
}

/**
 * Judges one manual payment (capture_method manual) from the hold books and tables, in place of
 * the charge checks of an automatic payment (checkPayment keeps those byte for byte): amounts
 * (captured within authorized, refunded within captured), one approved operation of each kind,
 * never both a capture and a void, the status against the hold's state, the authorization window
 * (capture_before + grace), the hold job's dead letter, and the authorized / canceled events.
 * Pure: `topics` null when the topics were not read.
 */
export function checkHold(
  facts: PaymentFacts,
  hold: HoldFacts,
  topics: { events: PaymentEvents | undefined; deadLetters: ReadonlyMap<string, number> } | null,
  graceSeconds: number,
): HoldVerdict {
  const violations: Violation[] = [];
  const flag = (code: ViolationCode, detail: string) => {
    violations.push({ code, paymentId: facts.id, detail });
  };
  let inFlight = false;
  let deadLettered = false;
  const books = hold.hold;
  const booksText = books
    ? `hold ${books.state}: authorized ${books.authorized}, captured ${books.captured}, released ${books.released}`
    : 'no hold at the acquirer';

  if (facts.approvedCharges + facts.declinedCharges > 0 || facts.calls > 0)
    flag(
      'manual_payment_charged',
      `${facts.approvedCharges} approved and ${facts.declinedCharges} declined charges, ${facts.calls} charge calls`,
    );

  // Amounts.
  if (books && books.captured > books.authorized) flag('captured_exceeds_authorized', booksText);
  if (hold.amountCaptured !== null && hold.amountCaptured > hold.amount)
    flag(
      'captured_exceeds_authorized',
      `amount_captured ${hold.amountCaptured} > amount ${hold.amount}`,
    );
  const refunded = Math.max(hold.amountRefunded, hold.refundsSum);
  if (refunded > 0 && refunded > (hold.amountCaptured ?? 0))
    flag(
      'refunded_exceeds_captured',
      `amount_refunded ${hold.amountRefunded}, refunds ${hold.refundsSum}, amount_captured ${hold.amountCaptured ?? 'null'}`,
    );

  // Operations: one approved of each kind, never both a capture and a void.
  const operations = (['authorize', 'capture', 'void'] as const).map((kind) => ({
    kind,
    n: Math.max(hold[kind].approved, hold[kind].freshApprovedCalls),
  }));
  const counted = operations.map(({ kind, n }) => `${n} ${kind}`).join(', ');
  if (operations.some(({ n }) => n > 1)) flag('duplicate_hold_operation', `approved: ${counted}`);
  const capturedAndVoided =
    (hold.capture.approved > 0 || hold.capture.freshApprovedCalls > 0) &&
    (hold.void.approved > 0 || hold.void.freshApprovedCalls > 0);
  if (capturedAndVoided) flag('capture_and_void', `approved: ${counted}; ${booksText}`);

  // The status against the hold's state.
  if (facts.status === 'settled') {
    if (books?.state !== 'captured' || books.captured !== hold.amountCaptured)
      flag(
        'settled_hold_not_captured',
        `amount_captured ${hold.amountCaptured ?? 'null'}; ${booksText}`,
      );
  } else if (facts.status === 'canceled') {
    if (books?.state !== 'voided') flag('canceled_hold_not_voided', booksText);
  } else if (facts.status === 'failed') {
    if (books?.state === 'held')
      flag('failed_hold_still_held', `failure_code ${facts.failureCode ?? 'null'}; ${booksText}`);
  } else if (facts.status === 'requires_capture') {
    if (!books) flag('authorized_without_hold', booksText);
    if (hold.holdJobState === null) {
      flag('missing_hold_job', 'requires_capture, no hold job');
    } else if (hold.holdJobState === 'dead') {
      const letterId = paymentEventId(facts.id, 'payment.authorized');
      if (!topics || (topics.deadLetters.get(letterId) ?? 0) > 0) deadLettered = true;
      else flag('hold_dead_letter_missing', `no dead letter with event id ${letterId}`);
    }
    const past = hold.pastCaptureBeforeSeconds;
    if (!deadLettered && past !== null) {
      if (past > graceSeconds + EXPIRY_ALLOWANCE_SECONDS)
        flag(
          'authorization_unresolved',
          `requires_capture ${Math.round(past)} s after capture_before (decision ${hold.decision ?? 'none'}, hold job ${hold.holdJobState ?? 'none'})`,
        );
      else if (past > 0) inFlight = true;
    }
  }

  // Events: an authorized payment has payment.authorized; a canceled one payment.canceled.
  if (topics) {
    const events = topics.events;
    const recent = facts.updatedAgeSeconds <= graceSeconds;
    const wasAuthorized =
      facts.status === 'requires_capture' ||
      facts.status === 'canceled' ||
      (facts.status !== 'pending' && facts.status !== 'processing' && books !== null);
    const lacking: string[] = [];
    if (wasAuthorized && (events?.authorized.length ?? 0) === 0) lacking.push('payment.authorized');
    if (facts.status === 'canceled' && (events?.canceled.length ?? 0) === 0)
      lacking.push('payment.canceled');
    if (facts.status !== 'canceled' && (events?.canceled.length ?? 0) > 0)
      flag('conflicting_result_events', `payment.canceled, status ${facts.status}`);
    if (lacking.length > 0) {
      if (recent) inFlight = true;
      else flag('hold_event_missing', `status ${facts.status}, no ${lacking.join(' nor ')}`);
    }
  }
  return { violations, inFlight, deadLettered };
}
