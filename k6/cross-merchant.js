// Cross-merchant keys: every merchant of API_KEYS sends the SAME Idempotency-Key at the same
// moment (COPIES copies each, one http.batch), each with its own body. Invariants
// (thresholds): each merchant gets its own payment (one id per merchant, all ids distinct, no
// 422: keys never collide across merchants), and a merchant cannot read another merchant's
// payment (404) but can read its own (200); no 5xx.
//
//   k6 run -e API_KEYS=sk_a,sk_b k6/cross-merchant.js    (or: npm run k6 -- cross-merchant)
//
// Environment: BASE_URL, API_KEYS (at least 2), RUN_ID (default k6-cross-merchant-<time>),
// KEYS (100), COPIES (5 per merchant), VUS (10), MAX_DURATION (5m), P99_MS (1000).
import { apiKeys, intEnv, setupRun } from './lib/env.js';
import {
  getPayment,
  paymentOf,
  paymentRequest,
  sendWithRetries,
  thisIteration,
} from './lib/payments.js';
import { keyedTest } from './lib/scenarios.js';

const KEYS = intEnv('KEYS', 100);
const COPIES = intEnv('COPIES', 5);
const MERCHANTS = apiKeys(2).length;

const test = keyedTest({
  name: 'cross',
  keys: KEYS,
  batch: MERCHANTS * COPIES,
  vus: 10,
  maxDuration: '5m',
  invariantNames: [
    'cross_merchant_collision',
    'cross_id_mismatch',
    'cross_foreign_payment_visible',
    'cross_own_payment_invisible',
    'cross_unexpected_status',
  ],
  objectives: { p99: 1000 },
});
const { broken, keysDone } = test;
export const options = test.options;

export function setup() {
  return setupRun('cross-merchant', 2);
}

export default function crossMerchant(data) {
  const { keys, key } = thisIteration(data, 2);
  const requests = [];
  keys.forEach((apiKey, merchant) => {
    // Different bodies per merchant: a key shared across merchants would show up as a 422.
    const body = JSON.stringify({ amount: 500 + merchant, currency: 'USD' });
    for (let copy = 0; copy < COPIES; copy++) requests.push(paymentRequest(apiKey, key, body));
  });
  const finals = sendWithRetries(requests);
  keysDone.add(1);

  const idsByMerchant = keys.map(() => new Set());
  finals.forEach((response, index) => {
    const merchant = Math.floor(index / COPIES);
    const payment = paymentOf(response);
    if (payment) idsByMerchant[merchant].add(payment.id);
    else if (response.status === 422) broken.cross_merchant_collision.add(1);
    else if (response.status < 500 && response.status !== 0)
      broken.cross_unexpected_status.add(1, { status: String(response.status) });
  });
  if (idsByMerchant.some((ids) => ids.size !== 1)) broken.cross_id_mismatch.add(1);
  const all = idsByMerchant.flatMap((ids) => [...ids]);
  if (new Set(all).size !== all.length) broken.cross_merchant_collision.add(1);

  // Reads: own payment 200, the next merchant's payment 404.
  keys.forEach((apiKey, merchant) => {
    const [own] = [...idsByMerchant[merchant]];
    const [foreign] = [...idsByMerchant[(merchant + 1) % keys.length]];
    if (own !== undefined && getPayment(apiKey, own).status !== 200)
      broken.cross_own_payment_invisible.add(1);
    if (foreign !== undefined && getPayment(apiKey, foreign).status !== 404)
      broken.cross_foreign_payment_visible.add(1);
  });
}
