// @ts-check
// Replay throughput: setup creates REPLAY_KEYS payments, then a constant arrival rate of
// POST /payments sends them again (same key, same body): the Redis-cached path. Checks: every
// answer is 202 with Idempotent-Replayed: true and the id setup got; thresholds: no iteration
// dropped, and the latency objective.
//
// Settings: BASE_URL, API_KEYS (required), RUN_ID, REPLAY_KEYS (1000), RATE (500 per second),
// DURATION (30s), VUS (50, up to 4x), MAX_ATTEMPTS (10), P99_MS (25).
//
// The scenario itself is k6/scenarios/replays.js, which the project's load driver runs too
// (npm run load -- replays); this file runs it under your own k6: npm run k6 -- replays
import { k6Script } from './lib/k6-script.js';
import { replays } from './scenarios/replays.js';

const script = k6Script(replays);
export const options = script.options;
export const setup = script.setup;
export default script.iteration;
