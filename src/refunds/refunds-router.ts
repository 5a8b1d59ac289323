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
import type { CreateRefund } from './create-refund.js';
import { findRefund, listRefunds } from './refund-repository.js';
import { toRefundResource } from './refund-resource.js';
import { createRefundBodySchema, listRefundsQuerySchema } from './refund-schemas.js';

export interface RefundsRouterDeps extends MerchantGateDeps {
  db: Queryable;
  createRefund: CreateRefund;
  bodyLimitBytes: number;
}

/** Set by the merchant gate and, on POST, requireKeyAndJson. */
interface Authenticated {
  merchant: Merchant;
  idempotencyKey?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** POST /payments/{id}/refunds once the body is parsed: validate, create (or replay), answer. */
function createRefundHandler(createRefund: CreateRefund) {
  return async (req: Request<{ id: string }>, res: Response) => {
    if (!res.locals.bodyBytes) {
      throw new ApiError('malformed_json', 'The request body is empty.');
    }
    refuseReservedMetadataKeys(req.body);
    const body = validate(createRefundBodySchema, req.body as unknown);
    const { merchant, idempotencyKey: key = '' } = res.locals as Authenticated;
    const paymentId = req.params.id;
    req.ctx.bind({ idempotency_key: key, payment_id: paymentId });
    // A malformed id cannot exist: 404 like an unknown one, before anything is written.
    if (!UUID.test(paymentId)) throw new ApiError('not_found', `No payment ${paymentId}.`);
    const { peekedResponse } = res.locals as PeekedLocals;
    const outcome = await createRefund(
      merchant,
      key,
      paymentId.toLowerCase(),
      body,
      requestEnded(res),
      peekedResponse,
    );
    req.ctx.bind({ refund_id: outcome.refundId });
    res.status(outcome.status);
    res.setHeader('Location', `/refunds/${outcome.refundId ?? ''}`);
    if (outcome.replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.type('application/json').send(outcome.body);
  };
}

/**
 * Aborted once the response is sent (the request deadline answered first) or the connection
 * is gone: queued work for this request is then dropped (create-refund.ts).
 */
function requestEnded(res: Response): AbortSignal {
  const ended = new AbortController();
  const end = () => {
    ended.abort(
      new ApiError(
        'service_unavailable',
        'The request ended before its refund was written; retry with the same Idempotency-Key.',
      ),
    );
  };
  // 'close' comes once the response is sent, and also when the client leaves first.
  res.once('close', end);
  return ended.signal;
}

function getRefundHandler(db: Queryable) {
  return async (req: Request<{ id: string }>, res: Response) => {
    const { merchant } = res.locals as Authenticated;
    const id = req.params.id;
    const row = UUID.test(id) ? await findRefund(db, merchant.id, id) : null;
    if (!row) throw new ApiError('not_found', `No refund ${id}.`);
    res.json(toRefundResource(row));
  };
}

function listRefundsHandler(db: Queryable) {
  return async (req: Request<{ id: string }>, res: Response) => {
    const { merchant } = res.locals as Authenticated;
    const paymentId = req.params.id;
    const query = validate(listRefundsQuerySchema, req.query);
    const page = UUID.test(paymentId)
      ? await listRefunds(db, merchant.id, paymentId, query.limit, query.starting_after)
      : ({ kind: 'unknown_payment' } as const);
    if (page.kind === 'unknown_payment')
      throw new ApiError('not_found', `No payment ${paymentId}.`);
    if (page.kind === 'unknown_cursor') {
      throw new ApiError('validation_failed', 'starting_after is not a refund of this payment.', {
        errors: [{ path: 'starting_after', message: 'no such refund' }],
      });
    }
    res.json({ object: 'list', data: page.rows.map(toRefundResource), has_more: page.hasMore });
  };
}

/**
 * The refunds component's HTTP entry point: POST and GET /payments/{id}/refunds, GET
 * /refunds/{id}. Mounted before the payments router, with its own authentication of these
 * paths, so a request is authenticated (and rate-limited) once.
 */
export function refundsRouter(deps: RefundsRouterDeps): Router {
  const router = Router();
  // Before authentication: a method the path does not have is 405 whoever asks.
  router.all('/payments/:id/refunds', allowOnly('GET, HEAD, POST'));
  router.all('/refunds/:id', allowOnly('GET, HEAD'));
  // Scopes: GET and HEAD need refunds:read, POST refunds:write (payments:* is not enough).
  router.use(['/payments/:id/refunds', '/refunds'], merchantGate(deps, resourceScopes('refunds')));
  router.post(
    '/payments/:id/refunds',
    requireKeyAndJson,
    jsonBody(deps.bodyLimitBytes),
    createRefundHandler(deps.createRefund),
  );
  router.get('/payments/:id/refunds', listRefundsHandler(deps.db));
  router.get('/refunds/:id', getRefundHandler(deps.db));
  return router;
}
