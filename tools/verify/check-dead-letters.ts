import type { DeadLetterCopies, DeadLetterReason } from './event-log.js';
import type { Violation } from './violation.js';

/**
 * Each exhausted charge and refund is on the dead-letter topic exactly once per life of its
 * job (issue 25). That a dead job has a letter at all is checked with the payment or refund
 * (`dead_letter_missing`, `refund_dead_letter_missing`); this checks that none has more than
 * it may:
 *
 * - a job dies at most once, plus once more per revival, and only `dlq:replay` revives one:
 *   each revival was a replayed copy of the event carrying a token that job had not seen, so
 *   the letters of an event id are at most 1 + the distinct replay tokens on its copies on the
 *   payments topic;
 * - a letter names the record its job was given up on: two letters of one event id from the
 *   same source record are one letter sent twice, whatever the replays (a revived charge dies
 *   from the replayed copy, at another offset).
 *
 * Only letters keyed by a payment in `paymentIds` (the payments judged: charges and refunds
 * alike are keyed by the payment id) are judged. Pure.
 */
export function checkDeadLetters(
  letters: ReadonlyMap<string, DeadLetterCopies>,
  replayTokens: ReadonlyMap<string, ReadonlySet<string>>,
  paymentIds: ReadonlySet<string>,
): Violation[] {
  const violations: Violation[] = [];
  for (const [eventId, copies] of letters) {
    const paymentId = [...copies.keys].find(
      (key): key is string => key !== null && paymentIds.has(key),
    );
    if (paymentId === undefined) continue;
    const replays = replayTokens.get(eventId)?.size ?? 0;
    const problems: string[] = [];
    if (copies.count > 1 + replays)
      problems.push(`${copies.count} dead letters with event id ${eventId}, ${replays} replays`);
    for (const [source, n] of copies.bySource)
      if (n > 1) problems.push(`${n} dead letters of event ${eventId} from one record (${source})`);
    if (problems.length > 0)
      violations.push({ code: 'duplicate_dead_letter', paymentId, detail: problems.join('; ') });
  }
  return violations;
}

/**
 * Error classes of a call that never reached the acquirer (DESIGN 106, 110): refused, a connect
 * that timed out or 503 before processing (`acquirer_unavailable`), 429, the breaker open, a 401
 * (the link's token refused, DESIGN 121). Such a
 * call is not an attempt and never dead-letters a job, so a letter with one of them is an outage
 * that cost a payment. The simulator's retryable answers (`tok_unavailable`, `tok_transient_N`,
 * a random transient failure) are `acquirer_transient`: answered, legitimately dead-lettered
 * after the retry window.
 */
export const NOT_SENT_ERROR_CLASSES: ReadonlySet<string> = new Set([
  'acquirer_unavailable',
  'acquirer_rate_limited',
  'acquirer_breaker_open',
  'acquirer_unauthorized',
]);

/**
 * Dead letters counted by reason (error class), those of `paymentIds` only when given (a
 * scope), and one `acquirer_unavailable_dead_letter` violation per letter whose reason says
 * the acquirer was never reached. Pure.
 */
export function checkDeadLetterReasons(
  reasons: readonly DeadLetterReason[],
  paymentIds: ReadonlySet<string> | null,
): { byReason: Record<string, number>; violations: Violation[] } {
  const byReason: Record<string, number> = {};
  const violations: Violation[] = [];
  for (const letter of reasons) {
    if (paymentIds && (letter.key === null || !paymentIds.has(letter.key))) continue;
    byReason[letter.errorClass] = (byReason[letter.errorClass] ?? 0) + 1;
    if (NOT_SENT_ERROR_CLASSES.has(letter.errorClass))
      violations.push({
        code: 'acquirer_unavailable_dead_letter',
        ...(letter.key === null ? {} : { paymentId: letter.key }),
        detail: `dead letter ${letter.eventId ?? 'without an event id'}: ${letter.errorClass}`,
      });
  }
  return { byReason, violations };
}
