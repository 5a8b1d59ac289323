// @ts-check
// Mismatch abuse: one key, two different bodies fired at once (COPIES copies each), then a third
// body, then the winner's body with its keys reordered and spaced. Invariants: exactly one body
// wins the key (every 202 names one payment and carries that body's amount); every request
// with another body ends in 422 idempotency_key_reused, never 202; the reordered winner body is
// a replay (canonical JSON); no 5xx.
//
// Settings: BASE_URL, API_KEYS (required), RUN_ID, KEYS (100), COPIES (5 per body), VUS (10),
// MAX_DURATION (5m), MAX_ATTEMPTS (10), P99_MS (1000).
import {
  acceptedOf,
  CLIENT_COUNTERS,
  paymentRequest,
  POST_PAYMENTS,
  send,
} from './careful-client.js';
import { keyOf, merchantOf } from './keys.js';
import { noSetup, perKey, raceSettings, raceThresholds } from './shape.js';

/** @typedef {import('./careful-client.js').Answer} Answer */

export const MISMATCH_INVARIANTS = [
  'mismatch_wrongly_accepted',
  'mismatch_not_rejected',
  'mismatch_id_mismatch',
  'mismatch_canonical_not_replayed',
  'mismatch_keys_without_payment',
];

/** Variant v of iteration n's body: its amount says which variant it is. */
export function mismatchBody(/** @type {number} */ n, /** @type {number} */ variant) {
  return { amount: 1_000 + variant, currency: 'EUR', description: `mismatch #${n}` };
}

/** The same body as `mismatchBody(n, variant)` with its members reordered and spaced. */
export function reorderedBody(/** @type {number} */ n, /** @type {number} */ variant) {
  const body = mismatchBody(n, variant);
  return `{ "description" : ${JSON.stringify(body.description)},
    "currency": "EUR",   "amount": ${body.amount} }`;
}

/**
 * The invariants the race's final answers break: `sent[i]` is the amount request i carried.
 * Returns the winner (the accepted payment) too, or null when no request was accepted.
 * @returns {{ broken: { name: string, tags?: Record<string, string> }[], winner: { id: string, amount: number } | null }}
 */
export function mismatchRaceBroken(
  /** @type {readonly Answer[]} */ finals,
  /** @type {readonly number[]} */ sent,
) {
  const accepted = finals.map(acceptedOf).filter((payment) => payment !== null);
  const first = accepted[0];
  if (!first) return { broken: [{ name: 'mismatch_keys_without_payment' }], winner: null };
  /** @type {{ name: string, tags?: Record<string, string> }[]} */
  const broken = [];
  if (new Set(accepted.map((payment) => payment.id)).size !== 1)
    broken.push({ name: 'mismatch_id_mismatch' });
  const winner = { id: String(first.id), amount: Number(first.amount) };
  finals.forEach((answer, index) => {
    if (sent[index] === winner.amount) return;
    broken.push(...rejectionBroken(answer));
  });
  return { broken, winner };
}

/**
 * What a request with a body other than the winner's breaks: a 202 is wrongly accepted; any
 * final answer but 422 idempotency_key_reused is not rejected as it should be.
 * @returns {{ name: string, tags?: Record<string, string> }[]}
 */
export function rejectionBroken(/** @type {Answer} */ answer) {
  if (answer.status === 202) return [{ name: 'mismatch_wrongly_accepted' }];
  if (answer.status !== 422 || !answer.body.includes('idempotency_key_reused')) {
    return [{ name: 'mismatch_not_rejected', tags: { status: String(answer.status) } }];
  }
  return [];
}

/** @typedef {import('./shape.js').RaceSettings} MismatchSettings */

/** @type {import('./shape.js').Scenario<MismatchSettings, {}>} */
export const mismatch = {
  name: 'mismatch',
  minimumKeys: 1,
  settings: (env) =>
    raceSettings(env, { keys: 100, copies: 5, vus: 10, maxDuration: '5m', p99: 1000 }),
  executor: (s) => perKey(s.keys, s.vus, s.maxDuration),
  batch: (s) => 2 * s.copies,
  counters: ['mismatch_keys', ...MISMATCH_INVARIANTS, ...CLIENT_COUNTERS],
  thresholds: (s) => raceThresholds('mismatch_keys', MISMATCH_INVARIANTS, s, POST_PAYMENTS),
  setup: noSetup,
  *iteration({ n, runId, apiKeys, settings, tally }) {
    const apiKey = merchantOf(apiKeys, n);
    const key = keyOf(runId, n);
    const requests = [];
    const sent = [];
    for (let copy = 0; copy < settings.copies; copy++) {
      for (const variant of [1, 2]) {
        const body = mismatchBody(n, variant);
        requests.push(paymentRequest(apiKey, key, JSON.stringify(body)));
        sent.push(body.amount);
      }
    }
    const finals = yield* send(requests, tally, settings.maxAttempts);
    tally.add('mismatch_keys');
    const { broken, winner } = mismatchRaceBroken(finals, sent);
    for (const { name, tags } of broken) tally.add(name, 1, tags);
    if (!winner) return;

    // A third body, alone, after the fact: still 422.
    const [third] = yield* send(
      [paymentRequest(apiKey, key, JSON.stringify(mismatchBody(n, 3)))],
      tally,
      settings.maxAttempts,
    );
    if (third) for (const { name, tags } of rejectionBroken(third)) tally.add(name, 1, tags);

    // The winner's body with its members in another order and extra spaces: the same request.
    const [again] = yield* send(
      [paymentRequest(apiKey, key, reorderedBody(n, winner.amount - 1_000))],
      tally,
      settings.maxAttempts,
    );
    if (!again || !again.replayed || acceptedOf(again)?.id !== winner.id)
      tally.add('mismatch_canonical_not_replayed');
  },
};
