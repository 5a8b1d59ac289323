import { deadLetterMetrics } from '../jobs/dead-letters/dead-letter-metrics.js';
import type { DeadLetterOutbox } from '../jobs/dead-letters/dead-letter-job.js';
import { toPoisonDeadLetter, type DeadLetterReason } from '../jobs/dead-letters/dead-letter.js';
import { storeDeadLetter } from '../jobs/dead-letters/dead-letter-store.js';
import type { Pool } from '../platform/database/db.js';
import type { ConsumedRecord } from '../platform/kafka/kafka.js';

/**
 * A record the consumer cannot accept (poison, unknown payment): stored as it was consumed, once
 * per record (a redelivered batch stores nothing new), and sent by the publisher. Its event id is
 * kept whenever the envelope's could be read, so `dlq:replay` can put it back once settlement
 * understands it.
 */
export async function deadLetterPoison(
  deps: { pool: Pool; deadLetters: DeadLetterOutbox },
  record: ConsumedRecord,
  reason: DeadLetterReason,
): Promise<void> {
  const stored = await storeDeadLetter(deps.pool, {
    dedupKey: `record:${record.topic}:${String(record.partition)}:${record.offset}`,
    eventId: reason.eventId,
    topic: deps.deadLetters.topic,
    record: toPoisonDeadLetter(record, reason),
  });
  deps.deadLetters.wake();
  if (stored) deadLetterMetrics.sent.inc({ error_class: reason.errorClass });
}
