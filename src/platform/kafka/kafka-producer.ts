import type { Message, Producer } from 'kafkajs';
import { reportAnswers, type KafkaClient } from './kafka-client.js';
import { recordingPartitioner, unacknowledgedPartitions } from './kafka-routed.js';

// Producing: the idempotent producer, sending with acks from every in-sync replica, and telling
// a refused record from a cluster failure. Part of the Kafka boundary (kafka.ts).

/**
 * The idempotent producer: acks from all in-sync replicas, and one request in flight because
 * kafkajs has known ordering issues with concurrent idempotent sends.
 *
 * `retries` bounds how long one send keeps retrying (kafkajs' default for idempotent producers
 * is forever). Bounding it is only safe for a caller that throws the producer away after any
 * failed send: kafkajs rolls its sequence numbers back on failure, so reusing the producer for
 * different records could collide with a batch the broker did append.
 */
export function createIdempotentProducer(
  kafka: KafkaClient,
  options: { retries?: number; transactionalId?: string; transactionTimeoutMs?: number } = {},
): Producer {
  const producer = kafka.producer({
    idempotent: true,
    ...(options.transactionalId === undefined ? {} : { transactionalId: options.transactionalId }),
    ...(options.transactionTimeoutMs === undefined
      ? {}
      : { transactionTimeout: options.transactionTimeoutMs }),
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    // The default partitioner, recording each message's partition (kafka-routed.ts).
    createPartitioner: recordingPartitioner,
    ...(options.retries === undefined ? {} : { retry: { retries: options.retries } }),
  });
  reportAnswers(kafka, producer);
  return producer;
}

/** One Kafka record: key, value (text, or raw bytes as consumed) and string headers. */
export interface ProducerRecord {
  key: string;
  value: string | Buffer;
  headers: Record<string, string>;
}

/**
 * Sends records to their topics in one request and resolves once every in-sync replica acked
 * them (acks -1). Rejects when any record was not acknowledged; see `isRecordRejected`.
 */
export async function publish(
  producer: Pick<Producer, 'sendBatch'>,
  batches: readonly { topic: string; records: readonly ProducerRecord[] }[],
): Promise<void> {
  const topicMessages = batches.map(({ topic, records }) => ({
    topic,
    messages: records.map(({ key, value, headers }): Message => ({ key, value, headers })),
  }));
  const acked = await producer.sendBatch({ acks: -1, topicMessages });
  // kafkajs may resolve without sending a partition whose leader moved (kafka-routed.ts): an
  // error then, so the caller sends the batch again (copies carry the same event ids).
  const missing = unacknowledgedPartitions(
    topicMessages.flatMap((batch) => batch.messages),
    acked,
  );
  if (missing.length > 0) {
    throw new Error(`no acknowledgement for ${missing.join(', ')} (a leader moved mid-send)`);
  }
}

/**
 * Broker answers that refuse the records themselves: sending the same bytes again cannot
 * succeed. Every other failure (connection refused or lost, timeouts, leader moves, unknown
 * topic, retries exhausted) is about the cluster, not the record, and is worth retrying as is.
 */
const RECORD_REJECTIONS = new Set([
  'MESSAGE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
  'INVALID_RECORD',
  'CORRUPT_MESSAGE',
  'INVALID_TIMESTAMP',
]);

/**
 * True when the broker refused the records themselves (see RECORD_REJECTIONS). Reads the
 * protocol error's `type` (kafkajs' KafkaJSProtocolError class is not an ESM named export),
 * through the `cause` chain kafkajs builds when it wraps an error.
 */
export function isRecordRejected(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; depth++) {
    const type = (cause as { type?: unknown }).type;
    if (typeof type === 'string' && RECORD_REJECTIONS.has(type)) return true;
    cause = cause.cause;
  }
  return false;
}
