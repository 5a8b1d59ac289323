import { Router, type Request, type Response } from 'express';
import { allowOnly } from '../http/allow-only.js';
import { ApiError } from '../http/api-error.js';
import { jsonBody, requireKeyAndJson } from '../http/json-body.js';
import { refuseReservedMetadataKeys } from '../http/metadata-schema.js';
import { validate } from '../http/validate.js';
import { resourceScopes } from '../merchants/api-key-scopes.js';
import {
  merchantGate,
  type MerchantGateDeps,
  type PeekedLocals,
} from '../merchants/merchant-gate.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import type { Queryable } from '../platform/database/db.js';
import type { CreatePayment } from './create-payment.js';
import type { HoldPayments } from './hold-payment.js';
import { paymentHoldsRouter } from './payment-holds-router.js';
import { toPaymentResource } from './payment-resource.js';
import { findPayment, listPayments } from './payment-repository.js';
import { createPaymentBodySchema, listPaymentsQuerySchema } from './payment-schemas.js';

export interface PaymentsRouterDeps extends MerchantGateDeps {
  db: Queryable;
  createPayment: CreatePayment;
  bodyLimitBytes: number;
  /** POST /payments/{id}/capture and /cancel (issue 40); absent: those routes are not served. */
  holds?: HoldPayments;
}

/** Set by the merchant gate and, on POST, requireKeyAndJson, before any handler runs. */
interface Authenticated {
  merchant: Merchant;
  idempotencyKey?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
    const { peekedResponse } = res.locals as PeekedLocals;
    const outcome = await createPayment(merchant, key, body, peekedResponse);
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

/**
 * The payments component's HTTP entry point. Handlers only translate HTTP to the service and
 * back; request-level rejections are ApiErrors thrown before anything is written (I5), the
 * service's refusals are domain errors (idempotency-errors.ts); the app maps both to problem+json.
 */
export function paymentsRouter(deps: PaymentsRouterDeps): Router {
  const router = Router();
  const parseJson = jsonBody(deps.bodyLimitBytes);

  // Before authentication: a method the path does not have is 405 whoever asks.
  router.all('/payments', allowOnly('GET, HEAD, POST'));
  router.all('/payments/:id', allowOnly('GET, HEAD'));
  router.all(['/payments/:id/capture', '/payments/:id/cancel'], allowOnly('POST'));
  // Scopes: GET and HEAD need payments:read, POST payments:write (refunds have their own).
  router.use('/payments', merchantGate(deps, resourceScopes('payments')));
  router.post('/payments', requireKeyAndJson, parseJson, createPaymentHandler(deps.createPayment));
  if (deps.holds) router.use(paymentHoldsRouter(deps.holds, deps.bodyLimitBytes));
  router.get('/payments/:id', getPaymentHandler(deps.db));
  router.get('/payments', listPaymentsHandler(deps.db));
  return router;
}
