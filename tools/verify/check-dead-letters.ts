import type { DeadLetterCopies } from './event-log.js';
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
