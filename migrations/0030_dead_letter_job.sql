-- Up Migration

-- Issue 36 (DESIGN 111): a dead letter stays replayable for as long as its job is dead. The
-- letter names its job (job_kind 'settlement' or 'refund', job_id the payment or refund id) so
-- the retention purge keeps every letter whose job is still dead, and `dlq:replay` can read the
-- letters of dead jobs from here when the dead-letter topic no longer has them. Letters of
-- records the consumer refused (poison) name no job and keep the old rule (deleted
-- DEAD_LETTER_RETENTION_SECONDS after they reached the topic).
-- Nullable columns without a default: no table rewrite, only a brief ACCESS EXCLUSIVE lock under
-- the migration's lock timeout. The table-level grants of grant_service_roles() (0026) cover the
-- new columns: the settlement login writes and reads them, as it does the rest of dead_letters.
ALTER TABLE dead_letters
  ADD COLUMN job_kind text,
  ADD COLUMN job_id uuid;

-- Letters stored before this migration: their dedup key is '<kind>:<job id>:<replay token>'
-- (dead-letter-job.ts); a poison letter's is 'record:<topic>:<partition>:<offset>'. The table
-- holds days of letters, not millions of rows.
UPDATE dead_letters
   SET job_kind = split_part(dedup_key, ':', 1),
       job_id = split_part(dedup_key, ':', 2)::uuid
 WHERE split_part(dedup_key, ':', 1) IN ('settlement', 'refund')
   AND split_part(dedup_key, ':', 2) ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

-- Down Migration

ALTER TABLE dead_letters DROP COLUMN job_id, DROP COLUMN job_kind;
