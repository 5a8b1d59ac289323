/**
 * What an amount may be, for a payment and for what is refunded of it: the currencies settled
 * and the largest amount. Refunds read these without the payments API's schemas.
 */

/** ISO 4217 codes we settle. Amounts are in each currency's minor unit (JPY has none). */
export const SUPPORTED_CURRENCIES = [
  'AUD',
  'CAD',
  'CHF',
  'CZK',
  'DKK',
  'EUR',
  'GBP',
  'HKD',
  'JPY',
  'NOK',
  'NZD',
  'PLN',
  'SEK',
  'SGD',
  'USD',
] as const;

/** The largest amount of a payment or a refund, in the currency's minor unit. */
export const MAX_AMOUNT = 99_999_999;
