// @ts-check
// Duplicate-charge storm: many keys, each fired COPIES times at once, every copy retried with
// the same key and body on 409/429/5xx until it gets its final answer. Invariants: all answers
// for a key name one payment id, with byte-identical bodies, at most one of them is not a
// replay, every answer is 202 (or a retryable one that ran out of attempts), and no 5xx.
//
// Settings: BASE_URL or BASE_URLS (copy i goes to instance i), API_KEYS (required), RUN_ID,
// KEYS (200), COPIES (10), VUS (20), MAX_DURATION (10m), MAX_ATTEMPTS (10), P95_MS (250),
// P99_MS (1000).
import {
  acceptedOf,
  CLIENT_COUNTERS,
  paymentRequest,
  POST_PAYMENTS,
  send,
} from './careful-client.js';
import { currencyOf, keyOf, merchantOf } from './keys.js';
import { noSetup, perKey, raceSettings, raceThresholds } from './shape.js';

/** @typedef {import('./careful-client.js').Answer} Answer */

export const STORM_INVARIANTS = [
  'storm_id_mismatch',
  'storm_body_mismatch',
  'storm_created_twice',
  'storm_unexpected_status',
  'storm_keys_without_payment',
];

/** The body of iteration n's payment (every copy sends exactly this string). */
export function stormBody(
  /** @type {string} */ runId,
  /** @type {number} */ n,
  /** @type {number} */ copies,
) {
  return JSON.stringify({
    amount: 100 + (n % 99_900),
    currency: currencyOf(n),
    description: `storm ${runId} #${n}`,
    metadata: { copy_count: String(copies) },
  });
}

/**
 * The invariants the final answers of one key's copies break, each with its tags.
 * @returns {{ name: string, tags?: Record<string, string> }[]}
 */
export function stormBroken(/** @type {readonly Answer[]} */ finals) {
  /** @type {{ name: string, tags?: Record<string, string> }[]} */
  const broken = [];
  for (const answer of finals) {
    if (answer.status !== 202 && answer.status !== 0 && answer.status < 500) {
      broken.push({ name: 'storm_unexpected_status', tags: { status: String(answer.status) } });
    }
  }
  const accepted = finals.filter((answer) => answer.status === 202);
  if (accepted.length === 0) return [...broken, { name: 'storm_keys_without_payment' }];
  const ids = new Set(accepted.map((answer) => acceptedOf(answer)?.id));
  if (ids.size !== 1 || ids.has(undefined)) broken.push({ name: 'storm_id_mismatch' });
  if (new Set(accepted.map((answer) => answer.body)).size !== 1)
    broken.push({ name: 'storm_body_mismatch' });
  if (accepted.filter((answer) => !answer.replayed).length > 1)
    broken.push({ name: 'storm_created_twice' });
  return broken;
}

/** @typedef {import('./shape.js').RaceSettings} StormSettings */

/** @type {import('./shape.js').Scenario<StormSettings, {}>} */
export const storm = {
  name: 'storm',
  minimumKeys: 1,
  settings: (env) =>
    raceSettings(env, { keys: 200, copies: 10, vus: 20, maxDuration: '10m', p95: 250, p99: 1000 }),
  executor: (s) => perKey(s.keys, s.vus, s.maxDuration),
  batch: (s) => s.copies,
  counters: ['storm_keys', ...STORM_INVARIANTS, ...CLIENT_COUNTERS],
  thresholds: (s) => raceThresholds('storm_keys', STORM_INVARIANTS, s, POST_PAYMENTS),
  setup: noSetup,
  *iteration({ n, runId, apiKeys, settings, tally }) {
    const apiKey = merchantOf(apiKeys, n);
    const body = stormBody(runId, n, settings.copies);
    // Copy i goes to API instance i: the copies of a key race across processes.
    const requests = Array.from({ length: settings.copies }, (_, copy) =>
      paymentRequest(apiKey, keyOf(runId, n), body, copy),
    );
    const finals = yield* send(requests, tally, settings.maxAttempts);
    tally.add('storm_keys');
    for (const { name, tags } of stormBroken(finals)) tally.add(name, 1, tags);
  },
};
