import type { Consumer, KafkaMessage } from 'kafkajs';
import {
  handlerOutageOf,
  reportAnswers,
  shareHandlerOutage,
  type KafkaClient,
} from './kafka-client.js';

// Consuming: records one by one or in batches, offsets committed only after the handler
// resolved. Part of the Kafka boundary (kafka.ts).

/** One record as a consumer sees it. */
export interface ConsumedRecord {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  headers: Record<string, string>;
}

/**
 * Runs `handle` for every record of `topics`, partitions in parallel, each partition in order.
 * kafkajs commits a record's offset only after `handle` resolved, so a record whose handling
 * failed (thrown: e.g. the database is down) is retried and never skipped. A new group starts
 * from the earliest offset: nothing published before it existed is missed.
 */
export async function consume(
  consumer: Consumer,
  topics: readonly string[],
  handle: (record: ConsumedRecord) => Promise<void>,
  partitionsConsumedConcurrently = 3,
): Promise<void> {
  await consumer.subscribe({ topics: [...topics], fromBeginning: true });
  await consumer.run({
    partitionsConsumedConcurrently,
    eachMessage: async ({ topic, partition, message }) => {
      await handle(toConsumedRecord(topic, partition, message));
      handlerOutageOf(consumer)?.succeeded();
    },
  });
}

/** Consecutive records of one partition, in order. */
export interface ConsumedBatch {
  topic: string;
  partition: number;
  records: ConsumedRecord[];
}

export interface BatchOptions {
  /** Partitions whose batches are handled at once (kafkajs' partitionsConsumedConcurrently). */
  partitionsConsumedConcurrently: number;
  /** A fetched batch is handed over in slices of at most this many records. */
  maxRecords: number;
}

/**
 * Runs `handle` for batches of records of `topics`: up to `partitionsConsumedConcurrently`
 * partitions at once, each in order. A slice's offsets are resolved only after `handle`
 * resolved for it (then committed, and the member heartbeats): if `handle` throws, nothing of
 * that slice is resolved and kafkajs delivers it again from its first record. A slice is never
 * started once the consumer stops or the partition was reassigned. A new group starts from the
 * earliest offset.
 */
export async function consumeBatches(
  consumer: Consumer,
  topics: readonly string[],
  handle: (batch: ConsumedBatch) => Promise<void>,
  options: BatchOptions,
): Promise<void> {
  await consumer.subscribe({ topics: [...topics], fromBeginning: true });
  await consumer.run({
    partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
    eachBatchAutoResolve: false,
    // kafkajs' payload functions are closures that do not use `this`.
    eachBatch: async (payload) => {
      const { batch } = payload;
      const { topic, partition } = batch;
      const records = batch.messages.map((message) => toConsumedRecord(topic, partition, message));
      for (let start = 0; start < records.length; start += options.maxRecords) {
        if (!payload.isRunning() || payload.isStale()) return;
        const slice = records.slice(start, start + options.maxRecords);
        const last = slice.at(-1);
        if (!last) return;
        await handle({ topic, partition, records: slice });
        payload.resolveOffset(last.offset);
        await payload.commitOffsetsIfNecessary();
        await payload.heartbeat();
      }
    },
  });
}

function toConsumedRecord(topic: string, partition: number, message: KafkaMessage): ConsumedRecord {
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key?.toString() ?? null,
    value: message.value,
    headers: Object.fromEntries(
      Object.entries(message.headers ?? {}).flatMap(([name, header]) =>
        header === undefined ? [] : [[name, header.toString()]],
      ),
    ),
  };
}

/**
 * A consumer in `groupId`. A fetch returns as soon as records exist; `maxWaitTimeInMs` only
 * bounds an idle fetch, and a disconnect (shutdown, rebalance) waits for the fetch in flight,
 * so half a second keeps shutdowns fast at the cost of two idle fetches per second.
 * A crashed member's partitions move to the others after the session timeout: 10 s instead
 * of kafkajs' 30 s (heartbeats every 3 s leave room for two missed ones and a GC pause).
 */
export function createConsumer(
  kafka: KafkaClient,
  groupId: string,
  maxWaitTimeInMs = 500,
): Consumer {
  const consumer = kafka.consumer({
    groupId,
    maxWaitTimeInMs,
    sessionTimeout: 10_000,
    heartbeatInterval: 3_000,
  });
  reportAnswers(kafka, consumer);
  shareHandlerOutage(kafka, consumer);
  return consumer;
}
