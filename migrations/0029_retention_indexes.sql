-- Up Migration
-- migrate: no-transaction

-- Issue 36 item 7 (DESIGN 110). refund_jobs is claimed the way settlement_jobs is (the job
-- engine's one claim: due and not leased, oldest claimable first, CLAIMABLE_AT in
-- src/jobs/job-table.ts), but kept 0012's index on next_attempt_at alone: every claim walked
-- past the refunds in flight and read each from the heap to see its lease. The same expression
-- index as settlement's (0018) puts leased jobs at the back.
--
-- processed_events and the acquirer's books are deleted by age, a batch at a time: each needs
-- an index on its time column so a batch reads only what it deletes, and a round with nothing to
-- delete reads one index entry (src/jobs/retention-reaper.ts).
--
-- CONCURRENTLY: these tables take writes while the migration runs; a failed build leaves an
-- INVALID index, which IF NOT EXISTS would keep: drop it by hand and migrate again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS refund_jobs_claimable
  ON refund_jobs ((greatest(next_attempt_at, coalesce(locked_until, next_attempt_at))))
  WHERE state = 'pending';
DROP INDEX CONCURRENTLY IF EXISTS refund_jobs_due;
CREATE INDEX CONCURRENTLY IF NOT EXISTS processed_events_processed_at
  ON processed_events (processed_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS acquirer_simulator_charges_created_at
  ON acquirer_simulator_charges (created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS acquirer_simulator_refunds_created_at
  ON acquirer_simulator_refunds (created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS acquirer_simulator_calls_created_at
  ON acquirer_simulator_calls (created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS acquirer_simulator_refund_calls_created_at
  ON acquirer_simulator_refund_calls (created_at);

-- Down Migration

CREATE INDEX CONCURRENTLY IF NOT EXISTS refund_jobs_due ON refund_jobs (next_attempt_at)
  WHERE state = 'pending';
DROP INDEX CONCURRENTLY IF EXISTS refund_jobs_claimable;
DROP INDEX CONCURRENTLY IF EXISTS processed_events_processed_at;
DROP INDEX CONCURRENTLY IF EXISTS acquirer_simulator_charges_created_at;
DROP INDEX CONCURRENTLY IF EXISTS acquirer_simulator_refunds_created_at;
DROP INDEX CONCURRENTLY IF EXISTS acquirer_simulator_calls_created_at;
DROP INDEX CONCURRENTLY IF EXISTS acquirer_simulator_refund_calls_created_at;
