// Replay throughput: setup() creates REPLAY_KEYS payments, then a constant arrival rate of
// POST /payments re-sends them (same key, same body): the Redis-cached path. Thresholds: every
// answer is 202 with Idempotent-Replayed: true and the id setup() got, no iteration dropped,
// and the latency objective.
//
//   k6 run -e API_KEYS=sk_a -e RATE=1000 k6/replays.js        (or: npm run k6 -- replays)
//
// Environment: BASE_URL, API_KEYS (required), RUN_ID (default k6-replays-<time>),
// REPLAY_KEYS (1000), RATE (500 per second), DURATION (30s), VUS (50, up to 4x), P99_MS (25).
import exec from 'k6/execution';
import { check } from 'k6';
import http from 'k6/http';
import { apiKeys, intEnv, setupRun } from './lib/env.js';
import { isReplay, paymentOf, paymentRequest, sendWithRetries } from './lib/payments.js';
import { arrivalRate, latency, SUMMARY_TREND_STATS } from './lib/scenarios.js';

const REPLAY_KEYS = intEnv('REPLAY_KEYS', 1_000);

export const options = {
  scenarios: { replays: arrivalRate({ rate: 500, duration: '30s' }) },
  // setup() creates its payments 50 at a time.
  batch: 50,
  batchPerHost: 50,
  setupTimeout: '120s',
  thresholds: {
    checks: ['rate==1'],
    dropped_iterations: ['count==0'],
    ...latency('POST /payments (replay)', { p99: 25 }),
  },
  summaryTrendStats: SUMMARY_TREND_STATS,
};

function bodyOf(n) {
  return JSON.stringify({ amount: 2_000 + n, currency: 'EUR', description: `replay #${n}` });
}

export function setup() {
  const keys = apiKeys(1);
  const { runId: id } = setupRun('replays');
  const ids = [];
  for (let start = 0; start < REPLAY_KEYS; start += 50) {
    const requests = [];
    for (let n = start; n < Math.min(REPLAY_KEYS, start + 50); n++) {
      requests.push(paymentRequest(keys[n % keys.length], `${id}-${n}`, bodyOf(n)));
    }
    for (const response of sendWithRetries(requests)) {
      const payment = paymentOf(response);
      if (!payment) throw new Error(`setup: POST /payments answered ${response.status}`);
      ids.push(payment.id);
    }
  }
  return { runId: id, ids };
}

export default function replay(data) {
  const keys = apiKeys(1);
  const n = exec.scenario.iterationInTest % REPLAY_KEYS;
  const request = paymentRequest(keys[n % keys.length], `${data.runId}-${n}`, bodyOf(n));
  request.params.tags = { name: 'POST /payments (replay)' };
  const response = http.post(request.url, request.body, request.params);
  check(response, {
    'replayed (202, Idempotent-Replayed: true, same id)': (r) =>
      r.status === 202 && isReplay(r) && (paymentOf(r) || {}).id === data.ids[n],
  });
}
