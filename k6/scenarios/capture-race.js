// @ts-check
// Capture-vs-cancel race (issue 40): per payment (one iteration each), create a manual payment
// (tok_visa), wait until it is requires_capture, then fire CAPTURES captures (each its own
// amount_to_capture) and CANCELS cancels (each its own cancellation_reason) at once, distinct
// keys, each key COPIES times, every copy retried on 409/429/5xx with the same key and body.
// Invariants: exactly one key wins (202) and no other; the others are refused 422 with the
// winner's state's code (payment_already_captured after a capture, payment_already_canceled after
// a cancel); every copy of a key gets the same status and byte-identical body, and the winner's
// decision is taken once (one non-replayed 202); the payment ends settled with the winner's
// amount_captured, or canceled with its cancellation_reason. Needs the settlement role running.
//
// EXPIRE_EVERY=K (0: none) leaves every K-th authorization alone, for its window to expire (the
// chaos run's settlement has a short one; verify judges the void and the cancel). A race that
// finds its payment already expired (every key refused payment_already_canceled, the payment
// canceled `expired`) is counted, not broken.
//
// Settings: BASE_URL or BASE_URLS (the copies spread over the instances, retries go to the next),
// API_KEYS (required), RUN_ID, PAYMENTS (10), CAPTURES (5), CANCELS (5), COPIES (3), VUS (2),
// EXPIRE_EVERY (0), MAX_DURATION (10m), SETTLE_WAIT_S (30), MAX_ATTEMPTS (10), P95_MS (500),
// P99_MS (2500).
import {
  acceptedOf,
  awaitPayment,
  CLIENT_COUNTERS,
  holdRequest,
  paymentRequest,
  POST_CANCEL,
  POST_CAPTURE,
  send,
} from './careful-client.js';
import { keyOf, merchantOf } from './keys.js';
import { intSetting } from './settings.js';
import {
  latency,
  NO_SERVER_ERRORS,
  noneOf,
  noSetup,
  paymentStormSettings,
  perKey,
} from './shape.js';

/** @typedef {import('./careful-client.js').Answer} Answer */

export const CAPTURE_RACE_INVARIANTS = [
  'capture_race_two_winners',
  'capture_race_no_winner',
  'capture_race_decided_twice',
  'capture_race_replay_mismatch',
  'capture_race_unexpected_status',
  'capture_race_wrong_refusal',
  'capture_race_wrong_final',
  'capture_race_not_authorized',
];

/** Outcomes counted, not judged: how many races were run and how they went. */
const CAPTURE_RACE_OUTCOMES = [
  'capture_race_payments',
  'capture_race_capture_wins',
  'capture_race_cancel_wins',
  'capture_race_refusals',
  'capture_race_left_to_expire',
  'capture_race_expired_first',
];

const REASONS = ['requested_by_customer', 'duplicate', 'fraudulent', 'abandoned'];

/**
 * One key of a race: a capture of `amount` or a cancel for `reason`.
 * @typedef {{ key: string, action: 'capture', amount: number } | { key: string, action: 'cancel', reason: string }} RaceKey
 */

/** The race's keys, captures and cancels alternating; capture i takes `amount - i`. */
export function raceKeys(
  /** @type {string} */ paymentKey,
  /** @type {number} */ amount,
  /** @type {{ captures: number, cancels: number }} */ plan,
) {
  /** @type {RaceKey[]} */
  const keys = [];
  for (let i = 0; i < Math.max(plan.captures, plan.cancels); i++) {
    if (i < plan.captures) {
      keys.push({ key: `${paymentKey}-capture-${i}`, action: 'capture', amount: amount - i });
    }
    if (i < plan.cancels) {
      const reason = /** @type {string} */ (REASONS[i % REASONS.length]);
      keys.push({ key: `${paymentKey}-cancel-${i}`, action: 'cancel', reason });
    }
  }
  return keys;
}

/** The body a race key sends. */
export function raceBody(/** @type {RaceKey} */ raceKey) {
  return JSON.stringify(
    raceKey.action === 'capture'
      ? { amount_to_capture: raceKey.amount }
      : { cancellation_reason: raceKey.reason },
  );
}

/** The problem+json `code` of an answer, or ''. */
function codeOf(/** @type {Answer} */ answer) {
  try {
    const parsed = JSON.parse(answer.body);
    return typeof parsed?.code === 'string' ? parsed.code : '';
  } catch {
    return '';
  }
}

/** The code a loser gets once `winner` decided. */
export function loserCode(/** @type {RaceKey} */ winner) {
  return winner.action === 'capture' ? 'payment_already_captured' : 'payment_already_canceled';
}

const REFUSAL_CODES = ['payment_already_captured', 'payment_already_canceled'];

/**
 * The invariants the race's final answers break: `finals` holds COPIES answers per key, in
 * `keys`' order. Returns the single winner (null when none or several) and the refusals counted.
 * @returns {{ broken: { name: string, tags?: Record<string, string> }[], winner: RaceKey | null, refusals: number }}
 */
export function raceBroken(
  /** @type {readonly Answer[]} */ finals,
  /** @type {readonly RaceKey[]} */ keys,
  /** @type {number} */ copies,
) {
  /** @type {{ name: string, tags?: Record<string, string> }[]} */
  const broken = [];
  const answersOf = (/** @type {number} */ k) => finals.slice(k * copies, (k + 1) * copies);
  const winners = keys.filter((_, k) => answersOf(k).some((answer) => answer.status === 202));
  keys.forEach((_, k) => {
    // Answers no retry resolved (5xx, none) are the careful client's (unresolved_requests).
    const answers = answersOf(k).filter((answer) => answer.status !== 0 && answer.status < 500);
    const statuses = new Set(answers.map((answer) => answer.status));
    if (statuses.size !== 1 || new Set(answers.map((answer) => answer.body)).size !== 1)
      broken.push({ name: 'capture_race_replay_mismatch' });
  });
  if (winners.length > 1) broken.push({ name: 'capture_race_two_winners' });
  if (winners.length === 0) broken.push({ name: 'capture_race_no_winner' });
  const winner = winners.length === 1 ? /** @type {RaceKey} */ (winners[0]) : null;
  let refusals = 0;
  keys.forEach((raceKey, k) => {
    const answers = answersOf(k);
    if (raceKey === winner) {
      const decided = answers.filter((answer) => answer.status === 202 && !answer.replayed);
      if (decided.length > 1) broken.push({ name: 'capture_race_decided_twice' });
      return;
    }
    for (const answer of answers) {
      const code = codeOf(answer);
      if (answer.status === 422 && REFUSAL_CODES.includes(code)) {
        refusals++;
        if (winner && code !== loserCode(winner))
          broken.push({ name: 'capture_race_wrong_refusal', tags: { code } });
      } else if (answer.status !== 202 && answer.status !== 0 && answer.status < 500) {
        // 5xx and no answer are the careful client's (server_errors); a 202 is a winner above.
        broken.push({
          name: 'capture_race_unexpected_status',
          tags: { status: String(answer.status) },
        });
      }
    }
  });
  return { broken, winner, refusals };
}

/** Whether `payment` ended as `winner` decided (settled with its amount, or canceled for its reason). */
export function endedAsDecided(
  /** @type {Record<string, unknown> | null} */ payment,
  /** @type {RaceKey} */ winner,
) {
  if (!payment) return false;
  return winner.action === 'capture'
    ? payment.status === 'settled' && payment.amount_captured === winner.amount
    : payment.status === 'canceled' && payment.cancellation_reason === winner.reason;
}

/** Whether a race without a winner met a payment its window had already canceled. */
export function expiredFirst(
  /** @type {readonly Answer[]} */ finals,
  /** @type {Record<string, unknown> | null} */ payment,
) {
  return (
    payment?.status === 'canceled' &&
    payment.cancellation_reason === 'expired' &&
    finals.every(
      (answer) =>
        answer.status === 0 ||
        answer.status >= 500 ||
        (answer.status === 422 && codeOf(answer) === 'payment_already_canceled'),
    )
  );
}

/** @typedef {import('./shape.js').PaymentStormSettings & { captures: number, cancels: number, expireEvery: number }} CaptureRaceSettings */

/** @type {import('./shape.js').Scenario<CaptureRaceSettings, {}>} */
export const captureRace = {
  name: 'capture_race',
  minimumKeys: 1,
  settings: (env) => ({
    // A copy that finds its twin in flight gets 409 with Retry-After 1 and comes back a second
    // later: the tail is the retry pause, not the API.
    ...paymentStormSettings(env, { payments: 10, copies: 3, vus: 2, p95: 500, p99: 2500 }),
    captures: Math.max(1, intSetting(env, 'CAPTURES', 5)),
    cancels: Math.max(1, intSetting(env, 'CANCELS', 5)),
    expireEvery: Math.max(0, intSetting(env, 'EXPIRE_EVERY', 0)),
  }),
  executor: (s) => perKey(s.payments, s.vus, s.maxDuration),
  batch: (s) => (s.captures + s.cancels) * s.copies,
  counters: [...CAPTURE_RACE_OUTCOMES, ...CAPTURE_RACE_INVARIANTS, ...CLIENT_COUNTERS],
  thresholds: (s) => ({
    ...noneOf(CAPTURE_RACE_INVARIANTS),
    ...NO_SERVER_ERRORS,
    capture_race_payments: [`count==${s.payments}`],
    ...latency(POST_CAPTURE, s),
    ...latency(POST_CANCEL, s),
  }),
  setup: noSetup,
  *iteration({ n, runId, apiKeys, settings, tally }) {
    const apiKey = merchantOf(apiKeys, n);
    const key = keyOf(runId, n);
    const amount = 1000 + (n % 9000);
    const body = JSON.stringify({
      amount,
      currency: 'EUR',
      source: 'tok_visa',
      capture_method: 'manual',
      description: `capture race #${n}`,
    });
    const [created] = yield* send([paymentRequest(apiKey, key, body)], tally, settings.maxAttempts);
    const id = String((created && acceptedOf(created)?.id) ?? '');
    const authorized = id
      ? yield* awaitPayment(
          apiKey,
          id,
          (read) => read.status !== 'pending' && read.status !== 'processing',
          settings.settleWaitSeconds,
        )
      : null;
    if (authorized?.status !== 'requires_capture') {
      tally.add('capture_race_not_authorized');
      return;
    }
    if (settings.expireEvery > 0 && n % settings.expireEvery === settings.expireEvery - 1) {
      tally.add('capture_race_left_to_expire');
      tally.add('capture_race_payments');
      return;
    }
    // Rotated by n, so the key sent first (often the winner) is a capture or a cancel by turns.
    const planned = raceKeys(key, amount, settings);
    const turn = n % planned.length;
    const keys = [...planned.slice(turn), ...planned.slice(0, turn)];
    const requests = keys.flatMap((raceKey) =>
      Array.from({ length: settings.copies }, (_, copy) =>
        holdRequest(apiKey, id, raceKey.action, raceKey.key, raceBody(raceKey), copy),
      ),
    );
    const finals = yield* send(requests, tally, settings.maxAttempts);
    const { broken, winner, refusals } = raceBroken(finals, keys, settings.copies);
    if (!winner && broken.some(({ name }) => name === 'capture_race_no_winner')) {
      // The expiry's decision refuses the race at once; the payment is canceled after the void.
      const read = yield* awaitPayment(
        apiKey,
        id,
        (payment) => payment.status !== 'requires_capture',
        settings.settleWaitSeconds,
      );
      if (expiredFirst(finals, read)) {
        tally.add('capture_race_expired_first');
        broken.splice(
          broken.findIndex(({ name }) => name === 'capture_race_no_winner'),
          1,
        );
      }
    }
    for (const { name, tags } of broken) tally.add(name, 1, tags);
    tally.add('capture_race_refusals', refusals);
    if (winner) {
      tally.add(
        winner.action === 'capture' ? 'capture_race_capture_wins' : 'capture_race_cancel_wins',
      );
      const final = yield* awaitPayment(
        apiKey,
        id,
        (read) => read.status !== 'requires_capture',
        settings.settleWaitSeconds,
      );
      if (!endedAsDecided(final, winner))
        tally.add('capture_race_wrong_final', 1, { status: String(final?.status ?? 'unread') });
    }
    tally.add('capture_race_payments');
  },
};
