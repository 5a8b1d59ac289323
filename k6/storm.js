// Duplicate-charge storm: many keys, each fired COPIES times at once (one http.batch), every
// copy retried with the same key and body on 409/429/5xx until it gets its final answer.
// Invariants (thresholds): all answers for a key name one payment id, with byte-identical
// bodies, at most one of them is not a replay, and there is no 5xx.
//
//   k6 run -e API_KEYS=sk_a,sk_b k6/storm.js          (or: npm run k6 -- storm)
//
// Environment: BASE_URL (http://127.0.0.1:3000) or BASE_URLS (several APIs), API_KEYS (required), RUN_ID (key prefix,
// default k6-storm-<time>), KEYS (200), COPIES (10), VUS (20), MAX_DURATION (10m),
// MAX_ATTEMPTS (10), P95_MS (250), P99_MS (1000).
import { intEnv, setupRun } from './lib/env.js';
import {
  CURRENCIES,
  isReplay,
  paymentOf,
  paymentRequest,
  sendWithRetries,
  thisIteration,
} from './lib/payments.js';
import { keyedTest } from './lib/scenarios.js';

const KEYS = intEnv('KEYS', 200);
const COPIES = intEnv('COPIES', 10);

const test = keyedTest({
  name: 'storm',
  keys: KEYS,
  batch: COPIES,
  vus: 20,
  maxDuration: '10m',
  invariantNames: [
    'storm_id_mismatch',
    'storm_body_mismatch',
    'storm_created_twice',
    'storm_unexpected_status',
    'storm_keys_without_payment',
  ],
  objectives: { p95: 250, p99: 1000 },
});
const { broken, keysDone } = test;
export const options = test.options;

export function setup() {
  return setupRun('storm');
}

export default function storm(data) {
  const { n, apiKey, key } = thisIteration(data);
  const body = JSON.stringify({
    amount: 100 + (n % 99_900),
    currency: CURRENCIES[n % CURRENCIES.length],
    description: `storm ${data.runId} #${n}`,
    metadata: { copy_count: String(COPIES) },
  });
  // Copy i goes to API instance i (BASE_URLS): the copies of a key race across processes.
  const finals = sendWithRetries(
    Array.from({ length: COPIES }, (_, copy) => paymentRequest(apiKey, key, body, copy)),
  );

  const accepted = finals.filter((response) => response.status === 202);
  for (const response of finals) {
    if (response.status !== 202 && response.status !== 0 && response.status < 500) {
      broken.storm_unexpected_status.add(1, { status: String(response.status) });
    }
  }
  keysDone.add(1);
  if (accepted.length === 0) {
    broken.storm_keys_without_payment.add(1);
    return;
  }
  const ids = new Set(accepted.map((response) => (paymentOf(response) || {}).id));
  if (ids.size !== 1 || ids.has(undefined)) broken.storm_id_mismatch.add(1);
  if (new Set(accepted.map((response) => response.body)).size !== 1)
    broken.storm_body_mismatch.add(1);
  if (accepted.filter((response) => !isReplay(response)).length > 1)
    broken.storm_created_twice.add(1);
}
