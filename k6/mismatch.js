// Mismatch abuse: one key, two different bodies fired at once (COPIES copies each, in one
// http.batch), then a third body, then the winner's body with its keys reordered and spaced.
// Invariants (thresholds): exactly one body wins the key (every 202 names one payment and
// carries that body's amount); every request with another body ends in 422
// idempotency_key_reused, never 202; the reordered winner body is a replay (canonical JSON);
// no 5xx.
//
//   k6 run -e API_KEYS=sk_a k6/mismatch.js          (or: npm run k6 -- mismatch)
//
// Environment: BASE_URL, API_KEYS (required), RUN_ID (default k6-mismatch-<time>), KEYS (100),
// COPIES (5 per body), VUS (10), MAX_DURATION (5m), P99_MS (1000).
import { intEnv, setupRun } from './lib/env.js';
import {
  isReplay,
  paymentOf,
  paymentRequest,
  sendWithRetries,
  thisIteration,
} from './lib/payments.js';
import { keyedTest } from './lib/scenarios.js';

const KEYS = intEnv('KEYS', 100);
const COPIES = intEnv('COPIES', 5);

const test = keyedTest({
  name: 'mismatch',
  keys: KEYS,
  batch: 2 * COPIES,
  vus: 10,
  maxDuration: '5m',
  invariantNames: [
    'mismatch_wrongly_accepted',
    'mismatch_not_rejected',
    'mismatch_id_mismatch',
    'mismatch_canonical_not_replayed',
    'mismatch_keys_without_payment',
  ],
  objectives: { p99: 1000 },
});
const { broken, keysDone } = test;
export const options = test.options;

export function setup() {
  return setupRun('mismatch');
}

/** A body whose amount says which variant it is. */
function body(n, variant) {
  return { amount: 1_000 + variant, currency: 'EUR', description: `mismatch #${n}` };
}

export default function mismatch(data) {
  const { n, apiKey, key } = thisIteration(data);
  const variants = [JSON.stringify(body(n, 1)), JSON.stringify(body(n, 2))];
  const requests = [];
  for (let copy = 0; copy < COPIES; copy++) {
    for (const variant of variants) requests.push(paymentRequest(apiKey, key, variant));
  }
  const finals = sendWithRetries(requests);

  const accepted = finals.map(paymentOf).filter((payment) => payment !== null);
  keysDone.add(1);
  if (accepted.length === 0) {
    broken.mismatch_keys_without_payment.add(1);
    return;
  }
  if (new Set(accepted.map((payment) => payment.id)).size !== 1) broken.mismatch_id_mismatch.add(1);
  const winner = accepted[0];
  finals.forEach((response, index) => {
    const sentAmount = JSON.parse(requests[index].body).amount;
    if (sentAmount === winner.amount) return;
    if (response.status === 202) broken.mismatch_wrongly_accepted.add(1);
    else if (response.status !== 422 || !response.body.includes('idempotency_key_reused'))
      broken.mismatch_not_rejected.add(1, { status: String(response.status) });
  });

  // A third body, alone, after the fact: still 422.
  const [third] = sendWithRetries([paymentRequest(apiKey, key, JSON.stringify(body(n, 3)))]);
  if (third.status === 202) broken.mismatch_wrongly_accepted.add(1);
  else if (third.status !== 422)
    broken.mismatch_not_rejected.add(1, { status: String(third.status) });

  // The winner's body with its keys in another order and extra spaces: the same request.
  const winning = body(n, winner.amount - 1_000);
  const reordered = `{ "description" : ${JSON.stringify(winning.description)},
    "currency": "EUR",   "amount": ${winning.amount} }`;
  const [again] = sendWithRetries([paymentRequest(apiKey, key, reordered)]);
  const replayed = paymentOf(again);
  if (!replayed || replayed.id !== winner.id || !isReplay(again))
    broken.mismatch_canonical_not_replayed.add(1);
}
