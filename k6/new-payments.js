// @ts-check
// New-payment throughput: a constant arrival rate of POST /payments, each with a fresh key, sent
// once (open model: requests start on schedule whatever the answers do, so a slow server shows
// up as latency and dropped iterations, not as a lower request rate). Thresholds: every answer
// 202, no iteration dropped, and the latency objective (BRIEF section 11: p99 <= 25 ms at half
// the peak rate; run it at half of what `npm run bench` reports as the peak).
//
// Settings: BASE_URL, API_KEYS (required), RUN_ID, RATE (200 per second), DURATION (30s),
// VUS (50, up to 4x), P99_MS (25).
//
// The scenario itself is k6/scenarios/new-payments.js, which the project's load driver runs too
// (npm run load -- new-payments); this file runs it under your own k6: npm run k6 -- new-payments
import { k6Script } from './lib/k6-script.js';
import { newPayments } from './scenarios/new-payments.js';

const script = k6Script(newPayments);
export const options = script.options;
export const setup = script.setup;
export default script.iteration;
