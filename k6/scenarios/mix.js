// @ts-check
// A realistic mix at a constant arrival rate: mostly new payments whose sources include the
// simulator's failure tokens (declines, transient failures, an unavailable acquirer, timeouts),
// some clients that retry a request that already succeeded (a timeout on their side), some with
// a bug that reuses a key for another body, and reads. Checks: every answer what the contract
// says for its case; thresholds: no 5xx, the latency objectives. Afterwards `npm run verify`
// checks that declines failed, transients settled, and the rest is where the contract puts it.
//
// Settings: BASE_URL or BASE_URLS, API_KEYS (required), RUN_ID, RATE (100 per second),
// DURATION (60s), VUS (50, up to 4x), MAX_ATTEMPTS (10), P95_MS (100), P99_MS (250).
import {
  acceptedOf,
  CLIENT_COUNTERS,
  exchange,
  getPaymentRequest,
  paymentRequest,
  POST_PAYMENTS,
  resourceOf,
  send,
} from './careful-client.js';
import { currencyOf, keyOf, merchantOf } from './keys.js';
import { durationSetting, intSetting } from './settings.js';
import { arrivalRate, latency, NO_SERVER_ERRORS, noSetup } from './shape.js';

/** Sources by weight (per 1,000 payments): mostly cards that work, every failure mode some. */
export const MIX_SOURCES = /** @type {const} */ ([
  ['tok_visa', 850],
  ['tok_decline', 50],
  ['tok_transient_1', 40],
  ['tok_transient_3', 30],
  ['tok_unavailable', 15],
  ['tok_timeout', 15],
]);

/** The value whose weight band `roll` (0 <= roll < 1) falls in. */
export function pick(
  /** @type {readonly (readonly [string, number])[]} */ weighted,
  /** @type {number} */ roll,
) {
  let left = roll * weighted.reduce((sum, [, weight]) => sum + weight, 0);
  for (const [value, weight] of weighted) {
    left -= weight;
    if (left < 0) return value;
  }
  return /** @type {string} */ (weighted[weighted.length - 1]?.[0]);
}

/** What a mix client does after its payment was accepted, by a roll in [0, 1). */
export function followUpOf(/** @type {number} */ roll) {
  if (roll < 0.1) return 'retry'; // it timed out on its side and sends the same request again
  if (roll < 0.12) return 'reuse'; // a bug: the same key for another payment
  if (roll < 0.3) return 'read';
  return 'none';
}

/** The body of iteration n's payment, from three rolls in [0, 1). */
export function mixBody(
  /** @type {number} */ n,
  /** @type {number} */ amountRoll,
  /** @type {number} */ sourceRoll,
) {
  return {
    amount: 100 + Math.floor(amountRoll * 50_000),
    currency: currencyOf(n),
    source: pick(MIX_SOURCES, sourceRoll),
    metadata: { order_id: `ord_${n}` },
  };
}

export const MIX_CHECKS = {
  accepted: 'new payment accepted (202)',
  replayed: 'retry of a finished request is a replay',
  reused: 'key reused with another body is 422',
  readable: 'own payment readable',
};

/** @typedef {{ rate: number, duration: string, vus: number, maxAttempts: number, p95: number, p99: number }} MixSettings */

/** @type {import('./shape.js').Scenario<MixSettings, {}>} */
export const mix = {
  name: 'mix',
  minimumKeys: 1,
  settings: (env) => ({
    rate: intSetting(env, 'RATE', 100),
    duration: durationSetting(env, 'DURATION', '60s'),
    vus: intSetting(env, 'VUS', 50),
    maxAttempts: Math.max(1, intSetting(env, 'MAX_ATTEMPTS', 10)),
    p95: intSetting(env, 'P95_MS', 100),
    p99: intSetting(env, 'P99_MS', 250),
  }),
  executor: (s) => arrivalRate(s.rate, s.duration, s.vus),
  batch: () => 1,
  counters: [...CLIENT_COUNTERS],
  thresholds: (s) => ({
    checks: ['rate==1'],
    ...NO_SERVER_ERRORS,
    ...latency(POST_PAYMENTS, s),
  }),
  setup: noSetup,
  *iteration({ n, runId, apiKeys, settings, tally }) {
    const apiKey = merchantOf(apiKeys, n);
    const key = keyOf(runId, n);
    const body = mixBody(n, Math.random(), Math.random());
    const [first] = yield* send(
      [paymentRequest(apiKey, key, JSON.stringify(body), n)],
      tally,
      settings.maxAttempts,
    );
    const payment = first ? acceptedOf(first) : null;
    tally.check(MIX_CHECKS.accepted, payment !== null);
    if (!payment) return;

    const followUp = followUpOf(Math.random());
    if (followUp === 'retry') {
      const [again] = yield* send(
        [paymentRequest(apiKey, key, JSON.stringify(body), n + 1)],
        tally,
        settings.maxAttempts,
      );
      tally.check(
        MIX_CHECKS.replayed,
        again !== undefined && again.replayed && acceptedOf(again)?.id === payment.id,
      );
    } else if (followUp === 'reuse') {
      const other = JSON.stringify({ ...body, amount: body.amount + 1 });
      const [reused] = yield* send(
        [paymentRequest(apiKey, key, other, n + 1)],
        tally,
        settings.maxAttempts,
      );
      tally.check(MIX_CHECKS.reused, reused?.status === 422);
    } else if (followUp === 'read') {
      const [read] = yield* exchange([getPaymentRequest(apiKey, String(payment.id), n + 1)]);
      tally.check(MIX_CHECKS.readable, read !== undefined && resourceOf(read)?.id === payment.id);
    }
  },
};
