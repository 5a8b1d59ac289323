// @ts-check
// A realistic mix at a constant arrival rate: mostly new payments whose sources include the
// simulator's failure tokens (declines, transient failures, an unavailable acquirer, timeouts),
// some clients that retry a request that already succeeded (a timeout on their side), some with
// a bug that reuses a key for another body, and reads. Checks: every answer what the contract
// says for its case; thresholds: no 5xx, the latency objectives. Afterwards `npm run verify`
// checks that declines failed, transients settled, and the rest is where the contract puts it.
//
// Settings: BASE_URL or BASE_URLS, API_KEYS (required), RUN_ID, RATE (100 per second),
// DURATION (60s), VUS (50, up to 4x), MAX_ATTEMPTS (10), P95_MS (100), P99_MS (250).
//
// The scenario itself is k6/scenarios/mix.js, which the project's load driver runs too
// (npm run load -- mix); this file runs it under your own k6: npm run k6 -- mix
import { k6Script } from './lib/k6-script.js';
import { mix } from './scenarios/mix.js';

const script = k6Script(mix);
export const options = script.options;
export const setup = script.setup;
export default script.iteration;
