import { isUtf8 } from 'node:buffer';
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { z } from 'zod';
import { parseIdempotencyKey } from '../idempotency/idempotency-key-header.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import { ApiError } from '../http/api-error.js';
import { duplicateJsonMember } from '../http/duplicate-json-member.js';
import { DUPLICATE_MEMBER, INVALID_UTF8 } from '../http/error-handler.js';
import type { Queryable } from '../platform/db.js';
import type { CreatePayment } from './create-payment.js';
import { toPaymentResource } from './payment-resource.js';
import { findPayment, listPayments } from './payment-repository.js';
import { createPaymentBodySchema, listPaymentsQuerySchema } from './payment-schemas.js';
import { paymentsGate, type PaymentsGateDeps } from './payments-gate.js';

export interface PaymentsRouterDeps extends PaymentsGateDeps {
  db: Queryable;
  createPayment: CreatePayment;
  bodyLimitBytes: number;
}

/** Set by the auth middleware on every /payments request that reaches a handler. */
interface Authenticated {
  merchant: Merchant;
  idempotencyKey?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** POST /payments before its body is read: a valid Idempotency-Key and a JSON content type. */
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
  (res.locals as Authenticated).idempotencyKey = key.key;
  const contentType = req.headers['content-type'];
  if (!isJsonMediaType(contentType) || !isUtf8Charset(contentType)) {
    throw new ApiError(
      'unsupported_media_type',
      'Send the body as Content-Type: application/json (UTF-8).',
    );
  }
  next();
}

/** POST /payments once the body is parsed: validate, create (or replay), answer. */
function createPaymentHandler(createPayment: CreatePayment) {
  return async (req: Request, res: Response) => {
    if (!res.locals.bodyBytes) {
      throw new ApiError('malformed_json', 'The request body is empty.');
    }
    refuseReservedMetadataKeys(req.body);
    const body = validate(createPaymentBodySchema, req.body as unknown);
    const { merchant, idempotencyKey: key = '' } = res.locals as Authenticated;
    req.ctx.bind({ idempotency_key: key });
    const outcome = await createPayment(merchant, key, body);
    req.ctx.bind({ payment_id: outcome.paymentId });
    // The request deadline answered 503 already; a retry with the key will get this outcome.
    if (res.headersSent) return;
    res.status(outcome.status);
    res.setHeader('Location', `/payments/${outcome.paymentId}`);
    if (outcome.replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.type('application/json').send(outcome.body);
  };
}

function getPaymentHandler(db: Queryable) {
  return async (req: Request<{ id: string }>, res: Response) => {
    const { merchant } = res.locals as Authenticated;
    const id = req.params.id;
    // A malformed id cannot exist: the same 404 as an unknown or foreign one, never a 500.
    const row = UUID.test(id) ? await findPayment(db, merchant.id, id) : null;
    if (!row) throw new ApiError('not_found', `No payment ${id}.`);
    res.json(toPaymentResource(row));
  };
}

function listPaymentsHandler(db: Queryable) {
  return async (req: Request, res: Response) => {
    const { merchant } = res.locals as Authenticated;
    const query = validate(listPaymentsQuerySchema, req.query);
    const page = await listPayments(db, merchant.id, query.limit, query.starting_after);
    if (page.kind === 'unknown_cursor') {
      throw new ApiError('validation_failed', 'starting_after is not one of your payments.', {
        errors: [{ path: 'starting_after', message: 'no such payment' }],
      });
    }
    res.json({ object: 'list', data: page.rows.map(toPaymentResource), has_more: page.hasMore });
  };
}

/** The JSON body parser of the creating POSTs (refunds reuse it). */
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
 * The payments component's HTTP entry point. Handlers only translate HTTP to the service and
 * back; request-level rejections are ApiErrors thrown before anything is written (I5), the
 * service's refusals are domain errors (payment-errors.ts); the app maps both to problem+json.
 */
export function paymentsRouter(deps: PaymentsRouterDeps): Router {
  const router = Router();
  const parseJson = jsonBody(deps.bodyLimitBytes);

  // Before authentication: a method the path does not have is 405 whoever asks.
  router.all('/payments', allowOnly('GET, HEAD, POST'));
  router.all('/payments/:id', allowOnly('GET, HEAD'));
  router.use('/payments', paymentsGate(deps));
  router.post('/payments', requireKeyAndJson, parseJson, createPaymentHandler(deps.createPayment));
  router.get('/payments/:id', getPaymentHandler(deps.db));
  router.get('/payments', listPaymentsHandler(deps.db));
  return router;
}

/** A 405 with Allow for any method not in `allow`; the path's own handlers serve the rest. */
function allowOnly(allow: string) {
  const methods = new Set(allow.split(', '));
  return (req: Request, _res: Response, next: NextFunction) => {
    if (methods.has(req.method)) {
      next();
      return;
    }
    throw new ApiError('method_not_allowed', `${req.method} is not allowed on ${req.path}.`, {
      headers: { Allow: allow },
    });
  };
}

/** JSON is UTF-8 (RFC 8259); a declared charset must say so. */
/**
 * Whether the declared media type is application/json (parameters aside, any case). Read from
 * the header, not with `req.is`, which answers null for a request without a body: an empty POST
 * that says JSON gets 400 "body is empty", not 415 "must be JSON".
 */
function isJsonMediaType(contentType: string | undefined): boolean {
  return contentType?.split(';', 1)[0]?.trim().toLowerCase() === 'application/json';
}

function isUtf8Charset(contentType: string | undefined): boolean {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1];
  return charset === undefined || /^utf-?8$/i.test(charset);
}

/**
 * JSON.parse keeps a `__proto__` key as an own property, but zod's record parser skips it, so
 * it would vanish from the stored metadata (and the fingerprint). Refused, never dropped.
 */
function refuseReservedMetadataKeys(body: unknown): void {
  if (typeof body !== 'object' || body === null || !Object.hasOwn(body, 'metadata')) return;
  const metadata = (body as { metadata: unknown }).metadata;
  if (typeof metadata === 'object' && metadata !== null && Object.hasOwn(metadata, '__proto__')) {
    throw new ApiError('validation_failed', 'The request has invalid fields; see errors.', {
      errors: [{ path: 'metadata.__proto__', message: 'keys must not be __proto__' }],
    });
  }
}

export function validate<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const errors = result.error.issues.flatMap((issue) => {
    const base = issue.path.map(String).join('.');
    // An unknown field is reported at its own path, which is what a client needs to fix.
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        path: base ? `${base}.${key}` : key,
        message: 'is not a recognized field',
      }));
    }
    // A bad record key: the inner issue says what is wrong with it.
    const message =
      issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    return [{ path: base || '(body)', message }];
  });
  throw new ApiError('validation_failed', 'The request has invalid fields; see errors.', {
    errors,
  });
}
