import type { Queryable } from '../../src/platform/database/db.js';
import { readTopicToEnd, type Admin, type KafkaClient } from '../../src/platform/kafka/kafka.js';
import { transactionOverWithinMs } from '../../src/jobs/dead-letters/dead-letter-producer.js';
import { createDeadLetterLog } from './event-log.js';

/** The event ids of the dead letters the database says are on their topic. */
async function publishedLetterIds(db: Queryable, topic: string): Promise<Set<string>> {
  const { rows } = await db.query<{ event_id: string }>(
    `SELECT DISTINCT event_id FROM dead_letters
      WHERE topic = $1 AND published_at IS NOT NULL AND event_id IS NOT NULL`,
    [topic],
  );
  return new Set(rows.map((row) => row.event_id));
}

/**
 * The dead-letter topic read to its end. The end a read-committed reader is given is the last
 * stable offset: a transaction still open (a send in flight, or one a killed settlement process
 * left until the broker times it out) hides the letters committed after it. So when a letter the
 * database marked published is not found, the topic is read again once every transaction open
 * at the first read is over (transactionOverWithinMs after it began): letters still missing then
 * are missing.
 */
export async function readDeadLetters(
  db: Queryable,
  client: KafkaClient,
  admin: Admin,
  topic: string,
): Promise<ReturnType<typeof createDeadLetterLog>> {
  const published = await publishedLetterIds(db, topic);
  const firstRead = Date.now();
  const first = createDeadLetterLog();
  await readTopicToEnd(client, admin, topic, (record) => {
    first.add(record);
  });
  if ([...published].every((id) => first.byEventId.has(id))) return first;
  const wait = firstRead + transactionOverWithinMs() - Date.now();
  await new Promise((resolve) => setTimeout(resolve, Math.max(wait, 0)));
  const again = createDeadLetterLog();
  await readTopicToEnd(client, admin, topic, (record) => {
    again.add(record);
  });
  return again;
}
