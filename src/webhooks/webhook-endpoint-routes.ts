import type { Request, Response, Router } from 'express';
import { ApiError } from '../http/api-error.js';
import { jsonBody, optionalJson, optionalKeyAndJson } from '../http/json-body.js';
import { validate } from '../http/validate.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import type { AddressPolicy } from './address-policy.js';
import { assertUrlAllowed, type CreateWebhookEndpoint } from './create-webhook-endpoint.js';
import {
  deleteEndpoint,
  findEndpoint,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
} from './webhook-endpoint-repository.js';
import {
  createWebhookEndpointBodySchema,
  listWebhookEndpointsQuerySchema,
  rotateSecretBodySchema,
  updateWebhookEndpointBodySchema,
} from './webhook-endpoint-schemas.js';
import { toWebhookEndpointResource } from './webhook-resource.js';
import { newWebhookSecret, sealWebhookSecret } from './webhook-secret.js';
import type { WebhooksRouterDeps } from './webhooks-router-deps.js';

/** Set by the merchant gate and, when sent, the Idempotency-Key precondition. */
interface Authenticated {
  merchant: Merchant;
  idempotencyKey?: string;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The path's endpoint id, or 404 (a malformed id cannot exist: the same 404 as a foreign one). */
export function endpointIdOf(req: Request<{ id: string }>): string {
  const id = req.params.id;
  if (!UUID.test(id)) throw new ApiError('not_found', `No webhook endpoint ${id}.`);
  return id.toLowerCase();
}

/** An empty body is {} (rotate_secret's fields are optional); any other body must be parsed. */
function bodyOrEmpty(req: Request, res: Response): unknown {
  return res.locals.bodyBytes ? (req.body as unknown) : {};
}

function requireBody(res: Response): void {
  if (!res.locals.bodyBytes) throw new ApiError('malformed_json', 'The request body is empty.');
}

function createHandler(createEndpoint: CreateWebhookEndpoint) {
  return async (req: Request, res: Response) => {
    requireBody(res);
    const body = validate(createWebhookEndpointBodySchema, req.body as unknown);
    const { merchant, idempotencyKey } = res.locals as Authenticated;
    if (idempotencyKey !== undefined) req.ctx.bind({ idempotency_key: idempotencyKey });
    const outcome = await createEndpoint(merchant.id, idempotencyKey, body);
    if (res.headersSent) return;
    const id = (JSON.parse(outcome.body) as { id?: string }).id ?? '';
    req.ctx.bind({ webhook_endpoint_id: id });
    res.status(outcome.status);
    res.setHeader('Location', `/webhook_endpoints/${id}`);
    if (outcome.replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.type('application/json').send(outcome.body);
  };
}

function updateHandler(deps: WebhooksRouterDeps, policy: AddressPolicy) {
  return async (req: Request<{ id: string }>, res: Response) => {
    const id = endpointIdOf(req);
    requireBody(res);
    const body = validate(updateWebhookEndpointBodySchema, req.body as unknown);
    const { merchant } = res.locals as Authenticated;
    // 404 before a URL is resolved for an endpoint the merchant does not have.
    if (!(await findEndpoint(deps.db, merchant.id, id))) {
      throw new ApiError('not_found', `No webhook endpoint ${id}.`);
    }
    if (body.url !== undefined) await assertUrlAllowed(policy, body.url);
    const row = await updateEndpoint(deps.db, merchant.id, id, {
      ...(body.url === undefined ? {} : { url: body.url }),
      ...(body.enabled_events === undefined ? {} : { enabledEvents: body.enabled_events }),
      ...(body.description === undefined ? {} : { description: body.description }),
      ...(body.disabled === undefined ? {} : { disabled: body.disabled }),
    });
    if (!row) throw new ApiError('not_found', `No webhook endpoint ${id}.`);
    res.json(toWebhookEndpointResource(row));
  };
}

function rotateHandler(deps: WebhooksRouterDeps) {
  return async (req: Request<{ id: string }>, res: Response) => {
    const id = endpointIdOf(req);
    const body = validate(rotateSecretBodySchema, bodyOrEmpty(req, res));
    const { merchant } = res.locals as Authenticated;
    const secret = newWebhookSecret();
    const grace = body.expires_in_seconds ?? deps.config.WEBHOOK_SECRET_GRACE_SECONDS;
    const sealed = sealWebhookSecret(deps.keyRing, id, secret);
    const result = await rotateSecret(deps.db, merchant.id, id, sealed, grace);
    if (result.kind === 'not_found') throw new ApiError('not_found', `No webhook endpoint ${id}.`);
    res.json({
      secret,
      previous_secret_expires_at: result.previousExpiresAt?.toISOString() ?? null,
    });
  };
}

/** POST/GET /webhook_endpoints, GET/PATCH/DELETE /webhook_endpoints/{id}, rotate_secret. */
export function addEndpointRoutes(
  router: Router,
  deps: WebhooksRouterDeps,
  createEndpoint: CreateWebhookEndpoint,
): void {
  const parseJson = jsonBody(deps.bodyLimitBytes);
  router.post('/webhook_endpoints', optionalKeyAndJson, parseJson, createHandler(createEndpoint));
  router.get('/webhook_endpoints', async (req, res) => {
    const { merchant } = res.locals as Authenticated;
    const query = validate(listWebhookEndpointsQuerySchema, req.query);
    const page = await listEndpoints(deps.db, merchant.id, query.limit, query.starting_after);
    if (page.kind === 'unknown_cursor') {
      throw new ApiError('validation_failed', 'starting_after is not one of your endpoints.', {
        errors: [{ path: 'starting_after', message: 'no such webhook endpoint' }],
      });
    }
    res.json({
      object: 'list',
      data: page.rows.map(toWebhookEndpointResource),
      has_more: page.hasMore,
    });
  });
  router.get('/webhook_endpoints/:id', async (req: Request<{ id: string }>, res: Response) => {
    const id = endpointIdOf(req);
    const { merchant } = res.locals as Authenticated;
    const row = await findEndpoint(deps.db, merchant.id, id);
    if (!row) throw new ApiError('not_found', `No webhook endpoint ${id}.`);
    res.json(toWebhookEndpointResource(row));
  });
  router.patch(
    '/webhook_endpoints/:id',
    optionalKeyAndJson,
    parseJson,
    updateHandler(deps, deps.addressPolicy),
  );
  router.delete('/webhook_endpoints/:id', async (req: Request<{ id: string }>, res: Response) => {
    const id = endpointIdOf(req);
    const { merchant } = res.locals as Authenticated;
    if (!(await deleteEndpoint(deps.db, merchant.id, id))) {
      throw new ApiError('not_found', `No webhook endpoint ${id}.`);
    }
    res.json({ id, object: 'webhook_endpoint', deleted: true });
  });
  router.post('/webhook_endpoints/:id/rotate_secret', optionalJson, parseJson, rotateHandler(deps));
}
