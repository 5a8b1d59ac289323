import { Router } from 'express';
import { merchantGate } from '../merchants/merchant-gate.js';
import { createWebhookEndpointService } from './create-webhook-endpoint.js';
import { createReplayService } from './replay-webhook-events.js';
import { addDeliveryRoutes } from './webhook-delivery-routes.js';
import { addEndpointRoutes } from './webhook-endpoint-routes.js';
import type { WebhooksRouterDeps } from './webhooks-router-deps.js';

/**
 * The merchant-facing webhook API under /webhook_endpoints: endpoints, their secrets, their
 * deliveries, retry and replay. One merchant gate in front of every path, as for payments;
 * another merchant's endpoint or delivery is 404, and every refusal is problem+json written
 * before anything is stored.
 */
export function webhooksRouter(deps: WebhooksRouterDeps): Router {
  const router = Router();
  router.use('/webhook_endpoints', merchantGate(deps));
  const createEndpoint = createWebhookEndpointService({
    pool: deps.db,
    createOnce: deps.createOnce,
    addressPolicy: deps.addressPolicy,
    config: deps.config,
  });
  const replay = createReplayService({
    pool: deps.db,
    createOnce: deps.createOnce,
    config: deps.config,
  });
  addEndpointRoutes(router, deps, createEndpoint);
  addDeliveryRoutes(router, deps, replay);
  return router;
}
