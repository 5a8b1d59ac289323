import type pg from 'pg';
import { sleep, type Timeline } from './timeline.js';

/**
 * What the "freeze Kafka while dead letters are due" fault needs besides the stack: the run's
 * database as its owner (to watch jobs and `dead_letters`), one API and a merchant's key (to
 * start the charges and refunds that will exhaust during the freeze).
 */
export interface DeadLetterProbe {
  db: pg.Pool;
  apiUrl: string;
  apiKey: string;
  runId: string;
  /** REFUND_MAX_ATTEMPTS of the run's settlement processes (refunds exhaust during the fault). */
  refundMaxAttempts: number;
}

/** Charges (`tok_unavailable`) and refunds (of `tok_refund_unavailable` payments) started. */
const CHARGES = 6;
const REFUNDS = 3;
/** Bounds of each wait: a step that does not finish by then is noted and the fault goes on. */
const SETTLE_WAIT_MS = 30_000;
const RETRYING_WAIT_MS = 30_000;
const EXHAUST_WAIT_MS = 20_000;
/** A bounded dead-letter send fails within ~15 s at the run's 3 s Kafka requests (main.ts). */
const FAILED_SEND_WAIT_MS = 45_000;
const DRAIN_WAIT_MS = 60_000;
const HTTP_TIMEOUT_MS = 10_000;

export interface DueWork {
  charges: string[];
  refunds: string[];
}

/**
 * Before the freeze: settles REFUNDS payments whose refunds the simulator will always fail
 * transiently, then starts their refunds and CHARGES payments that always fail transiently,
 * and waits until every one of their jobs made its first attempt. With Kafka frozen next, each
 * exhausts its attempts (a few seconds of backoff) while the broker does not answer: its dead
 * letter is due then, and must reach the topic once after the thaw.
 */
export async function startExhaustingWork(
  probe: DeadLetterProbe,
  timeline: Timeline,
): Promise<DueWork> {
  const tag = `${probe.runId}-dlq-${Date.now().toString(36)}`;
  const refundable: string[] = [];
  for (let i = 0; i < REFUNDS; i++) {
    const id = await createPayment(probe, `${tag}-refundable-${i}`, 'tok_refund_unavailable');
    if (id !== null) refundable.push(id);
  }
  const settled = await waitFor(SETTLE_WAIT_MS, async () => {
    const { rows } = await probe.db.query<{ id: string }>(
      `SELECT id::text FROM payments WHERE id = ANY($1::uuid[]) AND status = 'settled'`,
      [refundable],
    );
    return rows.length === refundable.length ? rows.map((row) => row.id) : null;
  });
  const refundOf = settled ?? refundable;
  const refunds: string[] = [];
  for (const [i, paymentId] of refundOf.entries()) {
    const id = await post(probe, `/payments/${paymentId}/refunds`, `${tag}-refund-${i}`, {
      amount: 100,
    });
    if (id !== null) refunds.push(id);
  }
  const charges: string[] = [];
  for (let i = 0; i < CHARGES; i++) {
    const id = await createPayment(probe, `${tag}-charge-${i}`, 'tok_unavailable');
    if (id !== null) charges.push(id);
  }
  const retrying = await waitFor(RETRYING_WAIT_MS, async () => {
    const { rows } = await probe.db.query<{ charges: number; refunds: number }>(
      `SELECT (SELECT count(*)::int FROM settlement_jobs
                WHERE payment_id = ANY($1::uuid[]) AND attempts >= 1) AS charges,
              (SELECT count(*)::int FROM refund_jobs
                WHERE refund_id = ANY($2::uuid[]) AND attempts >= 1) AS refunds`,
      [charges, refunds],
    );
    const row = rows[0];
    return row && row.charges === charges.length && row.refunds === refunds.length ? true : null;
  });
  timeline.note(
    `${charges.length} charges (tok_unavailable) and ${refunds.length} refunds (tok_refund_unavailable) ` +
      (retrying ? 'retrying' : 'started, not all attempted yet') +
      (settled ? '' : ` (only some refundable payments settled within ${SETTLE_WAIT_MS} ms)`),
  );
  return { charges, refunds };
}

/**
 * During the freeze: waits until every charge of `work` is dead and every refund used its
 * attempts (dead, or waiting for its letter to be taken), bounded. Returns whether they did.
 */
export async function waitUntilExhausted(probe: DeadLetterProbe, work: DueWork): Promise<boolean> {
  const done = await waitFor(EXHAUST_WAIT_MS, async () => {
    const { rows } = await probe.db.query<{ charges: number; refunds: number }>(
      `SELECT (SELECT count(*)::int FROM settlement_jobs
                WHERE payment_id = ANY($1::uuid[]) AND state = 'dead') AS charges,
              (SELECT count(*)::int FROM refund_jobs
                WHERE refund_id = ANY($2::uuid[]) AND (state = 'dead' OR attempts >= $3)) AS refunds`,
      [work.charges, work.refunds, probe.refundMaxAttempts],
    );
    const row = rows[0];
    return row && row.charges === work.charges.length && row.refunds === work.refunds.length
      ? true
      : null;
  });
  return done === true;
}

/**
 * During the freeze: waits until a bounded dead-letter send failed (a due letter rescheduled
 * with its error), so the letters are sent again after the thaw by a new producer while the
 * frozen broker still holds the failed send's requests: the duplicate defect 2 of issue 25 is
 * about. Resolves with how long that took, or null after FAILED_SEND_WAIT_MS.
 */
export async function waitForFailedSend(probe: DeadLetterProbe): Promise<number | null> {
  const started = Date.now();
  const failed = await waitFor(FAILED_SEND_WAIT_MS, async () => {
    const { rows } = await probe.db.query<{ failed: number }>(
      `SELECT count(*)::int AS failed FROM dead_letters
        WHERE published_at IS NULL AND last_error IS NOT NULL`,
    );
    return (rows[0]?.failed ?? 0) > 0 ? true : null;
  });
  return failed ? Date.now() - started : null;
}

export interface DueLetters {
  /** `dead_letters` rows not yet on the topic. */
  unpublished: number;
  /** The newest of them: the drain is over once none up to it is unpublished. */
  upToId: string | null;
  /** Of `unpublished`, those whose last send failed (rescheduled with its error). */
  failedSends: number;
  /** Refunds that used every attempt and whose job is not dead yet (their letter not taken). */
  exhaustedRefunds: number;
}

/** The dead letters due at this moment (read just before the thaw). */
export async function dueLetters(probe: DeadLetterProbe): Promise<DueLetters> {
  const { rows } = await probe.db.query<{
    unpublished: number;
    failed: number;
    up_to: string | null;
    refunds: number;
  }>(
    `SELECT (SELECT count(*)::int FROM dead_letters WHERE published_at IS NULL) AS unpublished,
            (SELECT count(*)::int FROM dead_letters
              WHERE published_at IS NULL AND last_error IS NOT NULL) AS failed,
            (SELECT max(id)::text FROM dead_letters WHERE published_at IS NULL) AS up_to,
            (SELECT count(*)::int FROM refund_jobs
              WHERE state = 'pending' AND attempts >= $1) AS refunds`,
    [probe.refundMaxAttempts],
  );
  const row = rows[0];
  return {
    unpublished: row?.unpublished ?? 0,
    failedSends: row?.failed ?? 0,
    upToId: row?.up_to ?? null,
    exhaustedRefunds: row?.refunds ?? 0,
  };
}

/**
 * After the thaw: how long until every letter due at the thaw is on the topic (its row
 * published) and every refund of `work` is dead; null when that took longer than DRAIN_WAIT_MS.
 */
export async function waitForDrain(
  probe: DeadLetterProbe,
  due: DueLetters,
  work: DueWork,
): Promise<number | null> {
  const started = Date.now();
  const drained = await waitFor(DRAIN_WAIT_MS, async () => {
    const { rows } = await probe.db.query<{ letters: number; refunds: number }>(
      `SELECT (SELECT count(*)::int FROM dead_letters
                WHERE published_at IS NULL AND id <= $1::bigint) AS letters,
              (SELECT count(*)::int FROM refund_jobs
                WHERE refund_id = ANY($2::uuid[]) AND state <> 'dead') AS refunds`,
      [due.upToId ?? '0', work.refunds],
    );
    const row = rows[0];
    return row && row.letters === 0 && row.refunds === 0 ? true : null;
  });
  return drained ? Date.now() - started : null;
}

async function createPayment(
  probe: DeadLetterProbe,
  key: string,
  source: string,
): Promise<string | null> {
  return post(probe, '/payments', key, {
    amount: 1_000,
    currency: 'EUR',
    source,
    description: 'chaos: exhausts its attempts while Kafka is frozen',
  });
}

/**
 * A careful client's POST: the same key and body again on no answer, 409, 429 or 5xx, a few
 * times. Resolves with the created resource's id, or null when it never got a 2xx.
 */
async function post(
  probe: DeadLetterProbe,
  path: string,
  key: string,
  body: Record<string, unknown>,
): Promise<string | null> {
  for (let attempt = 1; attempt <= 5; attempt++) {
    try {
      const response = await fetch(`${probe.apiUrl}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${probe.apiKey}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(HTTP_TIMEOUT_MS),
      });
      const answer = (await response.json().catch(() => ({}))) as { id?: unknown };
      if (response.ok && typeof answer.id === 'string') return answer.id;
      if (response.status < 409 || response.status === 422) return null;
    } catch {
      // No answer: the same request again.
    }
    await sleep(500 * attempt);
  }
  return null;
}

/** Polls `check` every 250 ms until it returns a value, or null after `timeoutMs`. */
async function waitFor<T>(timeoutMs: number, check: () => Promise<T | null>): Promise<T | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const value = await check();
      if (value !== null) return value;
    } catch {
      // The database is busy or away for a moment: ask again until the deadline.
    }
    if (Date.now() >= deadline) return null;
    await sleep(250);
  }
}
