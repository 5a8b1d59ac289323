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
import {
  acceptedOf,
  awaitPayment,
  CLIENT_COUNTERS,
  exchange,
  getPaymentRequest,
  paymentRequest,
  POST_REFUNDS,
  refundRequest,
  resourceOf,
  send,
} from './careful-client.js';
import { keyOf, merchantOf } from './keys.js';
import { intSetting } from './settings.js';
import {
  latency,
  NO_SERVER_ERRORS,
  noneOf,
  noSetup,
  paymentStormSettings,
  perKey,
} from './shape.js';

/** @typedef {import('./careful-client.js').Answer} Answer */
/** @typedef {import('./careful-client.js').Step} Step */

export const REFUND_INVARIANTS = [
  'refund_sum_exceeded',
  'refund_accepted_too_many',
  'refund_amount_refunded_mismatch',
  'refund_id_mismatch',
  'refund_body_mismatch',
  'refund_created_twice',
  'refund_unexpected_status',
  'refund_payment_not_settled',
];

/** Iteration n's payment amount: PARTS equal parts. */
export function refundedPaymentAmount(/** @type {number} */ n, /** @type {number} */ parts) {
  return parts * (100 + (n % 900));
}

/** The refund keys of a payment whose key is `paymentKey`. */
export function refundKeys(/** @type {string} */ paymentKey, /** @type {number} */ count) {
  return Array.from({ length: count }, (_, i) => `${paymentKey}-refund-${i}`);
}

/**
 * The invariants the refunds' final answers break: `finals` holds COPIES answers per key, key by
 * key. Returns the sum of the accepted refunds too.
 * @returns {{ broken: { name: string, tags?: Record<string, string> }[], accepted: number, sum: number }}
 */
export function refundsBroken(
  /** @type {readonly Answer[]} */ finals,
  /** @type {{ copies: number, parts: number, amount: number }} */ plan,
) {
  /** @type {Map<number, Answer[]>} */
  const byKey = new Map();
  /** @type {{ name: string, tags?: Record<string, string> }[]} */
  const broken = [];
  finals.forEach((answer, index) => {
    const key = Math.floor(index / plan.copies);
    if (answer.status === 202) byKey.set(key, [...(byKey.get(key) ?? []), answer]);
    else if (!(answer.status === 422 && /refund_exceeds_payment/.test(answer.body))) {
      if (answer.status !== 0 && answer.status < 500) {
        broken.push({ name: 'refund_unexpected_status', tags: { status: String(answer.status) } });
      }
    }
  });
  let sum = 0;
  for (const answers of byKey.values()) {
    const ids = new Set(answers.map((answer) => acceptedOf(answer)?.id));
    if (ids.size !== 1 || ids.has(undefined)) broken.push({ name: 'refund_id_mismatch' });
    if (new Set(answers.map((answer) => answer.body)).size !== 1)
      broken.push({ name: 'refund_body_mismatch' });
    if (answers.filter((answer) => !answer.replayed).length > 1)
      broken.push({ name: 'refund_created_twice' });
    const first = answers[0];
    sum += Number((first && acceptedOf(first)?.amount) ?? 0);
  }
  if (byKey.size > plan.parts) broken.push({ name: 'refund_accepted_too_many' });
  if (sum > plan.amount) broken.push({ name: 'refund_sum_exceeded' });
  return { broken, accepted: byKey.size, sum };
}

/**
 * The payment's amount_refunded, read again while the API answers 5xx or nothing (a fault under
 * `npm run chaos`); undefined when no read succeeded (the read proves nothing then).
 * @returns {Generator<Step, number | undefined, Answer[]>}
 */
function* amountRefunded(/** @type {string} */ apiKey, /** @type {string} */ id) {
  for (let attempt = 0; attempt < 50; attempt++) {
    const [answer] = yield* exchange([getPaymentRequest(apiKey, id, attempt)]);
    const payment = answer ? resourceOf(answer) : null;
    if (payment) return Number(payment.amount_refunded);
    yield { kind: 'sleep', seconds: 0.2 };
  }
  return undefined;
}

/** @typedef {import('./shape.js').PaymentStormSettings & { parts: number, overshoot: number }} RefundStormSettings */

/** @type {import('./shape.js').Scenario<RefundStormSettings, {}>} */
export const refundStorm = {
  name: 'refund_storm',
  minimumKeys: 1,
  settings: (env) => ({
    // Each VU storms one payment with PARTS * OVERSHOOT * COPIES (90) requests at once: the
    // contention the invariants are about. Two VUs keep about 180 requests in flight.
    ...paymentStormSettings(env, { payments: 20, copies: 3, vus: 2, p95: 300, p99: 1500 }),
    parts: Math.max(1, intSetting(env, 'PARTS', 10)),
    overshoot: Math.max(1, intSetting(env, 'OVERSHOOT', 3)),
  }),
  executor: (s) => perKey(s.payments, s.vus, s.maxDuration),
  batch: (s) => s.parts * s.overshoot * s.copies,
  counters: ['refund_storm_payments', ...REFUND_INVARIANTS, ...CLIENT_COUNTERS],
  thresholds: (s) => ({
    ...noneOf(REFUND_INVARIANTS),
    ...NO_SERVER_ERRORS,
    refund_storm_payments: [`count==${s.payments}`],
    ...latency(POST_REFUNDS, s),
  }),
  setup: noSetup,
  *iteration({ n, runId, apiKeys, settings, tally }) {
    const apiKey = merchantOf(apiKeys, n);
    const key = keyOf(runId, n);
    const amount = refundedPaymentAmount(n, settings.parts);
    const body = JSON.stringify({ amount, currency: 'EUR', description: `refund storm #${n}` });
    const [created] = yield* send([paymentRequest(apiKey, key, body)], tally, settings.maxAttempts);
    const payment = created ? acceptedOf(created) : null;
    const settled = payment
      ? yield* awaitPayment(
          apiKey,
          String(payment.id),
          (read) => read.status === 'settled' || read.status === 'failed',
          settings.settleWaitSeconds,
        )
      : null;
    if (!payment || settled?.status !== 'settled') {
      tally.add('refund_payment_not_settled');
      return;
    }
    const paymentId = String(payment.id);
    const refundBody = JSON.stringify({
      amount: amount / settings.parts,
      reason: 'requested_by_customer',
    });
    const requests = refundKeys(key, settings.parts * settings.overshoot).flatMap((refundKey) =>
      Array.from({ length: settings.copies }, (_, copy) =>
        refundRequest(apiKey, paymentId, refundKey, refundBody, copy),
      ),
    );
    const finals = yield* send(requests, tally, settings.maxAttempts);
    const { broken, sum } = refundsBroken(finals, {
      copies: settings.copies,
      parts: settings.parts,
      amount,
    });
    for (const { name, tags } of broken) tally.add(name, 1, tags);
    const refunded = yield* amountRefunded(apiKey, paymentId);
    if (refunded !== undefined && refunded !== sum) tally.add('refund_amount_refunded_mismatch');
    tally.add('refund_storm_payments');
  },
};
