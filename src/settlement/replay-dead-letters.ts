import { randomUUID } from 'node:crypto';
import type { Admin, ConsumedRecord, KafkaClient, ProducerRecord } from '../platform/kafka.js';
import { createIdempotentProducer, publish, readTopicToEnd } from '../platform/kafka.js';
import type { Logger } from '../platform/logger.js';
import { traceContextHeaders } from '../outbox/trace-context.js';
import { DLQ_HEADERS, REPLAY_TOKEN_HEADER } from '../jobs/dead-letter.js';

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
  /**
   * Dead letters without an event id (no readable CloudEvent id, no `ce_id`): nothing to replay
   * them as; `dlq:replay -- --list` shows them with their raw bytes.
   */
  skippedWithoutEventId: number;
}

/**
 * Re-publishes dead letters to their original topic, unchanged: same key, same value, so the
 * same event id, plus a replay token header (one per run). Settlement then treats the copy as a
 * duplicate of an event it has seen; the token revives the dead job once (and is a no-op for a
 * payment already settled). A duplicate without a token never revives anything. Reads the dead-letter
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
  const chosen = await chooseDeadLetters(kafka, admin, request, result, randomUUID());
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
  replayToken: string,
): Promise<Map<string, ChosenRecord>> {
  const chosen = new Map<string, ChosenRecord>();
  await scanDeadLetters(kafka, admin, request.dlqTopic, (record) => {
    result.scanned++;
    const headers = record.headers;
    const eventId = headers[DLQ_HEADERS.eventId];
    if (eventId === undefined) result.skippedWithoutEventId++;
    else if ('all' in request.select || request.select.eventId === eventId) {
      const value = record.value?.toString() ?? '';
      chosen.set(eventId, {
        topic: headers[DLQ_HEADERS.originalTopic] ?? request.mainTopic,
        record: {
          key: record.key ?? '',
          value,
          headers: { ...cloudEventHeaders(value, eventId), [REPLAY_TOKEN_HEADER]: replayToken },
        },
      });
    }
  });
  return chosen;
}

/** A dead letter with no event id: nothing to replay it as, shown to an operator as it is. */
export interface UnreadableDeadLetter {
  /** Where it is on the dead-letter topic. */
  partition: number;
  offset: string;
  /** Where it was consumed from. */
  originalTopic: string | null;
  originalPartition: string | null;
  originalOffset: string | null;
  errorClass: string | null;
  errorMessage: string | null;
  key: string | null;
  /** Every header of the dead letter (the original record's and the `dlq_*` ones). */
  headers: Record<string, string>;
  /** The record's value, byte for byte. */
  valueBase64: string;
  /** The value as text when it is valid UTF-8, else null. */
  valueText: string | null;
}

/**
 * `dlq:replay -- --list`: the dead letters without an event id (a value that is not a readable
 * CloudEvent and carries no `ce_id`), with their raw bytes, read to the topic's current end.
 */
export async function listUnreadableDeadLetters(
  kafka: KafkaClient,
  admin: Admin,
  dlqTopic: string,
): Promise<UnreadableDeadLetter[]> {
  const found: UnreadableDeadLetter[] = [];
  await scanDeadLetters(kafka, admin, dlqTopic, (record) => {
    const headers = record.headers;
    if (headers[DLQ_HEADERS.eventId] !== undefined) return;
    const value = record.value ?? Buffer.alloc(0);
    found.push({
      partition: record.partition,
      offset: record.offset,
      originalTopic: headers[DLQ_HEADERS.originalTopic] ?? null,
      originalPartition: headers[DLQ_HEADERS.originalPartition] ?? null,
      originalOffset: headers[DLQ_HEADERS.originalOffset] ?? null,
      errorClass: headers[DLQ_HEADERS.errorClass] ?? null,
      errorMessage: headers[DLQ_HEADERS.errorMessage] ?? null,
      key: record.key,
      headers,
      valueBase64: value.toString('base64'),
      valueText: utf8(value),
    });
  });
  return found.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
}

function utf8(value: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(value);
  } catch {
    return null;
  }
}

/** Runs `visit` for every record of the dead-letter topic up to its end at the time of the call. */
async function scanDeadLetters(
  kafka: KafkaClient,
  admin: Admin,
  dlqTopic: string,
  visit: (record: ConsumedRecord) => void,
): Promise<void> {
  await readTopicToEnd(kafka, admin, dlqTopic, visit);
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
  // The replayed copy continues the payment's trace, like the original.
  return { ...headers, ...traceContextHeaders(value) };
}
