import { keyRecordInsertCte } from '../idempotency/idempotency-repository.js';
import { outboxInsertCte } from '../outbox/outbox-writer.js';
import type { TraceContext } from '../outbox/trace-context.js';
import type { Queryable } from '../platform/database/db.js';
import type { NewPaymentRecord } from './payment-insert-single.js';

/** One request's rows for insertPaymentBatch: its record and the trace its outbox row carries. */
export interface BatchedPaymentRecord {
  record: NewPaymentRecord;
  trace: TraceContext;
}

/**
 * INSERT_PAYMENT_ONCE_SQL over many requests: the same three CTEs (key record ON CONFLICT DO
 * NOTHING, payment, `payment.created` outbox row), each fed by unnest arrays (one element per
 * request, `ord` their order) instead of scalars, so N requests cost one statement, one
 * transaction and one commit. A payment and its event are written only for a record this
 * statement inserted; a key already taken (committed, or earlier in the same arrays) writes
 * nothing for that request and the others are unaffected. Returns the written payments' ids.
 */
export const INSERT_PAYMENT_BATCH_SQL = `WITH input AS (
       SELECT *
         FROM unnest($1::uuid[], $2::text[], $3::bytea[], $4::uuid[], $5::smallint[], $6::text[],
                     $7::timestamptz[], $8::integer[], $9::bigint[], $10::text[], $11::text[],
                     $12::text[], $13::jsonb[], $14::uuid[], $15::text[], $16::text[],
                     $17::jsonb[], $18::text[], $19::text[])
              WITH ORDINALITY
              AS r(merchant_id, idempotency_key, fingerprint, payment_id, response_status,
                   response_body, created_at, ttl_seconds, amount, currency, source, description,
                   metadata, event_id, event_type, topic, data, traceparent, tracestate, ord)
     ), ${keyRecordInsertCte(
       'idempotency',
       {
         merchantId: 'r.merchant_id',
         key: 'r.idempotency_key',
         fingerprint: 'r.fingerprint',
         paymentId: 'r.payment_id',
         status: 'r.response_status',
         body: 'r.response_body',
         createdAt: 'r.created_at',
         ttlSeconds: 'r.ttl_seconds',
       },
       { ifKeyFree: true, from: 'input r ORDER BY r.ord' },
     )}, payment AS (
       INSERT INTO payments (id, merchant_id, amount, currency, source, description, metadata,
                             status, created_at, updated_at)
       SELECT r.payment_id, r.merchant_id, r.amount, r.currency, r.source, r.description,
              r.metadata, 'pending', r.created_at, r.created_at
         FROM idempotency JOIN input r ON r.payment_id = idempotency.payment_id
       RETURNING id
     ), ${outboxInsertCte(
       'outbox',
       {
         merchantId: 'r.merchant_id',
         eventId: 'r.event_id',
         type: 'r.event_type',
         aggregateId: 'payment.id',
         topic: 'r.topic',
         data: 'r.data',
         createdAt: 'r.created_at',
         traceparent: 'r.traceparent',
         tracestate: 'r.tracestate',
       },
       'payment JOIN input r ON r.payment_id = payment.id',
     )}
     SELECT idempotency.payment_id, idempotency.expires_at
       FROM idempotency JOIN outbox ON outbox.aggregate_id = idempotency.payment_id`;

/**
 * Writes `batch` in ONE statement (hence one transaction: every written request's key record,
 * payment and outbox row commit together, I1/I2). Resolves with the expiry of each record it
 * wrote, by payment id; a request missing from the map found its key taken. Throws when the
 * statement fails, writing nothing for anyone (the batcher then retries each request alone).
 */
export async function insertPaymentBatch(
  db: Queryable,
  batch: readonly BatchedPaymentRecord[],
): Promise<Map<string, Date>> {
  const column = <T>(pick: (entry: BatchedPaymentRecord) => T): T[] => batch.map(pick);
  // Named: prepared once per connection; the text is the same whatever the batch's size.
  const { rows } = await db.query<{ payment_id: string; expires_at: Date }>({
    name: 'payments.insert-payment-batch',
    text: INSERT_PAYMENT_BATCH_SQL,
    values: [
      column(({ record }) => record.merchantId),
      column(({ record }) => record.idempotencyKey),
      column(({ record }) => record.fingerprint),
      column(({ record }) => record.payment.id),
      column(({ record }) => record.response.status),
      column(({ record }) => record.response.body),
      column(({ record }) => record.payment.createdAt),
      column(({ record }) => record.ttlSeconds),
      column(({ record }) => record.payment.amount),
      column(({ record }) => record.payment.currency),
      column(({ record }) => record.payment.source),
      column(({ record }) => record.payment.description),
      column(({ record }) => JSON.stringify(record.payment.metadata)),
      column(({ record }) => record.event.id),
      column(({ record }) => record.event.type),
      column(({ record }) => record.event.topic),
      column(({ record }) => JSON.stringify(record.event.data)),
      column(({ trace }) => trace.traceparent),
      column(({ trace }) => trace.tracestate),
    ],
  });
  return new Map(rows.map((row) => [row.payment_id, row.expires_at]));
}
