import type { ClaimedEvent } from '../../src/outbox/outbox-repository.js';
import { sql, type Queryable } from '../../src/platform/db.js';

interface OutboxRow {
  id: string;
  event_id: string;
  event_type: string;
  aggregate_id: string;
  topic: string;
  data: unknown;
  created_at: Date;
  attempts: number;
}

/**
 * Every outbox row, oldest first, in the shape the relay claims it (no lease taken): what
 * bench:relay sends through a bare producer, and what tests expect on Kafka.
 */
export async function readAllEvents(db: Queryable): Promise<ClaimedEvent[]> {
  const { rows } = await db.query<OutboxRow>(
    sql`
      SELECT id, event_id, event_type, aggregate_id, topic, data, created_at, attempts
        FROM outbox
       ORDER BY id`,
  );
  return rows.map((row) => ({
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    aggregateId: row.aggregate_id,
    topic: row.topic,
    data: row.data,
    createdAt: row.created_at,
    attempts: row.attempts,
  }));
}
