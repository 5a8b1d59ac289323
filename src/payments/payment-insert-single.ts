import { v7 as uuidv7 } from 'uuid';
import { keyRecordInsertCte } from '../idempotency/idempotency-repository.js';
import type { StoredResponse } from '../idempotency/stored-response.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import { paymentEventId } from './payment-event-id.js';
import { outboxInsertCte } from '../outbox/outbox-writer.js';
import { currentTraceContext, type TraceContext } from '../outbox/trace-context.js';
import type { Queryable } from '../platform/database/db.js';
import { newPaymentResource } from './payment-resource.js';
import type { CreatePaymentBody } from './payment-schemas.js';

export interface NewPaymentRecord {
  merchantId: string;
  idempotencyKey: string;
  fingerprint: Buffer;
  ttlSeconds: number;
  response: { status: number; body: string };
  payment: {
    id: string;
    amount: number;
    currency: string;
    source: string;
    description: string | null;
    metadata: Record<string, string>;
    createdAt: Date;
    /** A manual payment (issue 40): written by insertPaymentOnce only, never batched. */
    manual?: boolean;
  };
  event: { id: string; type: string; topic: string; data: unknown };
}

/**
 * The statement of insertPaymentOnce: the key's record (idempotency's part), the payment, and
 * its `payment.created` event (the outbox writer's part), each inserted from what the one
 * before returned. Exported so `npm run bench:api` gives pgbench this very text
 * (tools/bench/pgbench-script.ts) instead of a copy that could drift.
 * $1 merchant, $2 key, $3 fingerprint, $4 payment id, $5/$6 response status/body, $7 created
 * at, $8 TTL seconds, $9..$13 amount, currency, source, description, metadata, $14..$17 event
 * id, type, topic, data, $18/$19 traceparent/tracestate.
 */
function insertPaymentOnceSql(manual: boolean): string {
  return `WITH ${keyRecordInsertCte(
    'idempotency',
    {
      merchantId: '$1',
      key: '$2',
      fingerprint: '$3',
      paymentId: '$4',
      status: '$5',
      body: '$6',
      createdAt: '$7',
      ttlSeconds: '$8',
    },
    { ifKeyFree: true },
  )}, payment AS (
       INSERT INTO payments (id, merchant_id, amount, currency, source, description, metadata,
                             status, created_at, updated_at${manual ? ', capture_method' : ''})
       SELECT payment_id, $1, $9, $10, $11, $12, $13, 'pending', $7, $7${manual ? ", 'manual'" : ''}
         FROM idempotency
       RETURNING id
     ), ${outboxInsertCte(
       'outbox',
       {
         merchantId: '$1',
         eventId: '$14',
         type: '$15',
         aggregateId: 'id',
         topic: '$16',
         data: '$17',
         createdAt: '$7',
         traceparent: '$18',
         tracestate: '$19',
       },
       'payment',
     )}
     SELECT idempotency.expires_at FROM idempotency JOIN outbox ON outbox.aggregate_id = idempotency.payment_id`;
}

export const INSERT_PAYMENT_ONCE_SQL = insertPaymentOnceSql(false);

/** The same statement for a manual payment (issue 40): its capture_method written too. */
const INSERT_MANUAL_PAYMENT_ONCE_SQL = insertPaymentOnceSql(true);

/**
 * ONE statement, hence one transaction: the idempotency record, the payment and its
 * `payment.created` outbox row are written together or not at all (I2). The record goes first
 * with ON CONFLICT DO NOTHING; the payment and the outbox row are inserted only from what that
 * insert returned, so a key that exists writes nothing. A concurrent insert of the same key
 * waits for the other transaction and then sees its row (I1, whatever Redis did).
 *
 * Returns the stored response when this call created the payment, null when the key exists.
 * `trace`: the POST's span, which the relay and settlement continue (DESIGN, Observability);
 * the active one unless the caller captured it earlier (the batcher, outside the request).
 */
export async function insertPaymentOnce(
  db: Queryable,
  record: NewPaymentRecord,
  trace: TraceContext = currentTraceContext(),
): Promise<StoredResponse | null> {
  const { payment, event } = record;
  // Named: prepared once per connection, like pgbench -M prepared.
  const { rows } = await db.query<{ expires_at: Date }>({
    ...(payment.manual
      ? { name: 'payments.insert-manual-payment-once', text: INSERT_MANUAL_PAYMENT_ONCE_SQL }
      : { name: 'payments.insert-payment-once', text: INSERT_PAYMENT_ONCE_SQL }),
    values: [
      record.merchantId,
      record.idempotencyKey,
      record.fingerprint,
      payment.id,
      record.response.status,
      record.response.body,
      payment.createdAt,
      record.ttlSeconds,
      payment.amount,
      payment.currency,
      payment.source,
      payment.description,
      payment.metadata,
      event.id,
      event.type,
      event.topic,
      JSON.stringify(event.data),
      trace.traceparent,
      trace.tracestate,
    ],
  });
  const created = rows[0];
  return created ? storedResponseOf(record, created.expires_at) : null;
}

/** What a replay of the request that wrote `record` answers (cached and stored alike). */
export function storedResponseOf(record: NewPaymentRecord, expiresAt: Date): StoredResponse {
  return {
    paymentId: record.payment.id,
    fingerprint: record.fingerprint.toString('hex'),
    status: record.response.status,
    body: record.response.body,
    expiresAt,
  };
}

/**
 * Writes one new payment's rows (key record, payment, outbox row) in one transaction: the
 * stored response when it did, null when the key already has a record. insertPaymentOnce, or
 * the batcher that writes concurrent requests' rows together (payment-insert-batcher.ts).
 */
export type InsertPaymentRecord = (record: NewPaymentRecord) => Promise<StoredResponse | null>;

export interface NewPaymentSettings {
  insert: InsertPaymentRecord;
  /** A manual payment's write (insertPaymentOnce): the batch statement has no capture_method. */
  insertManual: InsertPaymentRecord;
  now: () => Date;
  keyTtlSeconds: number;
  paymentsTopic: string;
}

/**
 * POST /payments' write for the idempotency layer: a new payment (id, resource, event) from the
 * validated body, written by `settings.insert`; null when the key already has a record.
 */
export function insertNewPayment(
  settings: NewPaymentSettings,
  merchant: Merchant,
  key: string,
  body: CreatePaymentBody,
  fingerprint: Buffer,
): Promise<StoredResponse | null> {
  const paymentId = uuidv7();
  const createdAt = settings.now();
  const resource = newPaymentResource(paymentId, body, createdAt);
  const manual = body.capture_method === 'manual';
  return (manual ? settings.insertManual : settings.insert)({
    merchantId: merchant.id,
    idempotencyKey: key,
    fingerprint,
    ttlSeconds: settings.keyTtlSeconds,
    response: { status: 202, body: JSON.stringify(resource) },
    payment: {
      id: paymentId,
      amount: body.amount,
      currency: body.currency,
      source: body.source,
      description: body.description ?? null,
      metadata: body.metadata,
      createdAt,
      ...(manual ? { manual } : {}),
    },
    event: {
      id: paymentEventId(paymentId, 'payment.created'),
      type: 'payment.created',
      topic: settings.paymentsTopic,
      data: resource,
    },
  });
}
