import type { ErrorRequestHandler } from 'express';
import { isDatabaseUnavailable } from '../platform/database/db-errors.js';
import { DomainError } from '../platform/errors/domain-error.js';
import type { OutageLog } from '../platform/resilience/outage-log.js';
import { ApiError } from './api-error.js';
import { sendProblem } from './problem.js';

/** The `type` of the error the body parser's verify step throws for bytes that are not UTF-8. */
export const INVALID_UTF8 = 'entity.utf8.invalid';
/** The `type` of the error it throws for an object with a member name twice; `member` names it. */
export const DUPLICATE_MEMBER = 'entity.member.duplicate';

/** body-parser's error types, translated to the contract's codes. */
function fromBodyParser(error: {
  type?: unknown;
  status?: unknown;
  member?: unknown;
}): ApiError | null {
  switch (error.type) {
    case 'entity.too.large':
      return new ApiError('payload_too_large', 'The request body exceeds the size limit.');
    case 'entity.parse.failed':
      return new ApiError('malformed_json', 'The request body is not valid JSON.');
    case DUPLICATE_MEMBER:
      return new ApiError(
        'malformed_json',
        `The request body has the member ${quoted(error.member)} more than once in one object.`,
      );
    case INVALID_UTF8:
      return new ApiError('invalid_encoding', 'The request body is not valid UTF-8.');
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return new ApiError('unsupported_media_type', 'Send the body as UTF-8 JSON.');
    default:
      if (typeof error.status === 'number' && error.status >= 400 && error.status < 500) {
        // Aborted, truncated (Content-Length mismatch), unreadable: not a JSON problem.
        return new ApiError('malformed_body', 'The request body could not be read.');
      }
      return null;
  }
}

/** A client-chosen name in a problem's detail: JSON-quoted, and cut to a readable length. */
function quoted(name: unknown): string {
  const text = String(name);
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}...` : text);
}

/** A component's refusal as the contract's problem: the code picks the status (ERRORS). */
function fromDomainError(error: DomainError): ApiError {
  const retryAfter = error.retryAfterSeconds;
  const headers = {
    ...error.fields,
    ...(retryAfter === undefined ? {} : { 'Retry-After': String(retryAfter) }),
  };
  return new ApiError(error.code, error.message, {
    ...(Object.keys(headers).length === 0 ? {} : { headers }),
    ...(error.stillInProgress ? { status: 409 as const } : {}),
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

/**
 * Answers every error as problem+json. A 500 is a bug: logged with its stack. A 503 is
 * deliberate (a dependency is down): Postgres outages go to `postgresOutage` (a few lines per
 * outage), the Redis ones were logged by the Redis guard. An error after the response was sent
 * (the request deadline answered first) is the tail of work already answered: debug only.
 */
export function errorHandler(
  retryAfterSeconds: number,
  postgresOutage?: OutageLog,
): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    // A path parameter that is not valid percent-encoding (`/payments/%ZZ`) names nothing.
    const apiError =
      error instanceof URIError
        ? new ApiError('not_found', `No route for ${req.method} ${req.path}.`)
        : toApiError(error, retryAfterSeconds);
    if (res.headersSent) {
      req.ctx.log.debug({ err: error }, 'error after the response was sent');
      return;
    }
    if (apiError.status === 503) {
      if (isDatabaseUnavailable(error) || isDatabaseUnavailable(causeOf(error))) {
        postgresOutage?.failed(causeOf(error) ?? error);
      }
    } else if (apiError.status >= 500) {
      req.ctx.log.error({ err: error }, apiError.detail);
    }
    sendProblem(res, apiError.toProblem(), apiError.options.headers);
  };
}

function causeOf(error: unknown): unknown {
  return error instanceof Error ? error.cause : undefined;
}
