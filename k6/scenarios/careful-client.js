// @ts-check
// How a careful client talks to the API, as one source for the k6 scripts and the load driver:
// the same Idempotency-Key and body on every retry, a retry on 409 (first request still in
// flight), 429, 5xx and no answer, honouring Retry-After, and no retry on any other answer.
//
// A scenario is a generator: it yields steps ({ kind: 'http', requests } or { kind: 'sleep',
// seconds }) and gets the answers back. k6 runs the steps synchronously (http.batch, sleep);
// the load driver runs them on undici. Neither engine decides anything a scenario says.

/**
 * @typedef {object} Request
 * @property {'GET' | 'POST'} method
 * @property {number} target  which API instance: any integer, wrapped around BASE_URLS
 * @property {string} path
 * @property {Record<string, string>} headers
 * @property {string} [body]  sent exactly as given
 * @property {string} name  the latency metric's name tag ("POST /payments")
 */

/**
 * @typedef {object} Answer
 * @property {number} status  0: no answer (refused, reset, timed out)
 * @property {string} body
 * @property {string | null} retryAfter  the Retry-After header
 * @property {boolean} replayed  Idempotent-Replayed: true
 * @property {string} error  why there was no answer ('' when there was one)
 */

/** @typedef {{ kind: 'http', requests: Request[] } | { kind: 'sleep', seconds: number }} Step */

/**
 * What a scenario counts. `add` adds to a counter the scenario declared; `check` records a
 * check's outcome (the `checks` rate).
 * @typedef {object} Tally
 * @property {(metric: string, value?: number, tags?: Record<string, string>) => void} add
 * @property {(name: string, ok: boolean) => void} check
 */

/** The counters the careful client adds to: every scenario declares them. */
export const CLIENT_COUNTERS = ['server_errors', 'retries', 'unresolved_requests'];

export const POST_PAYMENTS = 'POST /payments';
export const GET_PAYMENT = 'GET /payments/{id}';
export const POST_REFUNDS = 'POST /payments/{id}/refunds';
export const POST_CAPTURE = 'POST /payments/{id}/capture';
export const POST_CANCEL = 'POST /payments/{id}/cancel';

/** Answers worth sending again with the same key (BRIEF section 4). */
export function isRetryable(/** @type {number} */ status) {
  return status === 0 || status === 409 || status === 429 || status >= 500;
}

/** @returns {Record<string, string>} */
function keyedHeaders(/** @type {string} */ apiKey, /** @type {string} */ idempotencyKey) {
  return {
    Authorization: `Bearer ${apiKey}`,
    'Idempotency-Key': idempotencyKey,
    'Content-Type': 'application/json',
  };
}

/** A POST of `body` (sent exactly as given) to `path` with the key; `name` tags its latency. */
function keyedPost(
  /** @type {string} */ apiKey,
  /** @type {string} */ path,
  /** @type {string} */ idempotencyKey,
  /** @type {string} */ body,
  /** @type {string} */ name,
  /** @type {number} */ target,
) {
  /** @type {Request} */
  const request = {
    method: 'POST',
    target,
    path,
    headers: keyedHeaders(apiKey, idempotencyKey),
    body,
    name,
  };
  return request;
}

/** A POST /payments request; `body` is sent exactly as given. */
export function paymentRequest(
  /** @type {string} */ apiKey,
  /** @type {string} */ idempotencyKey,
  /** @type {string} */ body,
  target = 0,
  name = POST_PAYMENTS,
) {
  return keyedPost(apiKey, '/payments', idempotencyKey, body, name, target);
}

/** A POST /payments/{id}/refunds request. */
export function refundRequest(
  /** @type {string} */ apiKey,
  /** @type {string} */ paymentId,
  /** @type {string} */ idempotencyKey,
  /** @type {string} */ body,
  target = 0,
) {
  const path = `/payments/${paymentId}/refunds`;
  return keyedPost(apiKey, path, idempotencyKey, body, POST_REFUNDS, target);
}

/** A POST /payments/{id}/capture or /cancel request (issue 40's second step). */
export function holdRequest(
  /** @type {string} */ apiKey,
  /** @type {string} */ paymentId,
  /** @type {'capture' | 'cancel'} */ action,
  /** @type {string} */ idempotencyKey,
  /** @type {string} */ body,
  target = 0,
) {
  const name = action === 'capture' ? POST_CAPTURE : POST_CANCEL;
  return keyedPost(apiKey, `/payments/${paymentId}/${action}`, idempotencyKey, body, name, target);
}

/** A GET /payments/{id} request. */
export function getPaymentRequest(
  /** @type {string} */ apiKey,
  /** @type {string} */ id,
  target = 0,
) {
  /** @type {Request} */
  const request = {
    method: 'GET',
    target,
    path: `/payments/${id}`,
    headers: { Authorization: `Bearer ${apiKey}` },
    name: GET_PAYMENT,
  };
  return request;
}

/**
 * Sends `requests` once, together; no retry.
 * @returns {Generator<Step, Answer[], Answer[]>}
 */
export function* exchange(/** @type {Request[]} */ requests) {
  return yield { kind: 'http', requests };
}

/**
 * The pause before retry round `attempt` + 1: the longest Retry-After among the answers when
 * given (the server knows best), else 50 ms doubling up to 2 s; plus up to 10% jitter so the
 * copies of a storm do not come back in lockstep.
 */
export function retryPause(
  /** @type {number} */ attempt,
  /** @type {number} */ retryAfterSeconds,
  random = Math.random(),
) {
  const base = retryAfterSeconds > 0 ? retryAfterSeconds : Math.min(2, 0.05 * 2 ** (attempt - 1));
  return base * (1 + random * 0.1);
}

/**
 * Sends `requests` concurrently, then sends again the ones that got a retryable answer, after
 * `retryPause`, until every request has a final answer or `maxAttempts` rounds were made. Retry
 * n of a request goes to the instance n places after its own. Returns, per request, its final
 * answer (or its last retryable one). Counts every 5xx or missing answer (server_errors), every
 * retry (retries) and every request left without a final answer (unresolved_requests).
 * @returns {Generator<Step, Answer[], Answer[]>}
 */
export function* send(
  /** @type {Request[]} */ requests,
  /** @type {Tally} */ tally,
  /** @type {number} */ maxAttempts,
) {
  /** @type {Answer[]} */
  const finals = new Array(requests.length);
  let waiting = requests.map((_, index) => index);
  for (let attempt = 1; waiting.length > 0; attempt++) {
    const round = waiting.map((index) => {
      const request = /** @type {Request} */ (requests[index]);
      return attempt === 1 ? request : { ...request, target: request.target + attempt - 1 };
    });
    const answers = yield* exchange(round);
    /** @type {number[]} */
    const again = [];
    let retryAfter = 0;
    answers.forEach((answer, position) => {
      const index = /** @type {number} */ (waiting[position]);
      finals[index] = answer;
      if (answer.status === 0 || answer.status >= 500) tally.add('server_errors');
      if (isRetryable(answer.status)) {
        again.push(index);
        const seconds = Number(answer.retryAfter);
        if (Number.isFinite(seconds) && seconds > retryAfter) retryAfter = seconds;
      }
    });
    if (again.length === 0) break;
    if (attempt >= maxAttempts) {
      tally.add('unresolved_requests', again.length);
      break;
    }
    tally.add('retries', again.length);
    yield { kind: 'sleep', seconds: retryPause(attempt, retryAfter) };
    waiting = again;
  }
  return finals;
}

/**
 * The resource in a 202 answer (a payment or a refund), or null.
 * @returns {{ id?: string, amount?: number, [field: string]: unknown } | null}
 */
export function acceptedOf(/** @type {Answer} */ answer) {
  if (answer.status !== 202) return null;
  try {
    const parsed = JSON.parse(answer.body);
    return typeof parsed === 'object' && parsed !== null ? parsed : null;
  } catch {
    return null;
  }
}

/** The JSON object in a 200 answer, or null. */
export function resourceOf(/** @type {Answer} */ answer) {
  if (answer.status !== 200) return null;
  try {
    const parsed = JSON.parse(answer.body);
    return typeof parsed === 'object' && parsed !== null
      ? /** @type {Record<string, unknown>} */ (parsed)
      : null;
  } catch {
    return null;
  }
}

/**
 * Polls GET /payments/{id} (10 times a second) until `done` says yes of the payment, for at most
 * `waitSeconds`; returns that payment, or null when the time ran out.
 * @returns {Generator<Step, Record<string, unknown> | null, Answer[]>}
 */
export function* awaitPayment(
  /** @type {string} */ apiKey,
  /** @type {string} */ id,
  /** @type {(payment: Record<string, unknown>) => boolean} */ done,
  /** @type {number} */ waitSeconds,
) {
  for (let polls = 0; polls < waitSeconds * 10; polls++) {
    const [answer] = yield* exchange([getPaymentRequest(apiKey, id)]);
    const payment = answer ? resourceOf(answer) : null;
    if (payment && done(payment)) return payment;
    yield { kind: 'sleep', seconds: 0.1 };
  }
  return null;
}
