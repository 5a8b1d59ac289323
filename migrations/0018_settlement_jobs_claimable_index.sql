-- Up Migration

-- The worker claims jobs that are due and not leased: next_attempt_at <= now() and an expired
-- or absent lease (locked_until). The old index (0006) ordered pending jobs by next_attempt_at
-- alone, so every claim walked past the jobs in flight (up to SETTLEMENT_CONCURRENCY of them,
-- due but leased, each read from the heap to see its lease) before it found a free one, and
-- the loop's "when is the next job due" read every pending job. At 500 payments/s those two
-- statements were a third of the settlement role's Postgres time (docs/benchmarks.md).
--
-- Indexing when a job becomes claimable, the later of the two times, puts leased jobs at the
-- back: a claim reads only what it takes, and the next due time is the index's first entry.
-- The price is that a claim changes an indexed value (no HOT update), one index entry per
-- claimed job.
CREATE INDEX settlement_jobs_claimable
  ON settlement_jobs ((greatest(next_attempt_at, coalesce(locked_until, next_attempt_at))))
  WHERE state = 'pending';
DROP INDEX settlement_jobs_due;

-- Down Migration

CREATE INDEX settlement_jobs_due ON settlement_jobs (next_attempt_at) WHERE state = 'pending';
DROP INDEX settlement_jobs_claimable;
