// New-payment throughput: a constant arrival rate of POST /payments, each with a fresh key
// (open model: requests start on schedule whatever the answers do, so a slow server shows up as
// latency and dropped iterations, not as a lower request rate). Thresholds: every answer 202,
// no iteration dropped for lack of VUs, and the latency objective (BRIEF section 11: p99 <= 25
// ms at half the peak rate; run it at half of what `npm run bench` reports as the peak).
//
//   k6 run -e API_KEYS=sk_a -e RATE=300 k6/new-payments.js    (or: npm run k6 -- new-payments)
//
// Environment: BASE_URL, API_KEYS (required), RUN_ID (default k6-new-payments-<time>),
// RATE (200 per second), DURATION (30s), VUS (50, pre-allocated; up to 4x), P99_MS (25).
import { check } from 'k6';
import http from 'k6/http';
import { setupRun } from './lib/env.js';
import { CURRENCIES, paymentRequest, thisIteration } from './lib/payments.js';
import { arrivalRate, latency, SUMMARY_TREND_STATS } from './lib/scenarios.js';

export const options = {
  scenarios: { new_payments: arrivalRate({ rate: 200, duration: '30s' }) },
  thresholds: {
    checks: ['rate==1'],
    dropped_iterations: ['count==0'],
    ...latency('POST /payments', { p99: 25 }),
  },
  summaryTrendStats: SUMMARY_TREND_STATS,
};

export function setup() {
  return setupRun('new-payments');
}

export default function newPayment(data) {
  const { n, apiKey, key } = thisIteration(data);
  const request = paymentRequest(
    apiKey,
    key,
    JSON.stringify({ amount: 1 + (n % 99_999), currency: CURRENCIES[n % CURRENCIES.length] }),
  );
  const response = http.post(request.url, request.body, request.params);
  check(response, { 'new payment accepted (202)': (r) => r.status === 202 });
}
