import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { ADDRESS_REFUSED, type AddressPolicy } from './address-policy.js';
import { webhookSignature } from './webhook-signature.js';

/** The most of a response body read; the rest is dropped with the connection. */
export const RESPONSE_BODY_LIMIT = 64 * 1024;

/** One delivery attempt's request. */
export interface WebhookRequest {
  url: string;
  /** The event id: the webhook-id, the same on every retry and replay. */
  eventId: string;
  /** The exact bytes sent and signed (the event's CloudEvent JSON). */
  body: string;
  /** Every unexpired signing secret of the endpoint. */
  secrets: readonly string[];
}

/** How an attempt went. Never carries a secret. */
export interface SendResult {
  startedAt: Date;
  latencyMs: number;
  /** The answer's status; null when there was none (timeout, connection error, refused). */
  statusCode: number | null;
  /** Why there was no answer: `timeout`, `address_refused`, `connection_error`; null otherwise. */
  errorClass: string | null;
  /** The error's text, for the merchant's attempt history; null when the endpoint answered. */
  error: string | null;
  /** The answer's Retry-After header, as sent. */
  retryAfter: string | undefined;
}

export interface WebhookSender {
  send: (request: WebhookRequest) => Promise<SendResult>;
  /** Closes the kept-alive connections. */
  close: () => void;
}

export interface WebhookSenderOptions {
  timeoutMs: number;
  policy: Pick<AddressPolicy, 'classify' | 'lookup'>;
}

const USER_AGENT = 'payments-webhooks/1';

/**
 * Sends deliveries: POST, Standard Webhooks headers, at most `timeoutMs` for the whole exchange
 * (connect, answer, body), redirects not followed (a 3xx is an answer like any other non-2xx),
 * the answer's body read up to 64 KiB and dropped. Connections go only where the address policy
 * allows: its `lookup` vets every address a host name resolves to when the socket connects (so a
 * DNS answer changed since the endpoint was created cannot point inward), and an IP-literal host
 * (which skips the lookup) is vetted here. Never rejects.
 */
export function createWebhookSender({ timeoutMs, policy }: WebhookSenderOptions): WebhookSender {
  const agentOptions = { keepAlive: true, maxSockets: 64, lookup: policy.lookup };
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };

  const send = (request: WebhookRequest): Promise<SendResult> => {
    const startedAt = new Date();
    const started = performance.now();
    const done = (
      statusCode: number | null,
      errorClass: string | null,
      error: string | null,
      retryAfter?: string,
    ): SendResult => ({
      startedAt,
      latencyMs: Math.round(performance.now() - started),
      statusCode,
      errorClass,
      error,
      retryAfter,
    });

    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return Promise.resolve(done(null, 'invalid_url', 'the endpoint URL is not valid'));
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      return Promise.resolve(done(null, 'invalid_url', 'the endpoint URL is not http(s)'));
    }
    const literal = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const literalClass = isIP(literal) === 0 ? null : policy.classify(literal);
    if (literalClass !== null) {
      const message = `${literal} is ${literalClass}; deliveries go to public addresses only`;
      return Promise.resolve(done(null, 'address_refused', message));
    }

    const headers = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(request.body)),
      'user-agent': USER_AGENT,
      'webhook-id': request.eventId,
      'webhook-timestamp': String(Math.floor(startedAt.getTime() / 1_000)),
      'webhook-signature': webhookSignature(
        request.secrets,
        request.eventId,
        startedAt,
        request.body,
      ),
    };
    const isHttps = url.protocol === 'https:';
    const transport = isHttps ? https : http;

    return new Promise<SendResult>((resolve) => {
      let settled = false;
      const finish = (result: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const req = transport.request(url, {
        method: 'POST',
        headers,
        agent: isHttps ? agents.https : agents.http,
        lookup: policy.lookup,
      });
      const timer = setTimeout(() => {
        finish(done(null, 'timeout', `no answer within ${String(timeoutMs)} ms`));
        req.destroy();
      }, timeoutMs);
      req.on('error', (error: NodeJS.ErrnoException) => {
        const refused = error.code === ADDRESS_REFUSED;
        finish(done(null, refused ? 'address_refused' : 'connection_error', error.message));
      });
      req.on('response', (res) => {
        const retryAfter = res.headers['retry-after'];
        const answered = () => done(res.statusCode ?? null, null, null, retryAfter);
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read < RESPONSE_BODY_LIMIT) return;
          finish(answered());
          res.destroy();
        });
        res.on('end', () => {
          finish(answered());
        });
        res.on('error', () => {
          finish(answered());
        });
      });
      req.end(request.body);
    });
  };

  return {
    send,
    close: () => {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
