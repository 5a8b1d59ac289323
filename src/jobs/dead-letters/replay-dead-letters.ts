import { randomUUID } from 'node:crypto';
import type {
  Admin,
  ConsumedRecord,
  KafkaClient,
  ProducerRecord,
} from '../../platform/kafka/kafka.js';
import { createIdempotentProducer, publish, readTopicToEnd } from '../../platform/kafka/kafka.js';
import type { Queryable } from '../../platform/database/db.js';
import type { Logger } from '../../platform/telemetry/logger.js';
import { readReplayableDeadLetters } from './dead-letter-rows.js';
import { traceContextHeaders } from '../../outbox/trace-context.js';
import { DLQ_HEADERS, REPLAY_TOKEN_HEADER } from './dead-letter.js';

export interface ReplayRequest {
  dlqTopic: string;
  /** Used when a dead letter does not name its original topic. */
  mainTopic: string;
  /** One event id, or every dead letter that has one. */
  select: { eventId: string } | { all: true };
  /**
   * Also read the stored letters (`dead_letters`, as its owner): every dead job's letter is kept
   * there while the job is dead, after the topic's retention dropped it (DESIGN 111).
   */
  database?: Queryable;
}

export interface ReplayResult {
  /** Dead letters read from the topic. */
  scanned: number;
  /** Stored letters of dead jobs read from the database (0 without `database`). */
  stored: number;
  /** Of the replayed event ids, those whose letter only the database still had. */
  fromDatabase: number;
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
  const result: ReplayResult = {
    scanned: 0,
    stored: 0,
    fromDatabase: 0,
    replayed: [],
    skippedWithoutEventId: 0,
  };
  const chosen = await chooseDeadLetters(kafka, admin, request, result, randomUUID());
  await republish(kafka, chosen);
  result.replayed = [...chosen.keys()];
  logger.info(
    {
      scanned: result.scanned,
      stored: result.stored,
      from_database: result.fromDatabase,
      replayed: result.replayed.length,
    },
    'dead letters replayed',
  );
  return result;
}

interface ChosenRecord {
  topic: string;
  record: ProducerRecord;
}

/**
 * Reads the dead-letter topic to its current end (the last dead letter per selected event id),
 * then the stored letters of dead jobs for the event ids the topic no longer has.
 */
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
    else if (selected(request, eventId)) {
      chosen.set(eventId, replayCopy(request, eventId, record.key, record.value, headers));
    }
  });
  const stored = request.database ? await readReplayableDeadLetters(request.database) : [];
  result.stored = stored.length;
  for (const letter of stored) {
    if (!selected(request, letter.eventId) || chosen.has(letter.eventId)) continue;
    chosen.set(
      letter.eventId,
      replayCopy(request, letter.eventId, letter.key, letter.value, letter.headers),
    );
    result.fromDatabase++;
  }
  for (const record of chosen.values()) record.record.headers[REPLAY_TOKEN_HEADER] = replayToken;
  return chosen;
}

function selected(request: ReplayRequest, eventId: string): boolean {
  return 'all' in request.select || request.select.eventId === eventId;
}

/** The copy put back on the original topic: the letter's key and value, its `ce_*` headers. */
function replayCopy(
  request: ReplayRequest,
  eventId: string,
  key: string | null,
  raw: Buffer | null,
  letterHeaders: Record<string, string>,
): ChosenRecord {
  const value = raw?.toString() ?? '';
  return {
    topic: letterHeaders[DLQ_HEADERS.originalTopic] ?? request.mainTopic,
    record: { key: key ?? '', value, headers: cloudEventHeaders(value, eventId) },
  };
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
