// @ts-check
// Cross-merchant keys: every merchant of API_KEYS sends the SAME Idempotency-Key at the same
// moment (COPIES copies each), each with its own body. Invariants: each merchant gets its own
// payment (one id per merchant, all ids distinct, no 422: keys never collide across merchants),
// and a merchant cannot read another merchant's payment (404) but can read its own (200); no 5xx.
//
// Settings: BASE_URL, API_KEYS (at least 2), RUN_ID, KEYS (100), COPIES (5 per merchant),
// VUS (10), MAX_DURATION (5m), MAX_ATTEMPTS (10), P99_MS (1000).
import {
  acceptedOf,
  CLIENT_COUNTERS,
  exchange,
  getPaymentRequest,
  paymentRequest,
  POST_PAYMENTS,
  send,
} from './careful-client.js';
import { keyOf } from './keys.js';
import { apiKeys as apiKeysOf } from './settings.js';
import { noSetup, perKey, raceSettings, raceThresholds } from './shape.js';

/** @typedef {import('./careful-client.js').Answer} Answer */

export const CROSS_INVARIANTS = [
  'cross_merchant_collision',
  'cross_id_mismatch',
  'cross_foreign_payment_visible',
  'cross_own_payment_invisible',
  'cross_unexpected_status',
];

/** Merchant m's body: different per merchant, so a key shared across merchants shows as 422. */
export function crossBody(/** @type {number} */ merchant) {
  return JSON.stringify({ amount: 500 + merchant, currency: 'USD' });
}

/**
 * The invariants the race breaks: `finals` holds COPIES answers per merchant, merchant by
 * merchant. Returns each merchant's payment ids too.
 * @returns {{ broken: { name: string, tags?: Record<string, string> }[], idsByMerchant: string[][] }}
 */
export function crossRaceBroken(
  /** @type {readonly Answer[]} */ finals,
  /** @type {number} */ merchants,
  /** @type {number} */ copies,
) {
  /** @type {Set<string>[]} */
  const ids = Array.from({ length: merchants }, () => new Set());
  /** @type {{ name: string, tags?: Record<string, string> }[]} */
  const broken = [];
  finals.forEach((answer, index) => {
    const payment = acceptedOf(answer);
    if (payment) ids[Math.floor(index / copies)]?.add(String(payment.id));
    else if (answer.status === 422) broken.push({ name: 'cross_merchant_collision' });
    else if (answer.status < 500 && answer.status !== 0) {
      broken.push({ name: 'cross_unexpected_status', tags: { status: String(answer.status) } });
    }
  });
  if (ids.some((set) => set.size !== 1)) broken.push({ name: 'cross_id_mismatch' });
  const all = ids.flatMap((set) => [...set]);
  if (new Set(all).size !== all.length) broken.push({ name: 'cross_merchant_collision' });
  return { broken, idsByMerchant: ids.map((set) => [...set]) };
}

/** @typedef {import('./shape.js').RaceSettings & { merchants: number }} CrossSettings */

/** @type {import('./shape.js').Scenario<CrossSettings, {}>} */
export const crossMerchant = {
  name: 'cross',
  minimumKeys: 2,
  settings: (env) => ({
    merchants: apiKeysOf(env, 2).length,
    ...raceSettings(env, { keys: 100, copies: 5, vus: 10, maxDuration: '5m', p99: 1000 }),
  }),
  executor: (s) => perKey(s.keys, s.vus, s.maxDuration),
  batch: (s) => s.merchants * s.copies,
  counters: ['cross_keys', ...CROSS_INVARIANTS, ...CLIENT_COUNTERS],
  thresholds: (s) => raceThresholds('cross_keys', CROSS_INVARIANTS, s, POST_PAYMENTS),
  setup: noSetup,
  *iteration({ n, runId, apiKeys, settings, tally }) {
    const key = keyOf(runId, n);
    const requests = apiKeys.flatMap((apiKey, merchant) =>
      Array.from({ length: settings.copies }, () =>
        paymentRequest(apiKey, key, crossBody(merchant)),
      ),
    );
    const finals = yield* send(requests, tally, settings.maxAttempts);
    tally.add('cross_keys');
    const { broken, idsByMerchant } = crossRaceBroken(finals, apiKeys.length, settings.copies);
    for (const { name, tags } of broken) tally.add(name, 1, tags);

    // Reads: own payment 200, the next merchant's payment 404.
    for (const [merchant, apiKey] of apiKeys.entries()) {
      const [own] = idsByMerchant[merchant] ?? [];
      const [foreign] = idsByMerchant[(merchant + 1) % apiKeys.length] ?? [];
      const reads = [];
      if (own !== undefined) reads.push(getPaymentRequest(apiKey, own));
      if (foreign !== undefined) reads.push(getPaymentRequest(apiKey, foreign));
      const answers = yield* exchange(reads);
      let next = 0;
      if (own !== undefined && answers[next++]?.status !== 200)
        tally.add('cross_own_payment_invisible');
      if (foreign !== undefined && answers[next]?.status !== 404)
        tally.add('cross_foreign_payment_visible');
    }
  },
};
