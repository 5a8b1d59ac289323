// How a careful client talks to POST /payments: the same Idempotency-Key and the same body on
// every retry, retries on 409 (first request still in flight), 429, 5xx and network errors,
// honouring Retry-After, and no retry on any other answer.
import exec from 'k6/execution';
import http from 'k6/http';
import { sleep } from 'k6';
import { Counter } from 'k6/metrics';
import { apiKeys, BASE_URLS, intEnv } from './env.js';

/** Answers worth sending again with the same key (BRIEF section 4). */
export function isRetryable(status) {
  return status === 0 || status === 409 || status === 429 || status >= 500;
}

/** Every 5xx or network error seen, retried or not: the invariant "no 5xx" counts these. */
export const serverErrors = new Counter('server_errors');
/** Requests sent again because of a retryable answer. */
export const retries = new Counter('retries');
/** Requests that never got a final answer within MAX_ATTEMPTS. */
export const unresolved = new Counter('unresolved_requests');

const MAX_ATTEMPTS = intEnv('MAX_ATTEMPTS', 10);

/** The base URL of API instance `target` (any integer; wraps around BASE_URLS). */
export function baseUrl(target) {
  return BASE_URLS[target % BASE_URLS.length];
}

/**
 * A POST /payments request for http.batch. `body` is sent exactly as given (a string);
 * `target` picks the API instance when BASE_URLS lists several.
 */
export function paymentRequest(apiKey, idempotencyKey, body, target = 0) {
  return {
    method: 'POST',
    url: `${baseUrl(target)}/payments`,
    target,
    body,
    params: {
      headers: {
        Authorization: `Bearer ${apiKey}`,
        'Idempotency-Key': idempotencyKey,
        'Content-Type': 'application/json',
      },
      tags: { name: 'POST /payments' },
    },
  };
}

export function getPayment(apiKey, id, target = 0) {
  return http.get(`${baseUrl(target)}/payments/${id}`, {
    headers: { Authorization: `Bearer ${apiKey}` },
    tags: { name: 'GET /payments/{id}' },
  });
}

/**
 * Sends `requests` concurrently (one http.batch), then re-sends the ones that got a retryable
 * answer, after the longest Retry-After among them (or a short exponential backoff), until
 * every request has a final answer or MAX_ATTEMPTS rounds were made. Returns, per request, its
 * final response (or the last retryable one).
 */
export function sendWithRetries(requests) {
  const finals = new Array(requests.length);
  let waiting = requests.map((_, index) => index);
  for (let attempt = 1; waiting.length > 0; attempt++) {
    const responses = http.batch(waiting.map((index) => onInstance(requests[index], attempt)));
    const again = [];
    let pause = 0;
    responses.forEach((response, position) => {
      const index = waiting[position];
      finals[index] = response;
      if (response.status === 0 || response.status >= 500) serverErrors.add(1);
      if (isRetryable(response.status)) {
        again.push(index);
        const retryAfter = Number(response.headers['Retry-After']);
        pause = Math.max(pause, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : 0);
      }
    });
    if (again.length === 0) break;
    if (attempt >= MAX_ATTEMPTS) {
      unresolved.add(again.length);
      break;
    }
    retries.add(again.length);
    // Retry-After when given (the server knows best), else 50 ms doubling; plus up to 10%
    // jitter so the copies of a storm do not come back in lockstep.
    const base = pause > 0 ? pause : Math.min(2, 0.05 * 2 ** (attempt - 1));
    sleep(base * (1 + Math.random() * 0.1));
    waiting = again;
  }
  return finals;
}

/**
 * Attempt n of a request goes to the instance n - 1 places after its own (one instance: itself),
 * to the same path (POST /payments or a payment's refunds).
 */
function onInstance({ target, method, url, body, params }, attempt) {
  if (BASE_URLS.length < 2 || attempt === 1) return { method, url, body, params };
  const path = url.slice(baseUrl(target || 0).length);
  return { method, url: `${baseUrl((target || 0) + attempt - 1)}${path}`, body, params };
}

/** The payment in a 202 answer, or null. */
export function paymentOf(response) {
  if (response.status !== 202) return null;
  try {
    return JSON.parse(response.body);
  } catch {
    return null;
  }
}

export function isReplay(response) {
  return response.headers['Idempotent-Replayed'] === 'true';
}

export const CURRENCIES = ['EUR', 'USD', 'GBP', 'CHF', 'SEK'];

/**
 * This iteration's number in the whole test, its merchant (round robin over API_KEYS) and its
 * Idempotency-Key (`<run id>-<number>`: unique per run, prefixed for `verify --key-prefix`).
 */
export function thisIteration(data, minimumKeys = 1) {
  const keys = apiKeys(minimumKeys);
  const n = exec.scenario.iterationInTest;
  return { n, keys, apiKey: keys[n % keys.length], key: `${data.runId}-${n}` };
}
