import type { ErrorRequestHandler } from 'express';
import { isDatabaseUnavailable } from '../platform/db-errors.js';
import { DomainError } from '../platform/domain-error.js';
import { ApiError } from './api-error.js';
import { sendProblem } from './problem.js';

/** body-parser's error types, translated to the contract's codes. */
function fromBodyParser(error: { type?: unknown; status?: unknown }): ApiError | null {
  switch (error.type) {
    case 'entity.too.large':
      return new ApiError('payload_too_large', 'The request body exceeds the size limit.');
    case 'entity.parse.failed':
      return new ApiError('malformed_json', 'The request body is not valid JSON.');
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return new ApiError('unsupported_media_type', 'Send the body as UTF-8 JSON.');
    default:
      if (typeof error.status === 'number' && error.status >= 400 && error.status < 500) {
        return new ApiError('malformed_json', 'The request body could not be read.');
      }
      return null;
  }
}

/** A component's refusal as the contract's problem: the code picks the status (ERRORS). */
function fromDomainError(error: DomainError): ApiError {
  const retryAfter = error.retryAfterSeconds;
  return new ApiError(error.code, error.message, {
    ...(retryAfter === undefined ? {} : { headers: { 'Retry-After': String(retryAfter) } }),
    cause: error,
  });
}

/**
 * The one mapping from errors to problem+json. HTTP-level rejections (ApiError) and domain
 * errors (DomainError, thrown by the components) keep their code; Postgres being unreachable is
 * 503 with Retry-After; anything else is a bug: 500.
 */
export function toApiError(error: unknown, retryAfterSeconds: number): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof DomainError) return fromDomainError(error);
  if (isDatabaseUnavailable(error)) {
    return new ApiError('service_unavailable', 'The payment database is unavailable.', {
      headers: { 'Retry-After': String(retryAfterSeconds) },
      cause: error,
    });
  }
  return (
    (typeof error === 'object' && error !== null && fromBodyParser(error)) ||
    new ApiError('internal_error', 'An unexpected error occurred.', { cause: error })
  );
}

/** Answers every error as problem+json; a 5xx is logged with its stack. */
export function errorHandler(retryAfterSeconds: number): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const apiError = toApiError(error, retryAfterSeconds);
    if (apiError.status >= 500) req.ctx.log.error({ err: error }, apiError.detail);
    if (res.headersSent) return;
    sendProblem(res, apiError.toProblem(), apiError.options.headers);
  };
}
