import { ApiError } from '../http/api-error.js';
import { requestFingerprint } from '../idempotency/fingerprint.js';
import { keyRecordExists, keyRecordInsertCte } from '../idempotency/idempotency-repository.js';
import type { CreateOnce } from '../idempotency/idempotent-create.js';
import type { CreateOutcome } from '../idempotency/replay-stored-response.js';
import type { Config } from '../platform/config/config.js';
import { withTransaction, type Pool } from '../platform/database/db.js';
import type { ReplayBody, WebhookReplayResource } from './webhook-delivery-schemas.js';

/**
 * The replay's one statement: the merchant's stored events in [since, until) that the endpoint
 * subscribes to, oldest first, at most $5; each becomes a pending delivery to the endpoint with
 * its job. A new delivery, or one delivered or failed going back to pending (same row, same
 * webhook-id), takes a new seq in event order: seq is the per-payment order the claim keeps, so
 * an event stored earlier is never sent after a later one the endpoint had before (DESIGN 119).
 * A delivery still pending keeps its seq and job. Events of one instant keep the order their
 * first deliveries were written in (the fan-out's). One row more than the bound is read to
 * learn has_more; its instant is next_since (inclusive, so events sharing it come again).
 */
const REPLAY_SQL = `
  WITH endpoint AS (
    SELECT id, enabled_events FROM webhook_endpoints WHERE id = $1
  ), matching AS (
    SELECT e.event_id, e.payment_id, e.created_at
      FROM webhook_events e, endpoint w
     WHERE e.merchant_id = $2 AND e.created_at >= $3::timestamptz
       AND ($4::timestamptz IS NULL OR e.created_at < $4::timestamptz)
       AND ('*' = ANY (w.enabled_events) OR e.event_type = ANY (w.enabled_events))
     ORDER BY e.created_at, e.event_id
     LIMIT $5::int + 1
  ), chosen AS (
    SELECT * FROM matching ORDER BY created_at, event_id LIMIT $5::int
  ), delivery AS (
    INSERT INTO webhook_deliveries AS d (endpoint_id, event_id, payment_id)
    SELECT $1, c.event_id, c.payment_id FROM chosen c
     ORDER BY c.created_at,
              (SELECT min(f.seq) FROM webhook_deliveries f WHERE f.event_id = c.event_id),
              c.event_id
    ON CONFLICT (endpoint_id, event_id) DO UPDATE
       SET status = 'pending', failed_reason = NULL, delivered_at = NULL, updated_at = now(),
           seq = DEFAULT
     WHERE d.status <> 'pending'
    RETURNING id, endpoint_id, payment_id, seq
  ), job AS (
    INSERT INTO webhook_delivery_jobs AS j (delivery_id, endpoint_id, payment_id, seq)
    SELECT id, endpoint_id, payment_id, seq FROM delivery
    ON CONFLICT (delivery_id) DO UPDATE SET seq = excluded.seq
    RETURNING delivery_id
  )
  SELECT (SELECT count(*) FROM chosen)::int AS replayed,
         (SELECT count(*) FROM matching) > $5::int AS has_more,
         CASE WHEN (SELECT count(*) FROM matching) > $5::int THEN
           (SELECT to_char(max(created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
              FROM matching)
         END AS next_since,
         (SELECT count(*) FROM job)::int AS jobs`;

const INSERT_KEY_SQL = `WITH ${keyRecordInsertCte(
  'record',
  {
    merchantId: '$1',
    key: '$2',
    fingerprint: '$3',
    status: '202',
    body: '$4::text',
    createdAt: 'now()',
    ttlSeconds: '$5',
  },
  { ifKeyFree: false },
)}
  SELECT expires_at FROM record`;

/** Instants outside these select the same events (none is stored before 1970 or after 9999). */
const EARLIEST_MS = 0;
const LATEST_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * A validated RFC 3339 instant as Postgres reads it: in UTC, with every digit of its fraction.
 * RFC 3339 allows what Postgres refuses (offsets beyond 15:59, year 0000 once in UTC), so the
 * instant is converted here and clamped to the years events can have, never sent as typed.
 */
export function sqlInstant(value: string): string {
  const ms = Math.min(Math.max(Date.parse(value), EARLIEST_MS), LATEST_MS);
  const seconds = new Date(ms).toISOString().slice(0, 19);
  if (ms !== Date.parse(value)) return `${seconds}Z`;
  const fraction = /T[^.]*\.(\d+)/.exec(value)?.[1];
  return fraction === undefined ? `${seconds}Z` : `${seconds}.${fraction}Z`;
}

export interface ReplayServiceDeps {
  pool: Pool;
  createOnce: CreateOnce;
  config: Pick<Config, 'WEBHOOK_REPLAY_MAX_EVENTS' | 'IDEMPOTENCY_KEY_TTL_SECONDS'>;
}

/**
 * POST /webhook_endpoints/{id}/replay, once per (merchant, Idempotency-Key) through the
 * idempotency layer: the deliveries, their jobs and the key record (with the answer) are one
 * transaction, so a retry with the key answers the same body and queues nothing more.
 */
export function createReplayService(deps: ReplayServiceDeps) {
  const { pool, config } = deps;
  return function replayWebhookEvents(
    merchantId: string,
    key: string,
    endpointId: string,
    body: ReplayBody,
  ): Promise<CreateOutcome> {
    const fingerprint = requestFingerprint('POST', `/webhook_endpoints/${endpointId}/replay`, body);
    return deps.createOnce(merchantId, key, fingerprint, () =>
      keyTakenAsNull(() =>
        withTransaction(pool, async (client) => {
          // The endpoint's row lock keeps it from being disabled or deleted meanwhile.
          const { rows: endpoints } = await client.query<{ disabled: boolean }>(
            `SELECT disabled_at IS NOT NULL AS disabled FROM webhook_endpoints
            WHERE id = $1 AND merchant_id = $2 FOR SHARE`,
            [endpointId, merchantId],
          );
          if (await keyRecordExists(client, merchantId, key)) return null;
          const endpoint = endpoints[0];
          if (!endpoint) throw new ApiError('not_found', `No webhook endpoint ${endpointId}.`);
          if (endpoint.disabled) {
            throw new ApiError(
              'webhook_endpoint_disabled',
              'The endpoint is disabled; enable it (PATCH disabled: false) before replaying.',
            );
          }
          const { rows } = await client.query<{
            replayed: number;
            has_more: boolean;
            next_since: string | null;
          }>(REPLAY_SQL, [
            endpointId,
            merchantId,
            sqlInstant(body.since),
            body.until === undefined ? null : sqlInstant(body.until),
            config.WEBHOOK_REPLAY_MAX_EVENTS,
          ]);
          const row = rows[0] ?? { replayed: 0, has_more: false, next_since: null };
          const answer: WebhookReplayResource = {
            object: 'webhook_replay',
            replayed: row.replayed,
            has_more: row.has_more,
            next_since: row.next_since,
          };
          const text = JSON.stringify(answer);
          const { rows: keys } = await client.query<{ expires_at: Date }>(INSERT_KEY_SQL, [
            merchantId,
            key,
            fingerprint,
            text,
            config.IDEMPOTENCY_KEY_TTL_SECONDS,
          ]);
          return {
            fingerprint: fingerprint.toString('hex'),
            status: 202,
            body: text,
            expiresAt: keys[0]?.expires_at ?? new Date(),
          };
        }),
      ),
    );
  };
}

/**
 * The same key recorded concurrently (a twin that passed the Redis lock while Redis failed):
 * this transaction rolled back, and the twin's record is the answer (null tells createOnce).
 */
async function keyTakenAsNull<T>(write: () => Promise<T>): Promise<T | null> {
  try {
    return await write();
  } catch (error) {
    const e = error as { code?: unknown; constraint?: unknown } | null;
    if (e?.code === '23505' && e.constraint === 'idempotency_keys_pkey') return null;
    throw error;
  }
}

export type ReplayWebhookEvents = ReturnType<typeof createReplayService>;
