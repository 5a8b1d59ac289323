import type { Queryable } from '../../src/platform/database/db.js';
import { scopeCte, scopeParameters, type VerifyScope } from './verify-scope.js';

/** One outbox row still in the table (published rows are deleted after the retention window). */
export interface OutboxFact {
  eventId: string;
  type: string;
  state: 'pending' | 'published' | 'parked';
  ageSeconds: number;
}

/** What the database and the acquirer simulator's books say about one payment. */
export interface PaymentFacts {
  id: string;
  merchantId: string;
  status: 'pending' | 'processing' | 'requires_capture' | 'settled' | 'failed' | 'canceled';
  failureCode: string | null;
  /** Since created_at, by the database clock. */
  ageSeconds: number;
  /** Since the last status change, by the database clock. */
  updatedAgeSeconds: number;
  keyRecords: number;
  foreignKeyRecords: number;
  /** Key records whose stored response does not name this payment's id. */
  mismatchedResponses: number;
  approvedCharges: number;
  declinedCharges: number;
  /** Calls the simulator answered `approved` without replaying a stored answer: real charges. */
  freshApprovedCalls: number;
  calls: number;
  replayedCalls: number;
  jobState: 'pending' | 'dead' | null;
  jobAttempts: number | null;
  /** Event ids of `payment.created` rows in processed_events (settlement's dedup table). */
  processedCreatedIds: string[];
  outbox: OutboxFact[];
}

/**
 * Loads the facts of every payment in scope with one query: each table is aggregated per
 * payment once and hash-joined, so the cost grows linearly (tens of thousands of payments take
 * well under a second). Ages use the database clock, the one that wrote the timestamps' peers.
 */
export async function loadPaymentFacts(db: Queryable, scope: VerifyScope): Promise<PaymentFacts[]> {
  const { rows } = await db.query<{
    id: string;
    merchant_id: string;
    status: PaymentFacts['status'];
    failure_code: string | null;
    age_s: number;
    updated_age_s: number;
    key_records: number | null;
    foreign_key_records: number | null;
    mismatched_responses: number | null;
    approved: number | null;
    declined: number | null;
    fresh_approved: number | null;
    calls: number | null;
    replayed_calls: number | null;
    job_state: 'pending' | 'dead' | null;
    job_attempts: number | null;
    processed_created_ids: string[] | null;
    outbox: { id: string; type: string; state: OutboxFact['state']; age: number }[] | null;
  }>(
    `WITH ${scopeCte()},
     keys AS (
       SELECT k.payment_id, count(*)::int AS records,
              count(*) FILTER (WHERE k.merchant_id <> s.merchant_id)::int AS foreign_records,
              count(*) FILTER (WHERE position(('"id":"' || s.id::text || '"') IN k.response_body) = 0)::int
                AS mismatched
         FROM idempotency_keys k JOIN scope s ON s.id = k.payment_id AND k.refund_id IS NULL
          -- A manual payment's capture / cancel keys point at it too, written after it; its
          -- creation's record has its created_at (one statement writes both).
          AND (s.capture_method = 'automatic' OR k.created_at <= s.created_at)
        GROUP BY k.payment_id),
     charges AS (
       SELECT c.payment_id,
              count(*) FILTER (WHERE c.result = 'approved')::int AS approved,
              count(*) FILTER (WHERE c.result = 'declined')::int AS declined
         FROM acquirer_simulator_charges c JOIN scope s ON s.id = c.payment_id
        GROUP BY c.payment_id),
     calls AS (
       SELECT c.payment_id, count(*)::int AS calls,
              count(*) FILTER (WHERE c.replayed)::int AS replayed,
              count(*) FILTER (WHERE c.result = 'approved' AND NOT c.replayed)::int AS fresh_approved
         FROM acquirer_simulator_calls c JOIN scope s ON s.id = c.payment_id
        GROUP BY c.payment_id),
     processed AS (
       SELECT e.payment_id,
              array_agg(e.event_id::text) FILTER (WHERE e.event_type = 'payment.created') AS created_ids
         FROM processed_events e JOIN scope s ON s.id = e.payment_id
        GROUP BY e.payment_id),
     outbox_rows AS (
       SELECT o.aggregate_id AS payment_id,
              jsonb_agg(jsonb_build_object(
                'id', o.event_id, 'type', o.event_type,
                'state', CASE WHEN o.parked_at IS NOT NULL THEN 'parked'
                              WHEN o.published_at IS NOT NULL THEN 'published' ELSE 'pending' END,
                'age', extract(epoch FROM now() - o.created_at)) ORDER BY o.id) AS rows
         FROM outbox o JOIN scope s ON s.id = o.aggregate_id AND o.event_type LIKE 'payment.%'
        GROUP BY o.aggregate_id)
     SELECT s.id, s.merchant_id, s.status, s.failure_code,
            extract(epoch FROM now() - s.created_at)::float8 AS age_s,
            extract(epoch FROM now() - s.updated_at)::float8 AS updated_age_s,
            keys.records AS key_records, keys.foreign_records AS foreign_key_records,
            keys.mismatched AS mismatched_responses,
            charges.approved, charges.declined,
            calls.fresh_approved, calls.calls, calls.replayed AS replayed_calls,
            j.state AS job_state, j.attempts AS job_attempts,
            processed.created_ids AS processed_created_ids,
            outbox_rows.rows AS outbox
       FROM scope s
       LEFT JOIN keys ON keys.payment_id = s.id
       LEFT JOIN charges ON charges.payment_id = s.id
       LEFT JOIN calls ON calls.payment_id = s.id
       LEFT JOIN processed ON processed.payment_id = s.id
       LEFT JOIN outbox_rows ON outbox_rows.payment_id = s.id
       LEFT JOIN settlement_jobs j ON j.payment_id = s.id`,
    scopeParameters(scope),
  );
  return rows.map((row) => ({
    id: row.id,
    merchantId: row.merchant_id,
    status: row.status,
    failureCode: row.failure_code,
    ageSeconds: row.age_s,
    updatedAgeSeconds: row.updated_age_s,
    keyRecords: row.key_records ?? 0,
    foreignKeyRecords: row.foreign_key_records ?? 0,
    mismatchedResponses: row.mismatched_responses ?? 0,
    approvedCharges: row.approved ?? 0,
    declinedCharges: row.declined ?? 0,
    freshApprovedCalls: row.fresh_approved ?? 0,
    calls: row.calls ?? 0,
    replayedCalls: row.replayed_calls ?? 0,
    jobState: row.job_state,
    jobAttempts: row.job_attempts,
    processedCreatedIds: row.processed_created_ids ?? [],
    outbox: (row.outbox ?? []).map((o) => ({
      eventId: o.id,
      type: o.type,
      state: o.state,
      ageSeconds: o.age,
    })),
  }));
}

/** Payment ids of rows that belong to no payment at all, per kind (at most `limit` each). */
export interface Orphans {
  charges: string[];
  outbox: string[];
}

/** Only meaningful when the whole database is judged (a scope leaves other payments out). */
export async function loadOrphans(db: Queryable, limit = 10_000): Promise<Orphans> {
  const { rows } = await db.query<{ kind: keyof Orphans; payment_id: string }>(
    `(SELECT DISTINCT 'charges' AS kind, c.payment_id::text FROM acquirer_simulator_charges c
       WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.id = c.payment_id) LIMIT $1)
     UNION ALL
     (SELECT DISTINCT 'outbox', o.aggregate_id::text FROM outbox o
       WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.id = o.aggregate_id) LIMIT $1)`,
    [limit],
  );
  const orphans: Orphans = { charges: [], outbox: [] };
  for (const row of rows) orphans[row.kind].push(row.payment_id);
  return orphans;
}

/** Which of `ids` are payments now (the database may have moved on since the facts were read). */
export async function existingPayments(
  db: Queryable,
  ids: readonly string[],
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>(
    'SELECT id::text FROM payments WHERE id = ANY($1::uuid[])',
    [ids],
  );
  return new Set(rows.map((row) => row.id));
}
