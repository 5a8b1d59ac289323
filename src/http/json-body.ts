import { isUtf8 } from 'node:buffer';
import express, { type NextFunction, type Request, type Response } from 'express';
import { ApiError } from './api-error.js';
import { duplicateJsonMember } from './duplicate-json-member.js';
import { DUPLICATE_MEMBER, INVALID_UTF8 } from './error-handler.js';
import { parseIdempotencyKey } from './idempotency-key-header.js';

/**
 * A creating POST (payments, refunds) before its body is read: a valid Idempotency-Key, kept in
 * `res.locals.idempotencyKey`, and a JSON content type.
 */
export function requireKeyAndJson(req: Request, res: Response, next: NextFunction): void {
  const key = parseIdempotencyKey(req.headers['idempotency-key']);
  if (!key.ok) {
    throw key.reason === 'missing'
      ? new ApiError(
          'idempotency_key_missing',
          'Send an Idempotency-Key header (1-255 visible ASCII characters).',
        )
      : new ApiError(
          'idempotency_key_invalid',
          'Idempotency-Key must be 1-255 visible ASCII characters.',
        );
  }
  (res.locals as { idempotencyKey?: string }).idempotencyKey = key.key;
  assertJsonContentType(req.headers['content-type']);
  next();
}

/**
 * A POST or PATCH whose Idempotency-Key is optional (webhook endpoints): a key, when sent, must
 * be valid and is kept like requireKeyAndJson's; the body must be JSON either way.
 */
export function optionalKeyAndJson(req: Request, res: Response, next: NextFunction): void {
  const header = req.headers['idempotency-key'];
  // Sent empty is not "missing" where the key is optional: it is a key that is not valid.
  if (header === '') {
    throw new ApiError(
      'idempotency_key_invalid',
      'Idempotency-Key must be 1-255 visible ASCII characters.',
    );
  }
  if (header !== undefined) {
    requireKeyAndJson(req, res, next);
    return;
  }
  assertJsonContentType(req.headers['content-type']);
  next();
}

/**
 * A POST whose body is optional (rotate_secret): no body and no Content-Type is an empty body;
 * a body, or a declared type, must be JSON like any other.
 */
export function optionalJson(req: Request, _res: Response, next: NextFunction): void {
  const contentType = req.headers['content-type'];
  const length = req.headers['content-length'];
  const hasBody =
    req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (contentType !== undefined || hasBody) assertJsonContentType(contentType);
  next();
}

function assertJsonContentType(contentType: string | undefined): void {
  if (!isJsonMediaType(contentType) || !isUtf8Charset(contentType)) {
    throw new ApiError(
      'unsupported_media_type',
      'Send the body as Content-Type: application/json (UTF-8).',
    );
  }
}

/** The JSON body parser of the creating POSTs; `res.locals.bodyBytes` is the body's size. */
export function jsonBody(limitBytes: number) {
  return express.json({
    limit: limitBytes,
    strict: false,
    type: () => true,
    // body-parser turns an empty body into {}; remember the size so it can be refused instead.
    // Bytes that are not UTF-8 would be decoded to U+FFFD and stored: refuse them instead.
    // A member name twice in one object is refused too: JSON.parse would keep the last value
    // silently (duplicate-json-member.ts).
    verify: (_req, res, buffer) => {
      (res as unknown as Response).locals.bodyBytes = buffer.length;
      if (!isUtf8(buffer)) {
        throw Object.assign(new Error('request body is not valid UTF-8'), { type: INVALID_UTF8 });
      }
      const member = duplicateJsonMember(buffer.toString('utf8'));
      if (member !== null) {
        throw Object.assign(new Error('request body has a duplicate member name'), {
          type: DUPLICATE_MEMBER,
          member,
        });
      }
    },
  });
}

/**
 * Whether the declared media type is application/json (parameters aside, any case). Read from
 * the header, not with `req.is`, which answers null for a request without a body: an empty POST
 * that says JSON gets 400 "body is empty", not 415 "must be JSON".
 */
function isJsonMediaType(contentType: string | undefined): boolean {
  return contentType?.split(';', 1)[0]?.trim().toLowerCase() === 'application/json';
}

/** JSON is UTF-8 (RFC 8259); a declared charset must say so. */
function isUtf8Charset(contentType: string | undefined): boolean {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1];
  return charset === undefined || /^utf-?8$/i.test(charset);
}
