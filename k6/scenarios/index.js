// @ts-check
// Every scenario by the name `npm run load -- <name>` and `npm run k6 -- <name>` take.
import { captureRace } from './capture-race.js';
import { crossMerchant } from './cross-merchant.js';
import { mismatch } from './mismatch.js';
import { mix } from './mix.js';
import { newPayments } from './new-payments.js';
import { refundStorm } from './refund-storm.js';
import { replays } from './replays.js';
import { storm } from './storm.js';

/** @type {Record<string, import('./shape.js').Scenario<any, any>>} */
export const SCENARIOS = {
  storm,
  mix,
  'new-payments': newPayments,
  replays,
  mismatch,
  'cross-merchant': crossMerchant,
  'refund-storm': refundStorm,
  'capture-race': captureRace,
};
