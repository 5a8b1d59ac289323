// @ts-check
// Replay throughput: setup creates REPLAY_KEYS payments, then a constant arrival rate of
// POST /payments sends them again (same key, same body): the Redis-cached path. Checks: every
// answer is 202 with Idempotent-Replayed: true and the id setup got; thresholds: no iteration
// dropped, and the latency objective.
//
// Settings: BASE_URL, API_KEYS (required), RUN_ID, REPLAY_KEYS (1000), RATE (500 per second),
// DURATION (30s), VUS (50, up to 4x), MAX_ATTEMPTS (10), P99_MS (25).
import { acceptedOf, CLIENT_COUNTERS, exchange, paymentRequest, send } from './careful-client.js';
import { keyOf, merchantOf } from './keys.js';
import { durationSetting, intSetting } from './settings.js';
import { arrivalRate, latency } from './shape.js';

export const REPLAY_NAME = 'POST /payments (replay)';
export const REPLAY_CHECK = 'replayed (202, Idempotent-Replayed: true, same id)';
/** Setup creates its payments this many at a time. */
export const SETUP_BATCH = 50;

/** The body of replay key n. */
export function replayBody(/** @type {number} */ n) {
  return JSON.stringify({ amount: 2_000 + n, currency: 'EUR', description: `replay #${n}` });
}

/** @typedef {{ replayKeys: number, rate: number, duration: string, vus: number, maxAttempts: number, p99: number }} ReplaySettings */

/** @type {import('./shape.js').Scenario<ReplaySettings, { ids: string[] }>} */
export const replays = {
  name: 'replays',
  minimumKeys: 1,
  settings: (env) => ({
    replayKeys: Math.max(1, intSetting(env, 'REPLAY_KEYS', 1_000)),
    rate: intSetting(env, 'RATE', 500),
    duration: durationSetting(env, 'DURATION', '30s'),
    vus: intSetting(env, 'VUS', 50),
    maxAttempts: Math.max(1, intSetting(env, 'MAX_ATTEMPTS', 10)),
    p99: intSetting(env, 'P99_MS', 25),
  }),
  executor: (s) => arrivalRate(s.rate, s.duration, s.vus),
  batch: () => SETUP_BATCH,
  counters: [...CLIENT_COUNTERS],
  thresholds: (s) => ({
    checks: ['rate==1'],
    dropped_iterations: ['count==0'],
    ...latency(REPLAY_NAME, s),
  }),
  *setup({ runId, apiKeys, settings, tally }) {
    /** @type {string[]} */
    const ids = [];
    for (let start = 0; start < settings.replayKeys; start += SETUP_BATCH) {
      const requests = [];
      for (let n = start; n < Math.min(settings.replayKeys, start + SETUP_BATCH); n++) {
        requests.push(paymentRequest(merchantOf(apiKeys, n), keyOf(runId, n), replayBody(n)));
      }
      for (const answer of yield* send(requests, tally, settings.maxAttempts)) {
        const payment = acceptedOf(answer);
        if (!payment || typeof payment.id !== 'string') {
          throw new Error(
            `setup: POST /payments answered ${answer.status} ${answer.body.slice(0, 200)}`,
          );
        }
        ids.push(payment.id);
      }
    }
    return { ids };
  },
  *iteration({ n: iteration, runId, apiKeys, settings, data, tally }) {
    const n = iteration % settings.replayKeys;
    const request = paymentRequest(
      merchantOf(apiKeys, n),
      keyOf(runId, n),
      replayBody(n),
      0,
      REPLAY_NAME,
    );
    const [answer] = yield* exchange([request]);
    tally.check(
      REPLAY_CHECK,
      answer !== undefined &&
        answer.status === 202 &&
        answer.replayed &&
        acceptedOf(answer)?.id === data.ids[n],
    );
  },
};
