import { paymentEventId, type PaymentEventType } from '../../src/payments/payment-event-id.js';
import { isEventType as isContractType } from '../../src/events/event-types.js';
import { noPaymentEvents, type EventCopy, type PaymentEvents } from './event-log.js';
import { checkHold } from './check-hold.js';
import type { HoldFacts } from './load-hold-facts.js';
import type { PaymentFacts } from './load-payment-facts.js';
import type { Violation, ViolationCode } from './violation.js';

export interface CheckOptions {
  /**
   * A payment younger than this (or a terminal one whose result is this recent) may still be on
   * its way: what it lacks is not held against it yet, and it is counted as in flight.
   */
  graceSeconds: number;
  /** IDEMPOTENCY_KEY_TTL_SECONDS: before this age a payment's key record must still exist. */
  keyTtlSeconds: number;
}

export interface PaymentVerdict {
  violations: Violation[];
  /** Some check was suspended because the payment is within the grace period. */
  inFlight: boolean;
  /** Processing with a dead settlement job whose event is on the dead-letter topic (I7 allows it). */
  deadLettered: boolean;
  /**
   * Copies of payment.created after its result (not dlq:replay's): reported, not a violation.
   * A relay sends only while it holds the rows' lease, checked right before each send; a relay
   * process paused between that check and the send (SIGSTOP, a VM pause) sends a late copy
   * nothing local can stop: the same event id, which consumers drop (DESIGN 39).
   */
  staleCopies: number;
}

/**
 * Judges one payment from its database facts and, when the topics were read, its events
 * (`events` undefined = no copy on the topic; `deadLetters` undefined = topics not read).
 * Pure: the rules of DESIGN.md record 62, one violation per broken rule. `hold` is given for a
 * manual payment: its charge checks are then the hold's (checkHold).
 */
export function checkPayment(
  facts: PaymentFacts,
  topics: { events: PaymentEvents | undefined; deadLetters: ReadonlyMap<string, number> } | null,
  options: CheckOptions,
  hold?: HoldFacts,
): PaymentVerdict {
  const violations: Violation[] = [];
  const flag = (code: ViolationCode, detail: string) => {
    violations.push({ code, paymentId: facts.id, detail });
  };
  const young = facts.ageSeconds <= options.graceSeconds;
  const resultIsRecent = facts.updatedAgeSeconds <= options.graceSeconds;
  let staleCopies = 0;
  const terminal = facts.status === 'settled' || facts.status === 'failed';
  const createdId = paymentEventId(facts.id, 'payment.created');
  let inFlight = false;
  let deadLettered = false;
  let holdInFlight = false;
  let holdDeadLettered = false;

  // I1 / I6: the key and its stored response.
  if (facts.keyRecords === 0 && facts.ageSeconds < options.keyTtlSeconds) {
    flag(
      'payment_without_key',
      `created ${Math.round(facts.ageSeconds)} s ago, keys live ${options.keyTtlSeconds} s`,
    );
  }
  if (facts.keyRecords > 1) flag('key_shared_by_payments', `${facts.keyRecords} key records`);
  if (facts.foreignKeyRecords > 0)
    flag('cross_merchant_key', `${facts.foreignKeyRecords} records of other merchants`);
  if (facts.mismatchedResponses > 0)
    flag('stored_response_mismatch', `${facts.mismatchedResponses} stored responses`);

  // I4: the acquirer's books (a manual payment's are its hold's: check-hold.ts).
  if (hold) {
    const verdict = checkHold(facts, hold, topics, options.graceSeconds);
    violations.push(...verdict.violations);
    holdInFlight = verdict.inFlight;
    holdDeadLettered = verdict.deadLettered;
  } else {
    const charges = `${facts.approvedCharges} approved and ${facts.declinedCharges} declined charges, ${facts.freshApprovedCalls} approving calls that were not replays (${facts.calls} calls)`;
    if (facts.approvedCharges > 1 || facts.freshApprovedCalls > 1)
      flag('duplicate_charge', charges);
    else if (facts.approvedCharges + facts.declinedCharges > 1)
      flag('conflicting_charges', charges);
    if (facts.status === 'settled' && facts.approvedCharges === 0)
      flag('settled_without_charge', charges);
    if (facts.status === 'failed' && facts.declinedCharges === 0)
      flag('failed_without_decline', `failure_code ${facts.failureCode ?? 'null'}; ${charges}`);
    if (facts.approvedCharges > 0 && (facts.status === 'failed' || facts.status === 'pending'))
      flag('charged_not_settled', `status ${facts.status}; ${charges}`);
    if (facts.declinedCharges > 0 && (facts.status === 'settled' || facts.status === 'pending'))
      flag('declined_not_failed', `status ${facts.status}; ${charges}`);
  }

  // I7 and the settlement job.
  if (facts.status === 'pending') {
    if (young) inFlight = true;
    else flag('stuck_pending', `pending for ${Math.round(facts.ageSeconds)} s`);
  } else if (facts.status === 'processing') {
    if (facts.jobState === null) {
      // The status change and the job are written in one transaction: never a race.
      flag('missing_settlement', 'processing, no settlement job');
    } else if (facts.jobState === 'pending') {
      if (young) inFlight = true;
      else
        flag(
          'unresolved_settlement',
          `job pending after ${facts.jobAttempts ?? 0} attempts, payment ${Math.round(facts.ageSeconds)} s old`,
        );
    } else if (topics) {
      if ((topics.deadLetters.get(createdId) ?? 0) > 0) deadLettered = true;
      else flag('dead_letter_missing', `no dead letter with event id ${createdId}`);
    } else {
      deadLettered = true;
    }
  } else if (facts.jobState !== null) {
    flag('terminal_with_job', `status ${facts.status}, job ${facts.jobState}`);
  }
  if (facts.status !== 'pending' && !facts.processedCreatedIds.includes(createdId))
    flag(
      'missing_dedup_record',
      `processed_events has ${facts.processedCreatedIds.join(', ') || 'nothing'}`,
    );
  for (const id of facts.processedCreatedIds)
    if (id !== createdId) flag('wrong_event_id', `processed_events ${id}, expected ${createdId}`);

  // I2 / I3: outbox rows still in the table.
  for (const row of facts.outbox) {
    const expected = isEventType(row.type) ? paymentEventId(facts.id, row.type) : 'none';
    if (row.eventId !== expected)
      flag('wrong_event_id', `outbox ${row.type} ${row.eventId}, expected ${expected}`);
    if (row.state === 'parked') flag('outbox_parked', `${row.type} ${row.eventId}`);
    if (row.state === 'pending') {
      if (row.ageSeconds > options.graceSeconds)
        flag('outbox_unpublished', `${row.type} pending for ${Math.round(row.ageSeconds)} s`);
      else inFlight = true;
    }
    if (row.type === 'payment.settled' || row.type === 'payment.failed') {
      if (!terminal) flag('result_event_for_unfinished_payment', `outbox ${row.type}`);
      else if (row.type !== `payment.${facts.status}`)
        flag('conflicting_result_events', `outbox ${row.type}, status ${facts.status}`);
    }
  }

  if (topics) {
    const events = topics.events ?? noPaymentEvents();
    const flagIds = (type: PaymentEventType, copies: readonly EventCopy[]) => {
      const ids = new Set(copies.map((copy) => copy.eventId));
      if (ids.size > 1) flag('duplicate_event_ids', `${type}: ${[...ids].join(', ')}`);
      const expected = paymentEventId(facts.id, type);
      for (const id of ids)
        if (id !== expected) flag('wrong_event_id', `${type} ${id}, expected ${expected}`);
    };
    flagIds('payment.created', events.created);
    flagIds('payment.settled', events.settled);
    flagIds('payment.failed', events.failed);
    flagIds('payment.authorized', events.authorized);
    flagIds('payment.canceled', events.canceled);
    if (events.keyMismatches > 0)
      flag('malformed_event', `${events.keyMismatches} records keyed by another id`);

    if (events.created.length === 0) {
      if (facts.status === 'pending' && young) inFlight = true;
      else flag('missing_created_event', `status ${facts.status}`);
    }
    const results = [...events.settled, ...events.failed];
    if (terminal) {
      const own = facts.status === 'settled' ? events.settled : events.failed;
      if (own.length === 0) {
        if (resultIsRecent) inFlight = true;
        else flag('missing_result_event', `status ${facts.status}, no payment.${facts.status}`);
      }
      if (own.length !== results.length)
        flag(
          'conflicting_result_events',
          `status ${facts.status}; ${events.settled.length} settled and ${events.failed.length} failed copies`,
        );
    } else if (results.length > 0) {
      flag('result_event_for_unfinished_payment', `status ${facts.status}`);
    }
    const first = events.created[0];
    const partitions = new Set([...events.created, ...results].map((copy) => copy.partition));
    const firstResult = results.reduce<EventCopy | undefined>(
      (min, copy) => (min === undefined || copy.offset < min.offset ? copy : min),
      undefined,
    );
    if (partitions.size > 1) {
      flag('events_out_of_order', `copies on partitions ${[...partitions].join(', ')}`);
    } else if (first && firstResult && firstResult.offset < first.offset) {
      flag(
        'events_out_of_order',
        `result at offset ${firstResult.offset}, payment.created at ${first.offset}`,
      );
    } else if (firstResult) {
      staleCopies = events.created.filter(
        (copy) => !copy.replayed && copy.offset > firstResult.offset,
      ).length;
    }
  }
  return {
    violations,
    inFlight: (inFlight || holdInFlight) && violations.length === 0,
    deadLettered: deadLettered || holdDeadLettered,
    staleCopies,
  };
}

function isEventType(type: string): type is PaymentEventType {
  return isContractType(type) && type.startsWith('payment.');
}
