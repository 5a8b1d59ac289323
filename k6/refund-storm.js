// Refund storm: per payment (one iteration each), create it, wait until it is settled, then fire
// PARTS * OVERSHOOT refunds of amount/PARTS with distinct keys, each key COPIES times at once
// (one http.batch), every copy retried on 409/429/5xx with the same key and body.
// Invariants (thresholds): at most PARTS refunds accepted per payment and their sum never above
// the amount, the payment's amount_refunded equal to that sum, every answer for a key naming
// one refund with byte-identical bodies, refusals only 422 refund_exceeds_payment, no 5xx.
// Needs the settlement role running (payments must settle before they can be refunded).
//
//   k6 run -e API_KEYS=sk_a k6/refund-storm.js          (or: npm run k6 -- refund-storm)
//
// Environment: BASE_URL (or BASE_URLS: the copies of a refund spread over the instances, and
// retries go to the next), API_KEYS (required), RUN_ID (key prefix), PAYMENTS (20), PARTS (10),
// OVERSHOOT (3), COPIES (3), VUS (2), MAX_DURATION (10m), SETTLE_WAIT_S (30), MAX_ATTEMPTS,
// P95_MS (300), P99_MS (1500). `npm run chaos` runs it beside the storm and the mix.
import { sleep } from 'k6';
import { intEnv, setupRun } from './lib/env.js';
import {
  baseUrl,
  getPayment,
  isReplay,
  paymentOf,
  paymentRequest,
  sendWithRetries,
  thisIteration,
} from './lib/payments.js';
import {
  invariants,
  latency,
  NO_SERVER_ERRORS,
  perKey,
  SUMMARY_TREND_STATS,
} from './lib/scenarios.js';
import { Counter } from 'k6/metrics';

const PAYMENTS = intEnv('PAYMENTS', 20);
const PARTS = intEnv('PARTS', 10);
const OVERSHOOT = intEnv('OVERSHOOT', 3);
const COPIES = intEnv('COPIES', 3);
const SETTLE_WAIT_S = intEnv('SETTLE_WAIT_S', 30);

const { broken, thresholds } = invariants([
  'refund_sum_exceeded',
  'refund_accepted_too_many',
  'refund_amount_refunded_mismatch',
  'refund_id_mismatch',
  'refund_body_mismatch',
  'refund_created_twice',
  'refund_unexpected_status',
  'refund_payment_not_settled',
]);
const paymentsDone = new Counter('refund_storm_payments');

export const options = {
  // Each VU storms one payment with PARTS * OVERSHOOT * COPIES (90) requests at once: the
  // contention the invariants are about. Two VUs keep about 180 requests in flight, the order of
  // the payments storm's 200; ten (900 in flight) measure this machine's queue, not the service
  // (DESIGN 70).
  scenarios: { refund_storm: perKey(PAYMENTS, { vus: 2, maxDuration: '10m' }) },
  batch: PARTS * OVERSHOOT * COPIES,
  batchPerHost: PARTS * OVERSHOOT * COPIES,
  thresholds: {
    ...thresholds,
    ...NO_SERVER_ERRORS,
    refund_storm_payments: [`count==${PAYMENTS}`],
    ...latency('POST /payments/{id}/refunds', { p95: 300, p99: 1500 }),
  },
  summaryTrendStats: SUMMARY_TREND_STATS,
};

export function setup() {
  return setupRun('refund-storm');
}

/** `target` picks the API instance when BASE_URLS lists several (retries go to the next). */
function refundRequest(apiKey, paymentId, key, body, target) {
  return {
    method: 'POST',
    url: `${baseUrl(target)}/payments/${paymentId}/refunds`,
    target,
    body,
    params: {
      headers: {
        Authorization: `Bearer ${apiKey}`,
        'Idempotency-Key': key,
        'Content-Type': 'application/json',
      },
      tags: { name: 'POST /payments/{id}/refunds' },
    },
  };
}

/** Polls the payment until it is settled (true) or SETTLE_WAIT_S passed / it failed (false). */
function awaitSettled(apiKey, id) {
  for (let waited = 0; waited < SETTLE_WAIT_S * 10; waited++) {
    const res = getPayment(apiKey, id);
    const status = res.status === 200 ? JSON.parse(res.body).status : undefined;
    if (status === 'settled') return true;
    if (status === 'failed') return false;
    sleep(0.1);
  }
  return false;
}

export default function refundStorm(data) {
  const { n, apiKey, key } = thisIteration(data);
  const amount = PARTS * (100 + (n % 900));
  const body = JSON.stringify({ amount, currency: 'EUR', description: `refund storm #${n}` });
  const [created] = sendWithRetries([paymentRequest(apiKey, key, body)]);
  const payment = paymentOf(created);
  if (!payment || !awaitSettled(apiKey, payment.id)) {
    broken.refund_payment_not_settled.add(1);
    return;
  }

  const part = amount / PARTS;
  const refundBody = JSON.stringify({ amount: part, reason: 'requested_by_customer' });
  const keys = Array.from({ length: PARTS * OVERSHOOT }, (_, i) => `${key}-refund-${i}`);
  const requests = keys.flatMap((refundKey) =>
    Array.from({ length: COPIES }, (_, copy) =>
      refundRequest(apiKey, payment.id, refundKey, refundBody, copy),
    ),
  );
  const finals = sendWithRetries(requests);

  const byKey = new Map();
  finals.forEach((response, index) => {
    const refundKey = keys[Math.floor(index / COPIES)];
    if (response.status === 202) {
      byKey.set(refundKey, [...(byKey.get(refundKey) || []), response]);
    } else if (!(response.status === 422 && /refund_exceeds_payment/.test(response.body))) {
      if (response.status !== 0 && response.status < 500)
        broken.refund_unexpected_status.add(1, { status: String(response.status) });
    }
  });
  let sum = 0;
  for (const answers of byKey.values()) {
    const ids = new Set(answers.map((response) => (paymentOf(response) || {}).id));
    if (ids.size !== 1 || ids.has(undefined)) broken.refund_id_mismatch.add(1);
    if (new Set(answers.map((response) => response.body)).size !== 1)
      broken.refund_body_mismatch.add(1);
    if (answers.filter((response) => !isReplay(response)).length > 1)
      broken.refund_created_twice.add(1);
    sum += (paymentOf(answers[0]) || {}).amount || 0;
  }
  if (byKey.size > PARTS) broken.refund_accepted_too_many.add(1);
  if (sum > amount) broken.refund_sum_exceeded.add(1);
  const refunded = amountRefunded(apiKey, payment.id);
  if (refunded !== undefined && refunded !== sum) broken.refund_amount_refunded_mismatch.add(1);
  paymentsDone.add(1);
}

/**
 * The payment's amount_refunded, read again while the API answers 5xx or nothing (a fault under
 * `npm run chaos`); undefined when no read succeeded (the read proves nothing then).
 */
function amountRefunded(apiKey, paymentId) {
  for (let attempt = 0; attempt < 50; attempt++) {
    const res = getPayment(apiKey, paymentId, attempt);
    if (res.status === 200) return JSON.parse(res.body).amount_refunded;
    sleep(0.2);
  }
  return undefined;
}
