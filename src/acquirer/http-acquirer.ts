import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as TlsAgent, request as tlsRequest } from 'node:https';
import { z } from 'zod';
import {
  AcquirerTransientError,
  type Acquirer,
  type ChargeRequest,
  type ChargeResult,
  type RefundAcquirer,
  type RefundRequest,
} from './acquirer.js';
import type { HoldAcquirer } from './hold-acquirer.js';

/** A final answer, checked: anything else from the wire is an error, never a guess. */
const finalAnswer = z.discriminatedUnion('outcome', [
  z.object({ outcome: z.literal('approved'), reference: z.string() }),
  z.object({ outcome: z.literal('declined'), code: z.string() }),
]);

/** A 503's body: `processed: true` is a retryable answer, `false` a refusal before processing. */
const unavailableBody = z.object({
  error_class: z.string().optional(),
  processed: z.boolean().optional(),
});

interface WireAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  json: unknown;
}

/**
 * The acquirer over HTTP (acquirer-http-server.ts is its server): `charge` and `refund` POST
 * the request with its idempotency key in `Idempotency-Key`, so a retried call is answered from
 * the acquirer's books, not charged again; `inquireCharge` and `inquireRefund` GET
 * `/charges/{key}` and `/refunds/{key}` (200: the stored answer; 404 `not_found`: never done).
 * The two-step operations (issue 40) likewise: `authorize`, `capture` and `void` POST
 * `/authorizations`, `/captures` and `/voids`, their inquiries GET them by key.
 * Every call is bounded by the caller's signal (`AbortSignal.timeout(ACQUIRER_TIMEOUT_MS)`).
 * A failure says whether the request may have reached the acquirer (issue 36, DESIGN 106):
 *
 * - not sent: no connection (refused, DNS, a connect that timed out), 429, or 503 with
 *   `Retry-After` or `processed: false` (refused before processing); Retry-After is kept;
 * - answered: 503 `processed: true` (the acquirer's retryable answer) or another 4xx;
 * - unknown: a timeout or a lost connection once connected, any other 5xx, an unreadable 200.
 *
 * A 401 (the token refused, DESIGN 121) is a configuration fault, not the payment's: not sent,
 * so the job waits like in an outage and is never dead-lettered for it.
 *
 * Connections are kept alive and pooled. With `token` every call carries `Authorization: Bearer`;
 * an `https://` URL is called over TLS, trusting `ca` (PEM) when given, the system's CAs else.
 */
export function createHttpAcquirer(
  baseUrl: string,
  link: { token?: string | undefined; ca?: string | undefined } = {},
): Required<Acquirer> & Required<RefundAcquirer> & Required<HoldAcquirer> {
  const url = new URL(baseUrl);
  const tls = url.protocol === 'https:';
  const pool = { keepAlive: true, maxSockets: 128 };
  const agent = tls
    ? new TlsAgent({ ...pool, ...(link.ca === undefined ? {} : { ca: link.ca }) })
    : new Agent(pool);
  const wire: Wire = {
    url,
    agent,
    request: tls ? tlsRequest : httpRequest,
    authorization: link.token === undefined ? undefined : `Bearer ${link.token}`,
  };

  async function post(path: string, key: string, body: unknown, signal: AbortSignal) {
    const answer = await send(wire, { method: 'POST', path, key, body }, signal);
    if (answer.status === 200) return parseFinal(answer.json);
    throw failureOf(answer);
  }

  async function inquire(path: string, signal: AbortSignal): Promise<ChargeResult | null> {
    const answer = await send(wire, { method: 'GET', path }, signal);
    if (answer.status === 200) return parseFinal(answer.json);
    if (answer.status === 404 && isNotFound(answer.json)) return null;
    throw failureOf(answer);
  }

  return {
    charge: ({ idempotencyKey, ...body }: ChargeRequest, signal: AbortSignal) =>
      post('/charges', idempotencyKey, body, signal),
    refund: ({ idempotencyKey, ...body }: RefundRequest, signal: AbortSignal) =>
      post('/refunds', idempotencyKey, body, signal),
    inquireCharge: (key, signal) => inquire(`/charges/${encodeURIComponent(key)}`, signal),
    inquireRefund: (key, signal) => inquire(`/refunds/${encodeURIComponent(key)}`, signal),
    authorize: ({ idempotencyKey, ...body }, signal) =>
      post('/authorizations', idempotencyKey, body, signal),
    capture: ({ idempotencyKey, ...body }, signal) =>
      post('/captures', idempotencyKey, body, signal),
    void: ({ idempotencyKey, ...body }, signal) => post('/voids', idempotencyKey, body, signal),
    inquireAuthorization: (key, signal) =>
      inquire(`/authorizations/${encodeURIComponent(key)}`, signal),
    inquireCapture: (key, signal) => inquire(`/captures/${encodeURIComponent(key)}`, signal),
    inquireVoid: (key, signal) => inquire(`/voids/${encodeURIComponent(key)}`, signal),
  };
}

function parseFinal(json: unknown): ChargeResult {
  const parsed = finalAnswer.safeParse(json);
  if (parsed.success) return parsed.data;
  throw new AcquirerTransientError(
    'acquirer answered 200 without a final answer',
    'acquirer_error',
    'unknown',
  );
}

function isNotFound(json: unknown): boolean {
  return (
    typeof json === 'object' &&
    json !== null &&
    (json as { status?: unknown }).status === 'not_found'
  );
}

/** Retry-After in ms (seconds, or an HTTP date), when present and readable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1_000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** What a non-200 answer means for the call (see createHttpAcquirer). */
export function failureOf({ status, headers, json }: WireAnswer): AcquirerTransientError {
  const message = `acquirer answered ${String(status)}`;
  const retryAfter = retryAfterMs(headers['retry-after']);
  const body = unavailableBody.safeParse(json);
  const bodyClass = body.success ? body.data.error_class : undefined;
  if (status === 401) {
    // Refused before processing: the token, not the payment. Waits like an outage.
    return new AcquirerTransientError(
      'acquirer refused the bearer token (401): check ACQUIRER_TOKEN on settlement and the acquirer',
      'acquirer_unauthorized',
      'not_sent',
    );
  }
  if (status === 429) {
    return new AcquirerTransientError(message, 'acquirer_rate_limited', 'not_sent', retryAfter);
  }
  if (status === 503) {
    const processed = body.success ? body.data.processed : undefined;
    if (processed === true) {
      return new AcquirerTransientError(message, bodyClass ?? 'acquirer_transient', 'answered');
    }
    if (processed === false || retryAfter !== undefined) {
      return new AcquirerTransientError(message, 'acquirer_unavailable', 'not_sent', retryAfter);
    }
  }
  if (status >= 400 && status < 500) {
    return new AcquirerTransientError(message, 'acquirer_rejected', 'answered');
  }
  return new AcquirerTransientError(message, 'acquirer_error', 'unknown');
}

/** How to reach the acquirer: its URL, the pooled agent and request of its protocol, the token. */
interface Wire {
  url: URL;
  agent: Agent;
  request: typeof httpRequest;
  authorization: string | undefined;
}

interface Call {
  method: 'GET' | 'POST';
  path: string;
  key?: string;
  body?: unknown;
}

function send(wire: Wire, call: Call, signal: AbortSignal): Promise<WireAnswer> {
  const { url, agent } = wire;
  return new Promise((resolve, reject) => {
    signal.throwIfAborted();
    const text = call.body === undefined ? undefined : JSON.stringify(call.body);
    // Whether the request may have reached the acquirer: once a socket is connected, a failure
    // leaves the outcome unknown; before, nothing was sent.
    let connected = false;
    const req = wire.request(
      {
        host: url.hostname,
        port: url.port,
        path: call.path,
        method: call.method,
        agent,
        signal,
        headers: {
          ...(text === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }),
          ...(call.key === undefined ? {} : { 'idempotency-key': call.key }),
          ...(wire.authorization === undefined ? {} : { authorization: wire.authorization }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          let json: unknown = null;
          try {
            json = body ? JSON.parse(body) : null;
          } catch {
            json = null;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json });
        });
      },
    );
    req.on('socket', (socket) => {
      if (!socket.connecting) connected = true;
      else socket.once('connect', () => (connected = true));
    });
    req.on('error', (error) => {
      const delivery = connected ? 'unknown' : 'not_sent';
      if (signal.aborted) {
        const timedOut = connected ? 'acquirer_timeout' : 'acquirer_unavailable';
        reject(new AcquirerTransientError('no answer within the call timeout', timedOut, delivery));
      } else {
        const errorClass = connected ? 'acquirer_connection_lost' : 'acquirer_unavailable';
        reject(new AcquirerTransientError(error.message, errorClass, delivery));
      }
    });
    req.end(text);
  });
}
