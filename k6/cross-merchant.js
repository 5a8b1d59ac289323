// @ts-check
// Cross-merchant keys: every merchant of API_KEYS sends the SAME Idempotency-Key at the same
// moment (COPIES copies each), each with its own body. Invariants: each merchant gets its own
// payment (one id per merchant, all ids distinct, no 422: keys never collide across merchants),
// and a merchant cannot read another merchant's payment (404) but can read its own (200); no 5xx.
//
// Settings: BASE_URL, API_KEYS (at least 2), RUN_ID, KEYS (100), COPIES (5 per merchant),
// VUS (10), MAX_DURATION (5m), MAX_ATTEMPTS (10), P99_MS (1000).
//
// The scenario itself is k6/scenarios/cross-merchant.js, which the project's load driver runs too
// (npm run load -- cross-merchant); this file runs it under your own k6: npm run k6 -- cross-merchant
import { k6Script } from './lib/k6-script.js';
import { crossMerchant } from './scenarios/cross-merchant.js';

const script = k6Script(crossMerchant);
export const options = script.options;
export const setup = script.setup;
export default script.iteration;
