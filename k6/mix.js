// A realistic mix at a constant arrival rate: mostly new payments whose sources include the
// simulator's failure tokens (declines, transient failures, an unavailable acquirer, timeouts),
// some clients that retry a request that already succeeded (timeout on their side), some with
// a bug that reuses a key for another body, and reads. Thresholds: no 5xx, every answer what
// the contract says for its case, latency objectives. Afterwards `npm run verify` checks that
// declines failed, transients settled, and unavailable/timeouts sit in the dead-letter topic.
//
//   k6 run -e API_KEYS=sk_a,sk_b k6/mix.js                     (or: npm run k6 -- mix)
//
// Environment: BASE_URL or BASE_URLS, API_KEYS (required), RUN_ID (default k6-mix-<time>), RATE (100 per
// second), DURATION (60s), VUS (50, up to 4x), P95_MS (100), P99_MS (250).
import { check } from 'k6';
import { setupRun } from './lib/env.js';
import {
  CURRENCIES,
  getPayment,
  isReplay,
  paymentOf,
  paymentRequest,
  sendWithRetries,
  thisIteration,
} from './lib/payments.js';
import { arrivalRate, latency, NO_SERVER_ERRORS, SUMMARY_TREND_STATS } from './lib/scenarios.js';

export const options = {
  scenarios: { mix: arrivalRate({ rate: 100, duration: '60s' }) },
  thresholds: {
    checks: ['rate==1'],
    ...NO_SERVER_ERRORS,
    ...latency('POST /payments', { p95: 100, p99: 250 }),
  },
  summaryTrendStats: SUMMARY_TREND_STATS,
};

/** Sources by weight (per 1,000 payments): mostly cards that work, every failure mode some. */
const SOURCES = [
  ['tok_visa', 850],
  ['tok_decline', 50],
  ['tok_transient_1', 40],
  ['tok_transient_3', 30],
  ['tok_unavailable', 15],
  ['tok_timeout', 15],
];

function pick(weighted, roll) {
  let left = roll * weighted.reduce((sum, [, weight]) => sum + weight, 0);
  for (const [value, weight] of weighted) {
    left -= weight;
    if (left < 0) return value;
  }
  return weighted[weighted.length - 1][0];
}

export function setup() {
  return setupRun('mix');
}

export default function mix(data) {
  const { n, apiKey, key } = thisIteration(data);
  const body = {
    amount: 100 + Math.floor(Math.random() * 50_000),
    currency: CURRENCIES[n % CURRENCIES.length],
    source: pick(SOURCES, Math.random()),
    metadata: { order_id: `ord_${n}` },
  };
  const [first] = sendWithRetries([paymentRequest(apiKey, key, JSON.stringify(body), n)]);
  const payment = paymentOf(first);
  check(first, { 'new payment accepted (202)': () => payment !== null });
  if (!payment) return;

  const roll = Math.random();
  if (roll < 0.1) {
    // The client timed out on its side and sends the same request again.
    const [again] = sendWithRetries([paymentRequest(apiKey, key, JSON.stringify(body), n + 1)]);
    check(again, {
      'retry of a finished request is a replay': (r) =>
        isReplay(r) && (paymentOf(r) || {}).id === payment.id,
    });
  } else if (roll < 0.12) {
    // A client bug: the same key for another payment.
    const [reused] = sendWithRetries([
      paymentRequest(apiKey, key, JSON.stringify({ ...body, amount: body.amount + 1 }), n + 1),
    ]);
    check(reused, { 'key reused with another body is 422': (r) => r.status === 422 });
  } else if (roll < 0.3) {
    const read = getPayment(apiKey, payment.id, n + 1);
    check(read, {
      'own payment readable': (r) => r.status === 200 && JSON.parse(r.body).id === payment.id,
    });
  }
}
