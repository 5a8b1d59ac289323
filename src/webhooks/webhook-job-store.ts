import { claimJobs, ownedJobsCte, type ClaimFilter, type ClaimJoin } from '../jobs/job-store.js';
import { WEBHOOK_JOBS, type ClaimedJob, type JobLease } from '../jobs/job-table.js';
import type { CompletionOutcome } from '../jobs/job-worker.js';
import type { Queryable } from '../platform/database/db.js';
import { storedSecretOf, type StoredSecret } from './webhook-secret.js';

/**
 * The webhook delivery jobs' statements beyond the engine's (src/jobs/job-store.ts): the claim's
 * join and order rule, the attempt record, and the ends of a delivery (delivered, failed, the
 * endpoint disabled). Every write is fenced by the claim's owner token.
 */

/** A claimed delivery: the job, and what sending it needs. */
export interface ClaimedDelivery extends ClaimedJob {
  endpointId: string;
  eventId: string;
  eventType: string;
  paymentId: string;
  url: string;
  /** The event's CloudEvent JSON: the exact bytes sent and signed. */
  body: string;
  /** Every unexpired secret of the endpoint as stored (sealed), newest first. Never logged. */
  storedSecrets: StoredSecret[];
  /** The endpoint was disabled after the delivery was queued: it is failed, not sent. */
  endpointDisabled: boolean;
}

interface DeliveryColumns {
  endpoint_id: string;
  event_id: string;
  event_type: string;
  payment_id: string;
  url: string;
  body: string;
  /** Three arrays in one order: each secret's clear column, ciphertext and key id. */
  secrets_clear: (string | null)[];
  secrets_sealed: (Buffer | null)[];
  secrets_key_id: (string | null)[];
  endpoint_disabled: boolean;
}

/** One array of the endpoint's unexpired secrets' `column`, newest first. */
const secretsArray = (column: string, as: string) =>
  `ARRAY(SELECT s.${column} FROM webhook_endpoint_secrets s
          WHERE s.endpoint_id = j.endpoint_id
            AND (s.expires_at IS NULL OR s.expires_at > now())
          ORDER BY s.created_at DESC) AS ${as}`;

const CLAIM_JOIN: ClaimJoin = {
  from: ', webhook_deliveries d, webhook_events e, webhook_endpoints ep',
  where: 'AND d.id = j.delivery_id AND e.event_id = d.event_id AND ep.id = j.endpoint_id',
  returning: `j.endpoint_id, e.event_id, e.event_type, j.payment_id, ep.url, e.body,
              ep.disabled_at IS NOT NULL AS endpoint_disabled,
              ${secretsArray('secret', 'secrets_clear')},
              ${secretsArray('secret_ciphertext', 'secrets_sealed')},
              ${secretsArray('secret_key_id', 'secrets_key_id')}`,
};

/**
 * Per endpoint and payment, deliveries go in event order: a job waits while an earlier one
 * (lower seq) of the same payment to the same endpoint is pending (webhook_delivery_jobs_order).
 */
const IN_ORDER = `AND NOT EXISTS (
    SELECT 1 FROM webhook_delivery_jobs earlier
     WHERE earlier.endpoint_id = webhook_delivery_jobs.endpoint_id
       AND earlier.payment_id = webhook_delivery_jobs.payment_id
       AND earlier.seq < webhook_delivery_jobs.seq AND earlier.state = 'pending')`;

/** Each endpoint's merchant (webhook_endpoints_merchant finds a saturated merchant's). */
const MERCHANT_OF = '(SELECT id AS grp, merchant_id AS owner FROM webhook_endpoints)';

/** Each merchant's deliveries leased now, by any process (webhook_delivery_jobs_leased). */
const LEASED_PER_MERCHANT = `SELECT lep.merchant_id AS owner, count(*)::int AS in_flight
    FROM webhook_delivery_jobs l JOIN webhook_endpoints lep ON lep.id = l.endpoint_id
   WHERE l.lease_owner IS NOT NULL AND l.locked_until > now()
   GROUP BY lep.merchant_id`;

/**
 * The endpoints of every merchant with at least `$cap` deliveries leased now (the claim leaves
 * them out; so does the oldest-due gauge: they wait for their share, not for a worker).
 */
export function saturatedEndpointsSql(cap: string): string {
  return `SELECT o.grp FROM ${MERCHANT_OF} o JOIN (${LEASED_PER_MERCHANT}) h ON h.owner = o.owner
           WHERE h.in_flight >= ${cap}`;
}

/** What the claim caps: deliveries in flight per endpoint (this process) and per merchant (all). */
export interface DeliveryCaps {
  endpoint: number;
  merchant: number;
}

/**
 * The claim's rules: event order, at most `caps.endpoint` deliveries in flight per endpoint in
 * this process, and at most `caps.merchant` per merchant across every process (DESIGN 118).
 */
export function deliveryClaimFilter(
  caps: DeliveryCaps,
  busy: ReadonlyMap<string, number>,
): ClaimFilter {
  return {
    due: IN_ORDER,
    group: { column: 'endpoint_id', cap: caps.endpoint, busy },
    share: { owners: MERCHANT_OF, held: LEASED_PER_MERCHANT, cap: caps.merchant },
  };
}

/** Claims up to `limit` due deliveries with their event, endpoint URL and secrets. */
export async function claimDeliveries(
  db: Queryable,
  limit: number,
  leaseMs: number,
  maxAttempts: number,
  filter: ClaimFilter,
): Promise<ClaimedDelivery[]> {
  const claimed = await claimJobs<DeliveryColumns>(
    db,
    WEBHOOK_JOBS,
    CLAIM_JOIN,
    { limit, leaseMs, maxAttempts },
    filter,
  );
  return claimed.map(({ row, ...job }) => ({
    ...job,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    paymentId: row.payment_id,
    url: row.url,
    body: row.body,
    storedSecrets: row.secrets_clear.map((secret, index) =>
      storedSecretOf({
        secret,
        secret_ciphertext: row.secrets_sealed[index] ?? null,
        secret_key_id: row.secrets_key_id[index] ?? null,
      }),
    ),
    endpointDisabled: row.endpoint_disabled,
  }));
}

/** One attempt as the merchant sees it. */
export interface AttemptRecord {
  startedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  /** Not a 2xx (nor a 410): the endpoint's failing_since is set if it was not. */
  failed: boolean;
}

/**
 * Records an attempt while the claim holds the job: an attempt row, the delivery's attempts and
 * last_* columns, and the endpoint's failing_since on a failure. False when the lease is lost
 * (nothing written).
 */
export async function recordAttempt(
  db: Queryable,
  job: JobLease,
  attempt: AttemptRecord,
): Promise<boolean> {
  const { rows } = await db.query<{ owned: number }>({
    name: 'webhook.record-attempt',
    text: `WITH owned AS (
             SELECT delivery_id, endpoint_id FROM webhook_delivery_jobs
              WHERE delivery_id = $1 AND lease_owner = $2),
           attempt AS (
             INSERT INTO webhook_delivery_attempts (delivery_id, started_at, status_code,
                                                    latency_ms, error)
             SELECT delivery_id, $3, $4, $5, $6 FROM owned),
           delivery AS (
             UPDATE webhook_deliveries d
                SET attempts = d.attempts + 1, last_attempt_at = $3, last_status_code = $4,
                    last_latency_ms = $5, last_error = $6, updated_at = now()
               FROM owned WHERE d.id = owned.delivery_id),
           failing AS (
             UPDATE webhook_endpoints ep SET failing_since = $3, updated_at = now()
               FROM owned
              WHERE $7 AND ep.id = owned.endpoint_id AND ep.failing_since IS NULL)
           SELECT count(*)::int AS owned FROM owned`,
    values: [
      job.id,
      job.leaseOwner,
      attempt.startedAt,
      attempt.statusCode,
      attempt.latencyMs,
      attempt.error?.slice(0, 1_000) ?? null,
      attempt.failed,
    ],
  });
  return (rows[0]?.owned ?? 0) > 0;
}

const OWNED = ownedJobsCte(WEBHOOK_JOBS, 'ARRAY[$1::uuid]', 'ARRAY[$2::uuid]');

/** 2xx: the delivery delivered, its job removed, the endpoint's failing_since cleared. */
export async function markDelivered(db: Queryable, job: JobLease): Promise<CompletionOutcome> {
  const { rows } = await db.query<{ owned: number; moved: number }>({
    name: 'webhook.delivered',
    text: `WITH ${OWNED},
           moved AS (
             UPDATE webhook_deliveries d
                SET status = 'delivered', delivered_at = now(), failed_reason = NULL,
                    updated_at = now()
               FROM owned WHERE d.id = owned.job_id AND d.status = 'pending'
             RETURNING d.endpoint_id),
           cleared AS (
             UPDATE webhook_endpoints ep SET failing_since = NULL, updated_at = now()
               FROM moved WHERE ep.id = moved.endpoint_id AND ep.failing_since IS NOT NULL)
           SELECT (SELECT count(*) FROM owned)::int AS owned,
                  (SELECT count(*) FROM moved)::int AS moved`,
    values: [job.id, job.leaseOwner],
  });
  return outcomeOf(rows[0]);
}

/** How a delivery that will not be sent again ends. */
export interface DeliveryFailure {
  /** The delivery's failed_reason: 'gone', 'attempts_exhausted', 'endpoint_disabled'. */
  reason: string;
  /**
   * Disable the endpoint with this reason ('gone', 'failing'), failing its other pending
   * deliveries ('endpoint_disabled'); null leaves it enabled.
   */
  disable: string | null;
  /** Disable only if the endpoint has been failing for longer than this (ms); null: always. */
  failingForMs: number | null;
}

/**
 * The delivery failed and its job removed; with `disable`, the endpoint disabled (once: an
 * endpoint already disabled keeps its reason) and its other pending deliveries failed with their
 * jobs removed, in the same statement. Fenced by the claim's token.
 */
export async function markFailed(
  db: Queryable,
  job: JobLease,
  failure: DeliveryFailure,
): Promise<CompletionOutcome> {
  const { rows } = await db.query<{ owned: number; moved: number }>({
    name: 'webhook.failed',
    text: `WITH ${OWNED},
           moved AS (
             UPDATE webhook_deliveries d
                SET status = 'failed', failed_reason = $3, updated_at = now()
               FROM owned WHERE d.id = owned.job_id AND d.status = 'pending'
             RETURNING d.endpoint_id),
           disabled AS (
             UPDATE webhook_endpoints ep
                SET disabled_at = now(), disabled_reason = $4, updated_at = now()
               FROM moved
              WHERE $4::text IS NOT NULL AND ep.id = moved.endpoint_id AND ep.disabled_at IS NULL
                AND ($5::float8 IS NULL
                     OR ep.failing_since <= now() - make_interval(secs => $5::float8 / 1000))
             RETURNING ep.id),
           other_jobs AS (
             DELETE FROM webhook_delivery_jobs oj USING disabled
              WHERE oj.endpoint_id = disabled.id AND oj.delivery_id <> $1
             RETURNING oj.delivery_id),
           others AS (
             UPDATE webhook_deliveries od
                SET status = 'failed', failed_reason = 'endpoint_disabled', updated_at = now()
               FROM other_jobs WHERE od.id = other_jobs.delivery_id AND od.status = 'pending')
           SELECT (SELECT count(*) FROM owned)::int AS owned,
                  (SELECT count(*) FROM moved)::int AS moved`,
    values: [job.id, job.leaseOwner, failure.reason, failure.disable, failure.failingForMs],
  });
  return outcomeOf(rows[0]);
}

function outcomeOf(row: { owned: number; moved: number } | undefined): CompletionOutcome {
  if (!row || row.owned === 0) return 'lease_lost';
  return row.moved === 0 ? 'unchanged' : 'completed';
}
