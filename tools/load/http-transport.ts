import { Pool } from 'undici';
import type { Answer, Request } from '../../k6/scenarios/careful-client.js';

/** One request as the load saw it: when it ended (epoch ms), how long it took, what came back. */
export interface RequestSample {
  atMs: number;
  durationMs: number;
  /** 0: no answer (refused, reset, timed out). */
  status: number;
  /** Why there was no answer ('' when there was one). */
  error: string;
  /** The request's name ("POST /payments"). */
  name: string;
}

export interface Transport {
  /** Sends one request; null when `stop` aborted it (the run is ending, nothing to judge). */
  send: (request: Request, stop: AbortSignal) => Promise<Answer | null>;
  close: () => Promise<void>;
}

/**
 * The driver's HTTP client: one undici pool of keep-alive connections per API instance, as
 * many connections as requests in flight (a storm's copies race on their own connections, as
 * k6's do). Every request is bounded by `timeoutMs` (connect, headers and body together); an
 * answer that never comes is status 0, as in k6. `onSample` sees every request that ended.
 */
export function httpTransport(
  urls: readonly string[],
  options: { timeoutMs: number; onSample: (sample: RequestSample) => void },
): Transport {
  const pools = urls.map(
    (url) =>
      new Pool(url, {
        connections: null,
        pipelining: 1,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
        connectTimeout: Math.min(options.timeoutMs, 10_000),
        keepAliveTimeout: 4_000,
      }),
  );
  const send = async (request: Request, stop: AbortSignal): Promise<Answer | null> => {
    const pool = pools[request.target % pools.length];
    if (!pool) throw new Error('no API instance to send to');
    const started = performance.now();
    const signal = AbortSignal.any([stop, AbortSignal.timeout(options.timeoutMs)]);
    let answer: Answer;
    try {
      const response = await pool.request({
        method: request.method,
        path: request.path,
        headers: request.headers,
        body: request.body ?? null,
        signal,
      });
      const body = await response.body.text();
      const retryAfter = response.headers['retry-after'];
      answer = {
        status: response.statusCode,
        body,
        retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
        replayed: response.headers['idempotent-replayed'] === 'true',
        error: '',
      };
    } catch (error) {
      if (stop.aborted) return null;
      answer = { status: 0, body: '', retryAfter: null, replayed: false, error: errorCode(error) };
    }
    const durationMs = performance.now() - started;
    options.onSample({
      atMs: Date.now(),
      durationMs,
      status: answer.status,
      error: answer.error,
      name: request.name,
    });
    return answer;
  };
  return {
    send,
    close: async () => {
      await Promise.all(pools.map((pool) => pool.destroy()));
    },
  };
}

/** A short name for why a request got no answer (undici's or the system's code). */
function errorCode(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as Error & { code?: unknown }).code;
    if (typeof code === 'string') return code;
    if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'timeout';
    return error.name;
  }
  return 'error';
}
