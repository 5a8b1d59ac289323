import type { Admin, KafkaClient } from '../../src/platform/kafka.js';
import { uniqueSuffix } from './isolation.js';

/** One message as it sits on the topic. */
export interface TopicMessage {
  partition: number;
  offset: number;
  key: string;
  value: string;
  headers: Record<string, string>;
}

/**
 * Everything on `topic` right now: reads every partition from the beginning up to the high
 * watermark taken at the start (acknowledged messages are below it), in offset order per
 * partition. Bounded by `timeoutMs`.
 */
export async function readTopic(
  kafka: KafkaClient,
  admin: Admin,
  topic: string,
  timeoutMs = 30_000,
): Promise<TopicMessage[]> {
  const ends = new Map(
    (await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p.high)]),
  );
  const messages: TopicMessage[] = [];
  /** The next offset still to read, per partition. */
  const next = new Map([...ends.keys()].map((partition) => [partition, 0]));
  const reachedEnds = () =>
    [...ends].every(([partition, high]) => (next.get(partition) ?? 0) >= high);
  if (reachedEnds()) return [];

  const consumer = kafka.consumer({ groupId: `reader-${uniqueSuffix()}` });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`read ${messages.length} messages of ${topic} in ${timeoutMs} ms`));
      }, timeoutMs);
      void consumer.run({
        eachMessage: ({ partition, message }) => {
          const offset = Number(message.offset);
          if (offset < (ends.get(partition) ?? 0)) {
            const headers: Record<string, string> = {};
            for (const [name, value] of Object.entries(message.headers ?? {})) {
              headers[name] = Array.isArray(value) ? value.join(',') : (value?.toString() ?? '');
            }
            messages.push({
              partition,
              offset,
              key: message.key?.toString() ?? '',
              value: message.value?.toString() ?? '',
              headers,
            });
            next.set(partition, offset + 1);
          }
          if (reachedEnds()) {
            clearTimeout(timer);
            resolve();
          }
          return Promise.resolve();
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return messages.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}
