import { Agent, request as httpRequest } from 'node:http';
import { z } from 'zod';
import {
  AcquirerTransientError,
  type Acquirer,
  type ChargeRequest,
  type RefundAcquirer,
  type RefundRequest,
} from './acquirer.js';

/** A final answer, checked: anything else from the wire is an error, never a guess. */
const finalAnswer = z.discriminatedUnion('outcome', [
  z.object({ outcome: z.literal('approved'), reference: z.string() }),
  z.object({ outcome: z.literal('declined'), code: z.string() }),
]);

/**
 * The acquirer over HTTP (acquirer-http-server.ts is its server): `charge` and `refund` POST
 * the request with its idempotency key in `Idempotency-Key`, so a retried call is answered
 * from the acquirer's books, not charged again. Every call is bounded by the caller's signal
 * (the worker passes `AbortSignal.timeout(ACQUIRER_TIMEOUT_MS)`): an abort destroys the request
 * and rejects with the signal's reason (a TimeoutError, classified `acquirer_timeout`). A 503 or
 * a connection failure is transient (`acquirer_unavailable`); 200 is a final answer; anything
 * else is an error (retried as `acquirer_error`). Connections are kept alive and pooled.
 */
export function createHttpAcquirer(baseUrl: string): Acquirer & RefundAcquirer {
  const url = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 128 });

  async function post(path: string, key: string, body: unknown, signal: AbortSignal) {
    const text = JSON.stringify(body);
    const { status, json } = await send(url, agent, path, key, text, signal);
    if (status === 200) return finalAnswer.parse(json);
    const message = `acquirer answered ${String(status)}`;
    if (status === 503) throw new AcquirerTransientError(message, 'acquirer_unavailable');
    throw new Error(message);
  }

  return {
    charge: ({ idempotencyKey, ...body }: ChargeRequest, signal: AbortSignal) =>
      post('/charges', idempotencyKey, body, signal),
    refund: ({ idempotencyKey, ...body }: RefundRequest, signal: AbortSignal) =>
      post('/refunds', idempotencyKey, body, signal),
  };
}

function send(
  url: URL,
  agent: Agent,
  path: string,
  key: string,
  text: string,
  signal: AbortSignal,
): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    signal.throwIfAborted();
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: 'POST',
        agent,
        signal,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
          'idempotency-key': key,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          try {
            const body = Buffer.concat(chunks).toString('utf8');
            resolve({ status: res.statusCode ?? 0, json: body ? JSON.parse(body) : null });
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)));
          }
        });
      },
    );
    req.on('error', (error) => {
      if (signal.aborted) {
        reject(signal.reason instanceof Error ? signal.reason : error);
      } else {
        reject(new AcquirerTransientError(error.message, 'acquirer_unavailable'));
      }
    });
    req.end(text);
  });
}
