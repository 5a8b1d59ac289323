// @ts-check
// Capture-vs-cancel race (issue 40): per payment (one iteration each), create a manual payment,
// wait until it is requires_capture, then fire CAPTURES captures and CANCELS cancels at once
// (distinct keys, each sent COPIES times). Invariants: exactly one wins (202), the rest are
// refused 422 with the winner's code, every copy of a key gets the same status and body, and the
// payment ends settled (the winner's amount_captured) or canceled (its reason).
//
// Settings: BASE_URL or BASE_URLS, API_KEYS (required), RUN_ID, PAYMENTS (10), CAPTURES (5),
// CANCELS (5), COPIES (3), VUS (2), MAX_DURATION (10m), SETTLE_WAIT_S (30), MAX_ATTEMPTS (10),
// P95_MS (500), P99_MS (2500).
//
// The scenario itself is k6/scenarios/capture-race.js, which the project's load driver runs too
// (npm run load -- capture-race); this file runs it under your own k6: npm run k6 -- capture-race
import { k6Script } from './lib/k6-script.js';
import { captureRace } from './scenarios/capture-race.js';

const script = k6Script(captureRace);
export const options = script.options;
export const setup = script.setup;
export default script.iteration;
