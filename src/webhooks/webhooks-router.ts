import { Router } from 'express';
import { allowOnly } from '../http/allow-only.js';
import { resourceScopes } from '../merchants/api-key-scopes.js';
import { merchantGate } from '../merchants/merchant-gate.js';
import { createWebhookEndpointService } from './create-webhook-endpoint.js';
import { createReplayService } from './replay-webhook-events.js';
import { addDeliveryRoutes } from './webhook-delivery-routes.js';
import { addEndpointRoutes } from './webhook-endpoint-routes.js';
import type { WebhooksRouterDeps } from './webhooks-router-deps.js';

/** The methods of each path (the OpenAPI document's operations, and HEAD with every GET). */
const ALLOWED_METHODS: readonly (readonly [path: string, allow: string])[] = [
  ['/webhook_endpoints', 'GET, HEAD, POST'],
  ['/webhook_endpoints/:id', 'GET, HEAD, PATCH, DELETE'],
  ['/webhook_endpoints/:id/rotate_secret', 'POST'],
  ['/webhook_endpoints/:id/deliveries', 'GET, HEAD'],
  ['/webhook_endpoints/:id/deliveries/:delivery_id', 'GET, HEAD'],
  ['/webhook_endpoints/:id/deliveries/:delivery_id/retry', 'POST'],
  ['/webhook_endpoints/:id/replay', 'POST'],
];

/**
 * The merchant-facing webhook API under /webhook_endpoints: endpoints, their secrets, their
 * deliveries, retry and replay. One merchant gate in front of every path, as for payments;
 * another merchant's endpoint or delivery is 404, and every refusal is problem+json written
 * before anything is stored. A method a path does not have is 405 with Allow, before
 * authentication (as on /payments).
 */
export function webhooksRouter(deps: WebhooksRouterDeps): Router {
  const router = Router();
  for (const [path, allow] of ALLOWED_METHODS) router.all(path, allowOnly(allow));
  // Scopes: GET and HEAD need webhooks:read; create, update, delete, rotate_secret, retry and
  // replay need webhooks:write.
  router.use('/webhook_endpoints', merchantGate(deps, resourceScopes('webhooks')));
  const createEndpoint = createWebhookEndpointService({
    pool: deps.db,
    createOnce: deps.createOnce,
    addressPolicy: deps.addressPolicy,
    keyRing: deps.keyRing,
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
