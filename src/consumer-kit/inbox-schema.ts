import type { Pool } from 'pg';
import { inBoundedTransaction, timedQuery } from './timed-query.js';

/** The names of a consumer's two kit tables: `<prefix>` and `<prefix>_subjects`. */
export interface InboxTables {
  inbox: string;
  subjects: string;
}

export const DEFAULT_INBOX_PREFIX = 'consumer_inbox';

/** The table names for `prefix` (a plain lower-case SQL identifier, checked). */
export function inboxTables(prefix = DEFAULT_INBOX_PREFIX): InboxTables {
  if (!/^[a-z_][a-z0-9_]{0,40}$/.test(prefix)) {
    throw new Error(`inbox table prefix ${JSON.stringify(prefix)} is not a plain SQL identifier`);
  }
  return { inbox: prefix, subjects: `${prefix}_subjects` };
}

/**
 * The DDL of the kit's tables, idempotent (`CREATE ... IF NOT EXISTS`), for the consumer to run
 * on its own database (at start, or in its own migrations):
 * - `<prefix>`: one row per event id ever received. `applied` (the handler's write committed
 *   with it), `parked` (out of order; its body kept until its predecessor arrives or the gap
 *   is decided), `refused` (out of order, never applied) or `skipped` (parked, then skipped by
 *   the consumer's onGap; its body kept). The primary key is the deduplication. Tables of an
 *   older kit get the gap columns and the `skipped` status added (the same statements).
 * - `<prefix>_subjects`: per subject (payment id), the lifecycle stage reached and the last
 *   applied event, locked (FOR UPDATE) by each event's transaction.
 */
export function inboxSchemaSql(prefix = DEFAULT_INBOX_PREFIX): string {
  const { inbox, subjects } = inboxTables(prefix);
  return `
CREATE TABLE IF NOT EXISTS ${inbox} (
  event_id        text PRIMARY KEY,
  event_type      text NOT NULL,
  subject         text NOT NULL,
  status          text NOT NULL,
  order_problem   text,
  event           jsonb,
  topic           text,
  kafka_partition integer,
  kafka_offset    bigint,
  received_at     timestamptz NOT NULL DEFAULT now(),
  applied_at      timestamptz
);
ALTER TABLE ${inbox} ADD COLUMN IF NOT EXISTS gap_reported_at timestamptz;
ALTER TABLE ${inbox} ADD COLUMN IF NOT EXISTS gap_decision text;
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = '${inbox}'::regclass
                 AND conname = '${inbox}_status_check'
                 AND pg_get_constraintdef(oid) LIKE '%skipped%') THEN
    ALTER TABLE ${inbox} DROP CONSTRAINT IF EXISTS ${inbox}_status_check;
    ALTER TABLE ${inbox} ADD CONSTRAINT ${inbox}_status_check
      CHECK (status IN ('applied', 'parked', 'refused', 'skipped'));
  END IF;
END $$;
CREATE INDEX IF NOT EXISTS ${inbox}_parked ON ${inbox} (subject, received_at)
  WHERE status = 'parked';
CREATE INDEX IF NOT EXISTS ${inbox}_position ON ${inbox} (topic, kafka_partition, kafka_offset);
CREATE TABLE IF NOT EXISTS ${subjects} (
  subject         text PRIMARY KEY,
  state           jsonb NOT NULL DEFAULT '{}',
  last_event_id   text,
  last_event_type text,
  last_event_time timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT now()
);`;
}

/**
 * Runs inboxSchemaSql on `pool` in one transaction, every call bounded by `timeoutMs`; an
 * advisory lock keeps two instances starting at once from racing on the same CREATE.
 */
export async function ensureInboxSchema(
  pool: Pool,
  prefix = DEFAULT_INBOX_PREFIX,
  timeoutMs = 10_000,
): Promise<void> {
  await inBoundedTransaction(pool, timeoutMs, async (client) => {
    await timedQuery(client, timeoutMs, 'SELECT pg_advisory_xact_lock(hashtext($1))', [prefix]);
    await timedQuery(client, timeoutMs, inboxSchemaSql(prefix));
  });
}
