import type { Request, Response, Router } from 'express';
import { ApiError } from '../http/api-error.js';
import { jsonBody, requireKeyAndJson } from '../http/json-body.js';
import { validate } from '../http/validate.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import type { ReplayWebhookEvents } from './replay-webhook-events.js';
import { findDelivery, listDeliveries, retryDelivery } from './webhook-delivery-repository.js';
import { listWebhookDeliveriesQuerySchema, replayBodySchema } from './webhook-delivery-schemas.js';
import { endpointIdOf, UUID } from './webhook-endpoint-routes.js';
import { toWebhookDeliveryResource } from './webhook-resource.js';
import type { WebhooksRouterDeps } from './webhooks-router-deps.js';

interface Authenticated {
  merchant: Merchant;
  idempotencyKey?: string;
}

type DeliveryParams = { id: string; delivery_id: string };

function deliveryIdOf(req: Request<DeliveryParams>): string {
  const id = req.params.delivery_id;
  if (!UUID.test(id)) throw new ApiError('not_found', `No webhook delivery ${id}.`);
  return id.toLowerCase();
}

function replayHandler(replay: ReplayWebhookEvents) {
  return async (req: Request<{ id: string }>, res: Response) => {
    const endpointId = endpointIdOf(req);
    if (!res.locals.bodyBytes) throw new ApiError('malformed_json', 'The request body is empty.');
    const body = validate(replayBodySchema, req.body as unknown);
    const { merchant, idempotencyKey: key = '' } = res.locals as Authenticated;
    req.ctx.bind({ idempotency_key: key, webhook_endpoint_id: endpointId });
    const outcome = await replay(merchant.id, key, endpointId, body);
    if (res.headersSent) return;
    res.status(outcome.status);
    if (outcome.replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.type('application/json').send(outcome.body);
  };
}

/** An endpoint's deliveries (list, get, retry) and POST /webhook_endpoints/{id}/replay. */
export function addDeliveryRoutes(
  router: Router,
  deps: WebhooksRouterDeps,
  replay: ReplayWebhookEvents,
): void {
  router.get(
    '/webhook_endpoints/:id/deliveries',
    async (req: Request<{ id: string }>, res: Response) => {
      const endpointId = endpointIdOf(req);
      const { merchant } = res.locals as Authenticated;
      const query = validate(listWebhookDeliveriesQuerySchema, req.query);
      const page = await listDeliveries(deps.db, merchant.id, endpointId, {
        limit: query.limit,
        ...(query.starting_after === undefined ? {} : { startingAfter: query.starting_after }),
        ...(query.status === undefined ? {} : { status: query.status }),
      });
      if (page.kind === 'unknown_endpoint') {
        throw new ApiError('not_found', `No webhook endpoint ${endpointId}.`);
      }
      if (page.kind === 'unknown_cursor') {
        throw new ApiError(
          'validation_failed',
          'starting_after is not a delivery of this endpoint.',
          {
            errors: [{ path: 'starting_after', message: 'no such delivery' }],
          },
        );
      }
      res.json({
        object: 'list',
        data: page.rows.map(toWebhookDeliveryResource),
        has_more: page.hasMore,
      });
    },
  );
  router.get(
    '/webhook_endpoints/:id/deliveries/:delivery_id',
    async (req: Request<DeliveryParams>, res: Response) => {
      const endpointId = endpointIdOf(req);
      const deliveryId = deliveryIdOf(req);
      const { merchant } = res.locals as Authenticated;
      const found = await findDelivery(deps.db, merchant.id, endpointId, deliveryId);
      if (!found) throw new ApiError('not_found', `No webhook delivery ${deliveryId}.`);
      res.json({
        ...toWebhookDeliveryResource(found.delivery),
        attempt_history: found.attempts.map((a) => ({
          started_at: a.started_at.toISOString(),
          status_code: a.status_code,
          latency_ms: a.latency_ms,
          error: a.error,
        })),
      });
    },
  );
  router.post(
    '/webhook_endpoints/:id/deliveries/:delivery_id/retry',
    async (req: Request<DeliveryParams>, res: Response) => {
      const endpointId = endpointIdOf(req);
      const deliveryId = deliveryIdOf(req);
      const { merchant } = res.locals as Authenticated;
      const result = await retryDelivery(deps.db, merchant.id, endpointId, deliveryId);
      if (result.kind === 'not_found') {
        throw new ApiError('not_found', `No webhook delivery ${deliveryId}.`);
      }
      if (result.kind === 'disabled') {
        throw new ApiError(
          'webhook_endpoint_disabled',
          'The endpoint is disabled; enable it (PATCH disabled: false) before retrying.',
        );
      }
      const found = await findDelivery(deps.db, merchant.id, endpointId, deliveryId);
      if (!found) throw new ApiError('not_found', `No webhook delivery ${deliveryId}.`);
      res.status(202).json(toWebhookDeliveryResource(found.delivery));
    },
  );
  router.post(
    '/webhook_endpoints/:id/replay',
    requireKeyAndJson,
    jsonBody(deps.bodyLimitBytes),
    replayHandler(replay),
  );
}
