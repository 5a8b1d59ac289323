import type { Attributes } from '@opentelemetry/api';
import { acquirerMetrics } from '../acquirer/acquirer-metrics.js';
import { classifyAcquirerFailure, inAcquirerSpan } from '../acquirer/acquirer.js';
import {
  authorizeIdempotencyKey,
  type HoldAcquirer,
  type HoldResult,
} from '../acquirer/hold-acquirer.js';
import type { Failure } from '../jobs/job-table.js';
import type { AttemptAnswer, InquiryAnswer } from '../jobs/job-worker.js';
import type { FinalStatus, SettlementJob } from './settlement-job-store.js';
import { settlementMetrics } from './settlement-metrics.js';

/** A manual payment met by a settlement built without a HoldAcquirer: retried, then dead. */
export const NO_HOLD_ACQUIRER: Failure = {
  errorClass: 'hold_acquirer_missing',
  message: 'this settlement has no acquirer for authorizations (HoldAcquirer)',
};

/**
 * One call of the two-step operations (authorize, capture, void) as a job's attempt answer, in
 * its CLIENT span with its own timeout: a final answer, or the failure classified as a charge's
 * (classifyAcquirerFailure: not sent, unknown, answered). Never rejects.
 */
export async function callHold(
  name: string,
  attributes: Attributes,
  call: (signal: AbortSignal) => Promise<HoldResult>,
  timeoutMs: number,
): Promise<{ kind: 'answer'; answer: HoldResult } | { kind: 'failure'; failure: Failure }> {
  try {
    const answer = await inAcquirerSpan(name, attributes, () =>
      call(AbortSignal.timeout(timeoutMs)),
    );
    settlementMetrics.attempts.inc({ result: answer.outcome });
    return { kind: 'answer', answer };
  } catch (error) {
    const failure = classifyAcquirerFailure(error);
    settlementMetrics.attempts.inc({ result: failure.errorClass });
    return { kind: 'failure', failure };
  }
}

/**
 * An inquiry by an idempotency key after an unknown outcome (DESIGN 106): the books' answer,
 * `null` when the acquirer never carried it out (safe to send), or the inquiry's failure.
 * Counted in acquirer_inquiries_total under `kind`. Never rejects.
 */
export async function inquireHold(
  kind: 'authorize' | 'capture' | 'void',
  attributes: Attributes,
  inquire: (signal: AbortSignal) => Promise<HoldResult | null>,
  timeoutMs: number,
): Promise<{ kind: 'answer'; answer: HoldResult | null } | { kind: 'failure'; failure: Failure }> {
  try {
    const found = await inAcquirerSpan(`acquirer ${kind} inquiry`, attributes, async () => {
      const answer = await inquire(AbortSignal.timeout(timeoutMs));
      return answer ?? { outcome: 'not_found' as const };
    });
    const result = found.outcome === 'not_found' ? 'not_found' : 'found';
    acquirerMetrics.inquiries.inc({ kind, result });
    return { kind: 'answer', answer: found.outcome === 'not_found' ? null : found };
  } catch (error) {
    const failure = classifyAcquirerFailure(error);
    acquirerMetrics.inquiries.inc({ kind, result: failure.errorClass });
    return { kind: 'failure', failure };
  }
}

/** An authorization's answer as the payment's new status: requires_capture, or failed. */
function authorizedOf(answer: HoldResult): FinalStatus {
  return answer.outcome === 'approved'
    ? { status: 'requires_capture' }
    : { status: 'failed', failureCode: answer.code };
}

const attributesOf = (job: SettlementJob) => ({
  'payment.id': job.paymentId,
  'settlement.attempt': job.attempts,
});

/** A manual payment's settlement attempt: authorize (a hold) with its key; never rejects. */
export async function callAuthorize(
  holds: HoldAcquirer | undefined,
  job: SettlementJob,
  timeoutMs: number,
): Promise<AttemptAnswer<FinalStatus>> {
  if (!holds) return { kind: 'failure', failure: NO_HOLD_ACQUIRER };
  const request = {
    idempotencyKey: authorizeIdempotencyKey(job.paymentId),
    paymentId: job.paymentId,
    amount: job.amount,
    currency: job.currency,
    source: job.source,
  };
  const called = await callHold(
    'acquirer authorize',
    attributesOf(job),
    (signal) => holds.authorize(request, signal),
    timeoutMs,
  );
  return called.kind === 'failure' ? called : { kind: 'final', final: authorizedOf(called.answer) };
}

/**
 * After an authorization whose outcome is unknown: the books' answer for its key. An acquirer
 * without the inquiry is sent the call again (not found), its key the only guard, as charges.
 */
export async function inquireAuthorization(
  holds: HoldAcquirer | undefined,
  job: SettlementJob,
  timeoutMs: number,
): Promise<InquiryAnswer<FinalStatus>> {
  const inquire = holds?.inquireAuthorization?.bind(holds);
  if (!inquire) return { kind: 'not_found' };
  const key = authorizeIdempotencyKey(job.paymentId);
  const found = await inquireHold(
    'authorize',
    attributesOf(job),
    (signal) => inquire(key, signal),
    timeoutMs,
  );
  if (found.kind === 'failure') return found;
  return found.answer === null
    ? { kind: 'not_found' }
    : { kind: 'found', final: authorizedOf(found.answer) };
}
