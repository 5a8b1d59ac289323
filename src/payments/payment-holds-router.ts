import { Router, type Request, type Response } from 'express';
import type { z } from 'zod';
import { ApiError } from '../http/api-error.js';
import { jsonBody, requireKeyAndJson } from '../http/json-body.js';
import { validate } from '../http/validate.js';
import type { PeekedLocals } from '../merchants/merchant-gate.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import type { DecideOnHold, HoldPayments } from './hold-payment.js';
import { cancelPaymentBodySchema, capturePaymentBodySchema } from './payment-schemas.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Set by the merchant gate and requireKeyAndJson before the handler runs. */
interface Authenticated {
  merchant: Merchant;
  idempotencyKey?: string;
}

/** Aborted once the response is sent or the client left: a queued decision is then dropped. */
function requestEnded(res: Response): AbortSignal {
  const ended = new AbortController();
  res.once('close', () => {
    ended.abort(
      new ApiError(
        'service_unavailable',
        'The request ended before it was decided; retry with the same Idempotency-Key.',
      ),
    );
  });
  return ended.signal;
}

/**
 * POST /payments/{id}/capture or /cancel once the body is parsed: an empty body is `{}` (both
 * fields are optional), validated, decided once per key (or replayed), answered 202 with the
 * payment; the acquirer call follows on the hold job.
 */
function decideHandler<S extends z.ZodType>(schema: S, decide: DecideOnHold<z.output<S>>) {
  return async (req: Request<{ id: string }>, res: Response) => {
    const body = validate(schema, res.locals.bodyBytes ? (req.body as unknown) : {});
    const { merchant, idempotencyKey: key = '' } = res.locals as Authenticated;
    const paymentId = req.params.id;
    req.ctx.bind({ idempotency_key: key, payment_id: paymentId });
    if (!UUID.test(paymentId)) throw new ApiError('not_found', `No payment ${paymentId}.`);
    const { peekedResponse } = res.locals as PeekedLocals;
    const outcome = await decide(
      merchant,
      key,
      paymentId.toLowerCase(),
      body,
      requestEnded(res),
      peekedResponse,
    );
    if (res.headersSent) return;
    res.status(outcome.status);
    res.setHeader('Location', `/payments/${paymentId.toLowerCase()}`);
    if (outcome.replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.type('application/json').send(outcome.body);
  };
}

/**
 * The second step of a manual payment (issue 40): capture and cancel, mounted by the payments
 * router behind its gate (payments:write) and its 405s.
 */
export function paymentHoldsRouter(holds: HoldPayments, bodyLimitBytes: number): Router {
  const router = Router();
  const parseJson = jsonBody(bodyLimitBytes);
  router.post(
    '/payments/:id/capture',
    requireKeyAndJson,
    parseJson,
    decideHandler(capturePaymentBodySchema, holds.capture),
  );
  router.post(
    '/payments/:id/cancel',
    requireKeyAndJson,
    parseJson,
    decideHandler(cancelPaymentBodySchema, holds.cancel),
  );
  return router;
}
