import type { Queryable } from '../../src/platform/database/db.js';
import { scopeCte, scopeParameters, type VerifyScope } from './verify-scope.js';

export interface DrainState {
  /**
   * Pending payments, processing ones whose job is still retrying (not dead), and authorized ones
   * whose hold job is due (a capture or cancel decided, or the window over) and not dead.
   */
  unsettled: number;
  /** Outbox rows of those payments not yet published (and not parked). */
  unpublished: number;
  /**
   * Webhook deliveries of those payments' events still pending (being retried), of those older
   * than the webhook grace (verify --webhook-grace): younger ones are not waited for.
   */
  undelivered: number;
  /**
   * Dead letters of those payments stored but not yet on the dead-letter topic: a dead job's
   * letter is published after its commit, so without this a verify right after a drain could
   * judge the letter missing.
   */
  unsentLetters: number;
}

export async function readDrainState(
  db: Queryable,
  scope: VerifyScope,
  webhookGraceSeconds = 0,
): Promise<DrainState> {
  const { rows } = await db.query<DrainState>(
    `WITH ${scopeCte()}
     SELECT (SELECT count(*) FROM scope s
              WHERE s.status = 'pending'
                 OR (s.status = 'processing' AND NOT EXISTS (
                      SELECT 1 FROM settlement_jobs j WHERE j.payment_id = s.id AND j.state = 'dead'))
                 OR (s.status = 'requires_capture' AND EXISTS (
                      SELECT 1 FROM hold_jobs h WHERE h.payment_id = s.id AND h.state = 'pending'
                         AND h.next_attempt_at <= now()))
            )::int AS unsettled,
            (SELECT count(*) FROM outbox o JOIN scope s ON s.id = o.aggregate_id
              WHERE o.published_at IS NULL AND o.parked_at IS NULL)::int AS unpublished,
            (SELECT count(*) FROM webhook_deliveries d JOIN scope s ON s.id = d.payment_id
              WHERE d.status = 'pending'
                AND d.created_at <= now() - make_interval(secs => $4::double precision)
            )::int AS undelivered,
            (SELECT count(*) FROM dead_letters l JOIN scope s ON s.id::text = l.message_key
              WHERE l.published_at IS NULL)::int AS "unsentLetters"`,
    [...scopeParameters(scope), webhookGraceSeconds],
  );
  return rows[0] ?? { unsettled: 0, unpublished: 0, undelivered: 0, unsentLetters: 0 };
}

/**
 * Lets the pipeline finish before judging it: polls until every payment in scope is terminal or
 * dead-lettered with its letter on the topic, every outbox row is published and every webhook
 * delivery of their events is delivered or failed, or `seconds` have passed. Resolves with the
 * last state seen and how long it waited.
 */
export async function waitForDrain(
  db: Queryable,
  scope: VerifyScope,
  seconds: number,
  webhookGraceSeconds = 0,
  pollMs = 500,
): Promise<DrainState & { drained: boolean; waitedSeconds: number }> {
  const started = Date.now();
  for (;;) {
    const state = await readDrainState(db, scope, webhookGraceSeconds);
    const waitedSeconds = Math.round((Date.now() - started) / 100) / 10;
    const drained =
      state.unsettled === 0 &&
      state.unpublished === 0 &&
      state.undelivered === 0 &&
      state.unsentLetters === 0;
    if (drained || Date.now() - started >= seconds * 1000)
      return { ...state, drained, waitedSeconds };
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
