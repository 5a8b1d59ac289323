import { randomUUID } from 'node:crypto';
import {
  consume,
  createConsumer,
  type Admin,
  type ConsumedRecord,
  type KafkaClient,
} from '../../src/platform/kafka.js';

/**
 * Calls `onRecord` for every record of `topic` from the beginning up to its end as it is when
 * the call starts (the high watermarks read first: everything acknowledged before is below
 * them), partitions in parallel, each in offset order. A topic that does not exist has no
 * records. Uses a throwaway consumer group and deletes it afterwards. Resolves with the count.
 */
export async function readTopicToEnd(
  kafka: KafkaClient,
  admin: Admin,
  topic: string,
  onRecord: (record: ConsumedRecord) => void,
  timeoutMs = 120_000,
): Promise<number> {
  if (!(await admin.listTopics()).includes(topic)) return 0;
  const ends = await admin.fetchTopicOffsets(topic);
  /** Partitions still to read, with the offset one past their last record. */
  const remaining = new Map(
    ends.filter((p) => p.high !== p.low).map((p) => [p.partition, BigInt(p.high)]),
  );
  if (remaining.size === 0) return 0;
  const groupId = `verify-${randomUUID()}`;
  const consumer = createConsumer(kafka, groupId, 100);
  let count = 0;
  await consumer.connect();
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`read ${count} records of ${topic} in ${timeoutMs} ms, not its end`));
      }, timeoutMs);
      consume(consumer, [topic], (record) => {
        const end = remaining.get(record.partition);
        if (end !== undefined && BigInt(record.offset) < end) {
          count++;
          onRecord(record);
          if (BigInt(record.offset) + 1n >= end) remaining.delete(record.partition);
        }
        if (remaining.size === 0) {
          clearTimeout(timer);
          resolve();
        }
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
