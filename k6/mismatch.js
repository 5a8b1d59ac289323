// @ts-check
// Mismatch abuse: one key, two different bodies fired at once (COPIES copies each), then a third
// body, then the winner's body with its keys reordered and spaced. Invariants: exactly one body
// wins the key (every 202 names one payment and carries that body's amount); every request
// with another body ends in 422 idempotency_key_reused, never 202; the reordered winner body is
// a replay (canonical JSON); no 5xx.
//
// Settings: BASE_URL, API_KEYS (required), RUN_ID, KEYS (100), COPIES (5 per body), VUS (10),
// MAX_DURATION (5m), MAX_ATTEMPTS (10), P99_MS (1000).
//
// The scenario itself is k6/scenarios/mismatch.js, which the project's load driver runs too
// (npm run load -- mismatch); this file runs it under your own k6: npm run k6 -- mismatch
import { k6Script } from './lib/k6-script.js';
import { mismatch } from './scenarios/mismatch.js';

const script = k6Script(mismatch);
export const options = script.options;
export const setup = script.setup;
export default script.iteration;
