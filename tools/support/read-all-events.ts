import {
  toClaimedEvent,
  type ClaimedEvent,
  type ClaimedRow,
} from '../../src/outbox/outbox-repository.js';
import { sql, type Queryable } from '../../src/platform/database/db.js';

/**
 * Every outbox row, oldest first, in the shape the relay claims it (no lease taken): what
 * bench:relay sends through a bare producer, and what tests expect on Kafka.
 */
export async function readAllEvents(db: Queryable): Promise<ClaimedEvent[]> {
  const { rows } = await db.query<ClaimedRow>(
    sql`
      SELECT id, event_id, event_type, aggregate_id, topic, data, created_at, attempts,
             traceparent, tracestate
        FROM outbox
       ORDER BY id`,
  );
  return rows.map(toClaimedEvent);
}
