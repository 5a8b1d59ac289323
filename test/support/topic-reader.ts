import { readTopicToEnd, type Admin, type KafkaClient } from '../../src/platform/kafka/kafka.js';

/** One message as it sits on the topic. */
export interface TopicMessage {
  partition: number;
  offset: number;
  key: string;
  value: string;
  headers: Record<string, string>;
}

/**
 * Everything on `topic` right now: every partition from the beginning up to the high watermark
 * taken at the start (acknowledged messages are below it; a transaction's commit marker is
 * passed, not waited for), in offset order per partition. Bounded by `timeoutMs`.
 */
export async function readTopic(
  kafka: KafkaClient,
  admin: Admin,
  topic: string,
  timeoutMs = 30_000,
): Promise<TopicMessage[]> {
  const messages: TopicMessage[] = [];
  await readTopicToEnd(
    kafka,
    admin,
    topic,
    (record) => {
      messages.push({
        partition: record.partition,
        offset: Number(record.offset),
        key: record.key ?? '',
        value: record.value?.toString() ?? '',
        headers: record.headers,
      });
    },
    timeoutMs,
  );
  return messages.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}
