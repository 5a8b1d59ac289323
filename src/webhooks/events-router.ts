import { Router, type Request, type Response } from 'express';
import { allowOnly } from '../http/allow-only.js';
import { ApiError } from '../http/api-error.js';
import { validate } from '../http/validate.js';
import { EVENT_SCOPES } from '../merchants/api-key-scopes.js';
import { merchantGate, type MerchantGateDeps } from '../merchants/merchant-gate.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import type { Queryable } from '../platform/database/db.js';
import { findEvent, listEvents } from './event-list-repository.js';
import { listEventsQuerySchema } from './event-list-schemas.js';
import { sqlInstant } from './replay-webhook-events.js';

export interface EventsRouterDeps extends MerchantGateDeps {
  db: Queryable;
  /** EVENT_RETENTION_DAYS: older events are not listed (and the reaper deletes them). */
  retentionDays: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The events are CloudEvent JSON already (their published bytes): spliced, not re-encoded. */
function sendJson(res: Response, body: string): void {
  res.type('application/json').send(body);
}

/**
 * GET /events and GET /events/{id} (issue 40 item 7, DESIGN 129): the pull side of webhooks, a
 * merchant's events of the last EVENT_RETENTION_DAYS as their CloudEvents, newest first, in the
 * page shape of GET /payments. Another merchant's event is 404 and never listed.
 */
export function eventsRouter(deps: EventsRouterDeps): Router {
  const router = Router();
  const retentionSeconds = deps.retentionDays * 86_400;

  router.all('/events', allowOnly('GET, HEAD'));
  router.all('/events/:id', allowOnly('GET, HEAD'));
  router.use('/events', merchantGate(deps, EVENT_SCOPES));

  router.get('/events/:id', async (req: Request<{ id: string }>, res: Response) => {
    const { merchant } = res.locals as { merchant: Merchant };
    const id = req.params.id;
    // A malformed id cannot exist: the same 404 as an unknown or foreign one, never a 500.
    const event = UUID.test(id)
      ? await findEvent(deps.db, merchant.id, id, retentionSeconds)
      : null;
    if (event === null) throw new ApiError('not_found', `No event ${id}.`);
    sendJson(res, event);
  });

  router.get('/events', async (req: Request, res: Response) => {
    const { merchant } = res.locals as { merchant: Merchant };
    const query = validate(listEventsQuerySchema, req.query);
    const page = await listEvents(
      deps.db,
      merchant.id,
      {
        limit: query.limit,
        startingAfter: query.starting_after,
        type: query.type,
        // In UTC and Postgres' range, the fraction kept (an RFC 3339 offset may exceed Postgres').
        createdGte:
          query['created[gte]'] === undefined ? undefined : sqlInstant(query['created[gte]']),
        createdLt:
          query['created[lt]'] === undefined ? undefined : sqlInstant(query['created[lt]']),
      },
      retentionSeconds,
    );
    if (page.kind === 'unknown_cursor') {
      throw new ApiError('validation_failed', 'starting_after is not one of your events.', {
        errors: [{ path: 'starting_after', message: 'no such event' }],
      });
    }
    sendJson(
      res,
      `{"object":"list","data":[${page.events.join(',')}],"has_more":${String(page.hasMore)}}`,
    );
  });
  return router;
}
