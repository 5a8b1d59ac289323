// @ts-check
// Key plans and body builders every scenario shares.

/** The currencies payments rotate through. */
export const CURRENCIES = ['EUR', 'USD', 'GBP', 'CHF', 'SEK'];

/** Iteration n's Idempotency-Key: unique per run, prefixed for `verify --key-prefix`. */
export function keyOf(/** @type {string} */ runId, /** @type {number} */ n) {
  return `${runId}-${n}`;
}

/** Iteration n's merchant: round robin over the API keys. */
export function merchantOf(/** @type {readonly string[]} */ apiKeys, /** @type {number} */ n) {
  return /** @type {string} */ (apiKeys[n % apiKeys.length]);
}

/** The currency of iteration n. */
export function currencyOf(/** @type {number} */ n) {
  return /** @type {string} */ (CURRENCIES[n % CURRENCIES.length]);
}
