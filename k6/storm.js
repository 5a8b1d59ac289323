// @ts-check
// Duplicate-charge storm: many keys, each fired COPIES times at once, every copy retried with
// the same key and body on 409/429/5xx until it gets its final answer. Invariants: all answers
// for a key name one payment id, with byte-identical bodies, at most one of them is not a
// replay, every answer is 202 (or a retryable one that ran out of attempts), and no 5xx.
//
// Settings: BASE_URL or BASE_URLS (copy i goes to instance i), API_KEYS (required), RUN_ID,
// KEYS (200), COPIES (10), VUS (20), MAX_DURATION (10m), MAX_ATTEMPTS (10), P95_MS (250),
// P99_MS (1000).
//
// The scenario itself is k6/scenarios/storm.js, which the project's load driver runs too
// (npm run load -- storm); this file runs it under your own k6: npm run k6 -- storm
import { k6Script } from './lib/k6-script.js';
import { storm } from './scenarios/storm.js';

const script = k6Script(storm);
export const options = script.options;
export const setup = script.setup;
export default script.iteration;
