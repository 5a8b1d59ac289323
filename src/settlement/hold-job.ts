import {
  captureIdempotencyKey,
  voidIdempotencyKey,
  type HoldAcquirer,
  type HoldResult,
} from '../acquirer/hold-acquirer.js';
import { toKafkaRecord } from '../outbox/cloud-event.js';
import type { JobLetter } from '../jobs/dead-letters/dead-letter-job.js';
import type { Failure } from '../jobs/job-table.js';
import type { AttemptAnswer, InquiryAnswer } from '../jobs/job-worker.js';
import { paymentEventId } from '../payments/payment-event-id.js';
import { decideExpiry, type StoredDecision } from '../payments/payment-hold-updates.js';
import { toPaymentResource } from '../payments/payment-resource.js';
import type { Queryable } from '../platform/database/db.js';
import { callHold, inquireHold, NO_HOLD_ACQUIRER } from './call-hold-acquirer.js';
import type { HoldFinal, HoldJob } from './hold-job-store.js';

/** What a hold job's attempt needs besides the job. */
export interface HoldCallDeps {
  db: Queryable;
  holds: HoldAcquirer | undefined;
  timeoutMs: number;
}

/** The expiry found the payment not yet past capture_before (clocks): look again in a second. */
const NOT_EXPIRED: Failure = {
  errorClass: 'hold_not_expired',
  message: 'no decision and capture_before not reached',
  delivery: 'not_sent',
  notBeforeMs: 1_000,
};

const attributesOf = (job: HoldJob) => ({ 'payment.id': job.id, 'hold.attempt': job.attempts });

/** The decision the job carries, or the expiry's (taken now, if the window has passed). */
async function decisionOf(deps: HoldCallDeps, job: HoldJob): Promise<StoredDecision | Failure> {
  if (job.decision) return job.decision;
  try {
    return (await decideExpiry(deps.db, job.id)) ?? NOT_EXPIRED;
  } catch (error) {
    return {
      errorClass: 'hold_decision_failed',
      message: error instanceof Error ? error.message : String(error),
      delivery: 'not_sent',
    };
  }
}

/**
 * One attempt of a hold job (DESIGN 132): the decision (the API's, or the expiry's taken here),
 * then the acquirer: a capture with `capture_<id>` (approved: settled with the amount; declined:
 * the hold voided with `void_<id>` and the payment failed with the capture's code, DESIGN 133),
 * or a void with `void_<id>` (approved: canceled). A void the acquirer declines is retried and,
 * at the limit, dead-lettered. Never rejects.
 */
export async function attemptHold(
  deps: HoldCallDeps,
  job: HoldJob,
): Promise<AttemptAnswer<HoldFinal>> {
  const { holds } = deps;
  if (!holds) return { kind: 'failure', failure: NO_HOLD_ACQUIRER };
  const decision = await decisionOf(deps, job);
  if ('errorClass' in decision) return { kind: 'failure', failure: decision };
  const attributes = attributesOf(job);
  const common = { paymentId: job.id, source: job.payment.source };
  const voidHold = () =>
    callHold(
      'acquirer void',
      attributes,
      (signal) => holds.void({ ...common, idempotencyKey: voidIdempotencyKey(job.id) }, signal),
      deps.timeoutMs,
    );
  if (decision.action === 'cancel') {
    const voided = await voidHold();
    if (voided.kind === 'failure') return voided;
    return voided.answer.outcome === 'approved'
      ? { kind: 'final', final: { status: 'canceled', reason: decision.cancellation_reason } }
      : { kind: 'failure', failure: voidDeclined(voided.answer) };
  }
  const amount = Number(decision.amount);
  const captured = await callHold(
    'acquirer capture',
    attributes,
    (signal) =>
      holds.capture(
        {
          ...common,
          idempotencyKey: captureIdempotencyKey(job.id),
          amount,
          currency: job.payment.currency,
        },
        signal,
      ),
    deps.timeoutMs,
  );
  if (captured.kind === 'failure') return captured;
  if (captured.answer.outcome === 'approved') {
    return { kind: 'final', final: { status: 'settled', amountCaptured: amount } };
  }
  // The issuer refused the capture: the hold is released before the payment is failed, so no
  // money stays held for a payment that will never be captured.
  const { code } = captured.answer;
  const voided = await voidHold();
  if (voided.kind === 'failure') return voided;
  return { kind: 'final', final: { status: 'failed', failureCode: code } };
}

function voidDeclined(answer: HoldResult): Failure {
  const code = answer.outcome === 'declined' ? answer.code : 'unknown';
  return { errorClass: 'void_declined', message: `the acquirer declined the void: ${code}` };
}

/**
 * After a capture or void whose outcome is unknown: the books' answer for the decision's key. A
 * capture found declined, or a void found declined, is sent again (not found): the keys return
 * the stored answers, and the attempt does what follows them. Never rejects.
 */
export async function inquireHoldJob(
  deps: HoldCallDeps,
  job: HoldJob,
): Promise<InquiryAnswer<HoldFinal>> {
  const { holds } = deps;
  const decision = job.decision;
  if (!holds || !decision) return { kind: 'not_found' };
  const capture = decision.action === 'capture';
  const inquire = capture ? holds.inquireCapture?.bind(holds) : holds.inquireVoid?.bind(holds);
  if (!inquire) return { kind: 'not_found' };
  const key = capture ? captureIdempotencyKey(job.id) : voidIdempotencyKey(job.id);
  const found = await inquireHold(
    capture ? 'capture' : 'void',
    attributesOf(job),
    (signal) => inquire(key, signal),
    deps.timeoutMs,
  );
  if (found.kind === 'failure') return found;
  if (found.answer?.outcome !== 'approved') return { kind: 'not_found' };
  return {
    kind: 'found',
    final: capture
      ? { status: 'settled', amountCaptured: Number(decision.amount) }
      : { status: 'canceled', reason: decision.cancellation_reason },
  };
}

/**
 * An exhausted hold job's dead letter: the payment's `payment.authorized` CloudEvent, keyed by
 * the payment id. The payment stays requires_capture with its decision; the letter names the job
 * (kind `hold`); dlq:replay puts it back with a token, and settlement's consumer revives the job.
 */
export function holdLetter(job: HoldJob, paymentsTopic: string): JobLetter {
  const eventId = paymentEventId(job.id, 'payment.authorized');
  const authorized = toKafkaRecord({
    eventId,
    eventType: 'payment.authorized',
    aggregateId: job.id,
    data: toPaymentResource(job.payment),
    createdAt: job.payment.created_at,
  });
  return {
    eventId,
    record: {
      topic: paymentsTopic,
      partition: -1,
      offset: '-1',
      key: authorized.key,
      value: authorized.value,
    },
  };
}
