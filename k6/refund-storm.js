// @ts-check
// Refund storm: per payment (one iteration each), create it, wait until it is settled, then fire
// PARTS * OVERSHOOT refunds of amount/PARTS with distinct keys, each key COPIES times at once,
// every copy retried on 409/429/5xx with the same key and body. Invariants: at most PARTS refunds
// accepted per payment and their sum never above the amount, the payment's amount_refunded
// equal to that sum, every answer for a key naming one refund with byte-identical bodies,
// refusals only 422 refund_exceeds_payment, no 5xx. Needs the settlement role running.
//
// Settings: BASE_URL or BASE_URLS (the copies of a refund spread over the instances, retries go
// to the next), API_KEYS (required), RUN_ID, PAYMENTS (20), PARTS (10), OVERSHOOT (3),
// COPIES (3), VUS (2), MAX_DURATION (10m), SETTLE_WAIT_S (30), MAX_ATTEMPTS (10), P95_MS (300),
// P99_MS (1500).
//
// The scenario itself is k6/scenarios/refund-storm.js, which the project's load driver runs too
// (npm run load -- refund-storm); this file runs it under your own k6: npm run k6 -- refund-storm
import { k6Script } from './lib/k6-script.js';
import { refundStorm } from './scenarios/refund-storm.js';

const script = k6Script(refundStorm);
export const options = script.options;
export const setup = script.setup;
export default script.iteration;
