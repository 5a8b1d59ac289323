import type { NextFunction, Request, Response } from 'express';
import { Counter } from 'prom-client';
import { metricsRegistry } from '../platform/telemetry/metrics.js';
import type { OutageLog } from '../platform/resilience/outage-log.js';
import { ApiError } from './api-error.js';
import { sendProblem } from './problem.js';

/** Requests answered 503 at once because the process was at HTTP_MAX_IN_FLIGHT. */
export const requestsShed = new Counter({
  name: 'http_server_requests_shed_total',
  help: 'Requests refused with 503 because the process already had HTTP_MAX_IN_FLIGHT in flight',
  registers: [metricsRegistry],
});

/** Liveness and readiness stay answerable under overload: an orchestrator must not kill it. */
const EXEMPT = new Set(['/healthz', '/readyz']);

export interface AdmissionLimitOptions {
  maxInFlight: number;
  retryAfterSeconds: number;
  /** An overload episode costs a few lines: its start, one per interval, its end. */
  overload: OutageLog;
}

/**
 * At most `maxInFlight` requests in flight in this process: beyond that a request is answered
 * 503 + Retry-After at once, before its body is read or any dependency is called, so it writes
 * nothing and a retry with the same Idempotency-Key is safe. A flood then costs a counter and a
 * small response per request instead of memory for every request queued behind a slow database
 * (the heap is capped, DESIGN 25). A request leaves the count when its response is sent or its
 * connection closes.
 */
export function admissionLimit(options: AdmissionLimitOptions) {
  const { maxInFlight, retryAfterSeconds, overload } = options;
  let inFlight = 0;
  return (req: Request, res: Response, next: NextFunction): void => {
    if (EXEMPT.has(req.path)) {
      next();
      return;
    }
    if (inFlight >= maxInFlight) {
      requestsShed.inc();
      overload.failed(`${maxInFlight} requests in flight`, { action: 'answering 503' });
      const error = new ApiError(
        'service_unavailable',
        `The service is at its limit of ${maxInFlight} requests in flight; retry after Retry-After seconds with the same Idempotency-Key.`,
        { headers: { 'Retry-After': String(retryAfterSeconds) } },
      );
      sendProblem(res, error.toProblem(), error.options.headers);
      return;
    }
    inFlight++;
    overload.succeeded();
    let counted = true;
    const leave = () => {
      if (!counted) return;
      counted = false;
      inFlight--;
    };
    res.once('finish', leave);
    res.once('close', leave);
    next();
  };
}
