import { randomUUID } from 'node:crypto';
import type { Admin } from 'kafkajs';
import type { KafkaClient } from './kafka-client.js';
import { consume, createConsumer, type ConsumedRecord } from './kafka-consumer.js';

/**
 * Calls `onRecord` for every record of `topic` from the beginning up to its end as it is when
 * the call starts (the high watermarks read first: everything acknowledged before is below
 * them), partitions in parallel, each in offset order, read committed. A partition's end is
 * reached when the consumer has fetched past it, records or not: a topic written in Kafka
 * transactions (the dead letters) ends with a commit marker, an offset no record is delivered
 * at. A topic that does not exist has no records. Uses a throwaway consumer group and deletes it
 * afterwards; fails after `timeoutMs`. Resolves with the count of records read.
 */
export async function readTopicToEnd(
  kafka: KafkaClient,
  admin: Admin,
  topic: string,
  onRecord: (record: ConsumedRecord) => void,
  timeoutMs = 120_000,
): Promise<number> {
  if (!(await admin.listTopics()).includes(topic)) return 0;
  const ends = new Map(
    (await admin.fetchTopicOffsets(topic))
      .filter((p) => p.high !== p.low)
      .map((p) => [p.partition, BigInt(p.high)]),
  );
  /** Partitions whose end the consumer has not fetched past yet. */
  const remaining = new Set(ends.keys());
  if (remaining.size === 0) return 0;
  const groupId = `read-${randomUUID()}`;
  const consumer = createConsumer(kafka, groupId, 100);
  let count = 0;
  const fetchedUpTo = (partition: number, offset: string) => {
    const end = ends.get(partition);
    if (end !== undefined && BigInt(offset) + 1n >= end) remaining.delete(partition);
  };
  await consumer.connect();
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new Error(
            `read ${String(count)} records of ${topic} in ${String(timeoutMs)} ms, not its end`,
          ),
        );
      }, timeoutMs);
      const settleIfDone = () => {
        if (remaining.size > 0) return;
        clearTimeout(timer);
        resolve();
      };
      // After each fetched batch, control records and aborted records included.
      consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
        if (payload.topic !== topic) return;
        fetchedUpTo(payload.partition, payload.lastOffset);
        settleIfDone();
      });
      consume(consumer, [topic], (record) => {
        const end = ends.get(record.partition);
        if (end !== undefined && BigInt(record.offset) < end) {
          count++;
          onRecord(record);
          fetchedUpTo(record.partition, record.offset);
        }
        settleIfDone();
        return Promise.resolve();
      }).catch((error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      });
    });
  } finally {
    await consumer.disconnect();
    await admin.deleteGroups([groupId]).catch(() => undefined);
  }
  return count;
}
