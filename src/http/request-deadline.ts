import type { NextFunction, Request, Response } from 'express';
import { ApiError } from './api-error.js';
import { sendProblem } from './problem.js';

/**
 * No request takes longer than `deadlineMs`: past it the client gets 503 + Retry-After
 * (service_unavailable) while the work goes on in the background. A write that commits after
 * the deadline is found by the client's retry with the same Idempotency-Key (the UNIQUE
 * constraint and the stored fingerprint); one that did not commit is written once by it.
 * The late handler then finds the response sent and answers nothing (see the error handler).
 */
export function requestDeadline(deadlineMs: number, retryAfterSeconds: number) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const timer = setTimeout(() => {
      if (res.headersSent) return;
      req.ctx.bind({ deadline_exceeded_ms: deadlineMs });
      const error = new ApiError(
        'service_unavailable',
        `The request did not complete within ${deadlineMs} ms; retry with the same Idempotency-Key.`,
        { headers: { 'Retry-After': String(retryAfterSeconds) } },
      );
      sendProblem(res, error.toProblem(), error.options.headers);
    }, deadlineMs);
    const clear = () => {
      clearTimeout(timer);
    };
    res.once('finish', clear);
    res.once('close', clear);
    next();
  };
}
