// @ts-check
// New-payment throughput: a constant arrival rate of POST /payments, each with a fresh key, sent
// once (open model: requests start on schedule whatever the answers do, so a slow server shows
// up as latency and dropped iterations, not as a lower request rate). Thresholds: every answer
// 202, no iteration dropped, and the latency objective (BRIEF section 11: p99 <= 25 ms at half
// the peak rate; run it at half of what `npm run bench` reports as the peak).
//
// Settings: BASE_URL, API_KEYS (required), RUN_ID, RATE (200 per second), DURATION (30s),
// VUS (50, up to 4x), P99_MS (25).
import { exchange, paymentRequest, POST_PAYMENTS } from './careful-client.js';
import { currencyOf, keyOf, merchantOf } from './keys.js';
import { durationSetting, intSetting } from './settings.js';
import { arrivalRate, latency, noSetup } from './shape.js';

/** The body of iteration n's payment. */
export function newPaymentBody(/** @type {number} */ n) {
  return JSON.stringify({ amount: 1 + (n % 99_999), currency: currencyOf(n) });
}

export const NEW_PAYMENT_CHECK = 'new payment accepted (202)';

/** @typedef {{ rate: number, duration: string, vus: number, p99: number }} NewPaymentSettings */

/** @type {import('./shape.js').Scenario<NewPaymentSettings, {}>} */
export const newPayments = {
  name: 'new_payments',
  minimumKeys: 1,
  settings: (env) => ({
    rate: intSetting(env, 'RATE', 200),
    duration: durationSetting(env, 'DURATION', '30s'),
    vus: intSetting(env, 'VUS', 50),
    p99: intSetting(env, 'P99_MS', 25),
  }),
  executor: (s) => arrivalRate(s.rate, s.duration, s.vus),
  batch: () => 1,
  counters: [],
  thresholds: (s) => ({
    checks: ['rate==1'],
    dropped_iterations: ['count==0'],
    ...latency(POST_PAYMENTS, s),
  }),
  setup: noSetup,
  *iteration({ n, runId, apiKeys, tally }) {
    const request = paymentRequest(merchantOf(apiKeys, n), keyOf(runId, n), newPaymentBody(n));
    const [answer] = yield* exchange([request]);
    tally.check(NEW_PAYMENT_CHECK, answer?.status === 202);
  },
};
