/**
 * Everything `npm run verify` can find wrong, with the invariant of BRIEF section 3 it breaks.
 * One place for the wording, so the CLI, the tests and DESIGN.md record 62 say the same thing.
 */
export const VIOLATIONS = {
  // I1 / I6: one payment per (merchant, Idempotency-Key)
  payment_without_key:
    'I1: payment has no idempotency record although its key cannot have expired yet, so the key could start a second payment',
  key_shared_by_payments:
    'I1: several idempotency records point at one payment (each key must start its own payment)',
  stored_response_mismatch: 'I1: the stored response of the key names another payment id',
  cross_merchant_key: 'I6: an idempotency record of another merchant points at this payment',
  // I2 / I3: outbox and events
  outbox_without_payment: 'I2: outbox row for a payment that does not exist',
  outbox_parked: 'I3: outbox row parked (the relay gave up on it)',
  outbox_unpublished: 'I3: outbox row still unpublished after the grace period',
  missing_created_event: 'I2/I3: no payment.created event on the payments topic',
  duplicate_event_ids: 'I3: several distinct event ids for one (payment, event type)',
  wrong_event_id: 'I3: event id is not paymentEventId(payment id, type) (UUIDv5)',
  events_out_of_order:
    'I3: a result event precedes payment.created, or they sit on different partitions',
  event_without_payment: 'I2: event on the payments topic for a payment that does not exist',
  malformed_event: 'event on the payments topic without ce_id / ce_type headers or key',
  // I4: charged at most once, settled exactly once
  duplicate_charge: 'I4: more than one successful charge at the acquirer for one payment',
  conflicting_charges: 'I4: the acquirer both approved and declined this payment',
  charge_without_payment: 'I4: acquirer charge for a payment that does not exist',
  settled_without_charge: 'I4: payment settled but the acquirer approved no charge',
  failed_without_decline: 'I4: payment failed but the acquirer declined no charge',
  charged_not_settled: 'I4: the acquirer approved a charge but the payment is not settled',
  declined_not_failed: 'I4: the acquirer declined the charge but the payment is not failed',
  missing_result_event: 'I4: terminal payment without its payment.settled / payment.failed event',
  conflicting_result_events: 'I4: result events disagree with each other or with the status',
  result_event_for_unfinished_payment: 'I4: a result event exists but the payment is not terminal',
  terminal_with_job: 'I4: terminal payment still has a settlement job',
  missing_dedup_record:
    'I4: payment past pending without a processed_events row for its payment.created event',
  // I7: every accepted payment ends terminal or in a visible dead letter
  stuck_pending: 'I7: payment still pending after the grace period (settlement never took it)',
  missing_settlement: 'I7: payment processing without a settlement job: nothing will settle it',
  unresolved_settlement:
    'I7: settlement job still retrying after the grace period (neither terminal nor dead-lettered)',
  dead_letter_missing: 'I7: settlement job is dead but its event is not on the dead-letter topic',
  duplicate_dead_letter:
    'I7: a charge or refund is on the dead-letter topic more than once for one life of its job (more letters than 1 + its replays, or one source record dead-lettered twice)',
  acquirer_unavailable_dead_letter:
    'I7: a charge or refund was dead-lettered for a call that never reached the acquirer (acquirer_unavailable, rate limited, breaker open): an outage must cost no dead letter',
  // Refunds (verify-refunds.ts, DESIGN.md Part VI)
  refunds_exceed_payment: 'refund: the refunds not failed add up to more than the payment amount',
  amount_refunded_mismatch:
    'refund: payments.amount_refunded is not the sum of the refunds that are not failed',
  duplicate_acquirer_refund: 'refund: more than one successful acquirer refund for one refund',
  refund_outcome_mismatch: "refund: the refund's status disagrees with the acquirer's books",
  unresolved_refund:
    'refund: still pending after the grace period (neither terminal nor dead-lettered)',
  refund_dead_letter_missing: 'refund: job is dead but its refund.created is not dead-lettered',
  refund_job_mismatch: 'refund: pending without a job, or terminal with one',
  refund_event_missing: 'refund: refund.created or its result event is missing on the topic',
  refund_result_events: 'refund: both or the wrong result event on the topic',
  refund_event_key: 'refund: a refund event keyed by something other than its payment id',
  // Manual capture (check-hold.ts, issue 40): judged on the hold books, not on charges
  manual_payment_charged:
    'I4: a manual payment has a charge at the acquirer (it is authorized and captured, never charged)',
  captured_exceeds_authorized:
    'hold: more captured than authorized (the hold at the acquirer, or payments.amount_captured over amount)',
  refunded_exceeds_captured:
    'hold: a manual payment refunded more than it captured (refunds are against amount_captured)',
  duplicate_hold_operation:
    'hold: more than one approved authorize, capture or void for one payment (books or fresh calls)',
  capture_and_void:
    'hold: one hold both captured and voided (a capture after a void, or the reverse)',
  settled_hold_not_captured:
    'hold: a manual payment is settled but its hold is not captured at amount_captured',
  canceled_hold_not_voided: 'hold: a manual payment is canceled but its hold is not voided',
  failed_hold_still_held:
    'hold: a manual payment failed (capture declined) but its hold is still held (it must be voided)',
  authorized_without_hold:
    'hold: a payment requires_capture but the acquirer holds no authorization',
  missing_hold_job:
    'I7: a payment requires_capture without a hold job: nothing will capture, cancel or expire it',
  authorization_unresolved:
    'I7: an authorization neither captured nor canceled after capture_before + the grace period (the expiry never voided it)',
  hold_dead_letter_missing:
    'I7: a hold job is dead but its payment.authorized is not on the dead-letter topic',
  hold_event_missing:
    'hold: an authorized payment without payment.authorized, or a canceled one without payment.canceled, on the topic',
  // Webhooks (verify-webhooks.ts, issue 27)
  webhook_event_missing:
    'webhook: a settled or failed payment, or a refund outcome, of a merchant that had an endpoint before it began, has no stored webhook event',
  webhook_delivery_missing:
    'webhook: a stored event has no delivery to an endpoint subscribed to it (created after the endpoint, while it was enabled)',
  webhook_delivery_unresolved:
    'webhook: a delivery still pending after the grace period (neither delivered nor failed)',
  webhook_not_received:
    "webhook: a delivery is delivered but the endpoint's receiver recorded no 2xx answer for its webhook-id",
  webhook_reidentified:
    'webhook: one event (endpoint, subject, type, data.id) reached the receiver under more than one webhook-id',
  webhook_wrong_id:
    "webhook: a request's webhook-id is not its CloudEvent's id, or not the event id minted for (type, data.id)",
  webhook_bad_signature:
    "webhook: a request's signature does not verify with the endpoint's secrets",
  webhook_out_of_order:
    "webhook: a payment's later event was first received (2xx) before an earlier event to the same endpoint",
} as const;

export type ViolationCode = keyof typeof VIOLATIONS;

/** One thing found wrong: which rule, which payment (when it is about one), and the facts. */
export interface Violation {
  code: ViolationCode;
  paymentId?: string;
  detail: string;
}
