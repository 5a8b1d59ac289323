import type { Admin, KafkaClient, ProducerRecord } from '../platform/kafka.js';
import { consume, createConsumer, createIdempotentProducer, publish } from '../platform/kafka.js';
import type { Logger } from '../platform/logger.js';
import { DLQ_HEADERS } from './dead-letter.js';

export interface ReplayRequest {
  dlqTopic: string;
  /** Used when a dead letter does not name its original topic. */
  mainTopic: string;
  /** One event id, or every dead letter that has one. */
  select: { eventId: string } | { all: true };
}

export interface ReplayResult {
  scanned: number;
  replayed: string[];
  /** Dead letters without an event id (unparseable records): nothing to replay them as. */
  skippedWithoutEventId: number;
}

/**
 * Re-publishes dead letters to their original topic, unchanged: same key, same value, so the
 * same event id. Settlement then treats the copy as a duplicate of an event it has seen, which
 * revives the dead job (and is a no-op for a payment already settled). Reads the dead-letter
 * topic from the beginning up to its end at the time of the call; each event id is replayed
 * once however many dead letters it has.
 */
export async function replayDeadLetters(
  kafka: KafkaClient,
  admin: Admin,
  request: ReplayRequest,
  logger: Logger,
): Promise<ReplayResult> {
  const result: ReplayResult = { scanned: 0, replayed: [], skippedWithoutEventId: 0 };
  const chosen = await chooseDeadLetters(kafka, admin, request, result);
  await republish(kafka, chosen);
  result.replayed = [...chosen.keys()];
  logger.info(
    { scanned: result.scanned, replayed: result.replayed.length },
    'dead letters replayed',
  );
  return result;
}

interface ChosenRecord {
  topic: string;
  record: ProducerRecord;
}

/** Reads the dead-letter topic to its current end; the last dead letter per selected event id. */
async function chooseDeadLetters(
  kafka: KafkaClient,
  admin: Admin,
  request: ReplayRequest,
  result: ReplayResult,
): Promise<Map<string, ChosenRecord>> {
  const ends = await admin.fetchTopicOffsets(request.dlqTopic);
  const remaining = new Map(
    ends.filter((p) => p.high !== p.low).map((p) => [p.partition, BigInt(p.high)]),
  );
  const chosen = new Map<string, ChosenRecord>();
  if (remaining.size === 0) return chosen;
  const consumer = createConsumer(kafka, `dlq-replay-${Date.now().toString(36)}`, 100);
  await consumer.connect();
  try {
    await new Promise<void>((resolve, reject) => {
      consume(consumer, [request.dlqTopic], (record) => {
        result.scanned++;
        const headers = record.headers;
        const eventId = headers[DLQ_HEADERS.eventId];
        if (eventId === undefined) result.skippedWithoutEventId++;
        else if ('all' in request.select || request.select.eventId === eventId) {
          const value = record.value?.toString() ?? '';
          chosen.set(eventId, {
            topic: headers[DLQ_HEADERS.originalTopic] ?? request.mainTopic,
            record: { key: record.key ?? '', value, headers: cloudEventHeaders(value, eventId) },
          });
        }
        const end = remaining.get(record.partition);
        if (end !== undefined && BigInt(record.offset) + 1n >= end)
          remaining.delete(record.partition);
        if (remaining.size === 0) resolve();
        return Promise.resolve();
      }).catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return chosen;
}

/** Publishes the chosen records to their original topics, unchanged. */
async function republish(kafka: KafkaClient, chosen: Map<string, ChosenRecord>): Promise<void> {
  if (chosen.size === 0) return;
  const producer = createIdempotentProducer(kafka);
  await producer.connect();
  try {
    const byTopic = new Map<string, ProducerRecord[]>();
    for (const { topic, record } of chosen.values()) {
      byTopic.set(topic, [...(byTopic.get(topic) ?? []), record]);
    }
    await publish(
      producer,
      [...byTopic].map(([topic, records]) => ({ topic, records })),
    );
  } finally {
    await producer.disconnect();
  }
}

/** The `ce_*` headers of the original record, rebuilt from its CloudEvent value. */
function cloudEventHeaders(value: string, eventId: string): Record<string, string> {
  const headers: Record<string, string> = { ce_id: eventId };
  try {
    const event = JSON.parse(value) as { type?: unknown; subject?: unknown };
    if (typeof event.type === 'string') headers.ce_type = event.type;
    if (typeof event.subject === 'string') headers.ce_subject = event.subject;
  } catch {
    // Not JSON: replayed as it is; settlement will dead-letter it again.
  }
  return headers;
}
