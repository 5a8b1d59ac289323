-- Up Migration

-- Who holds a job's lease (issue 25): a random token per claim, set by the claim and matched by
-- every later write on the job (complete, retry, record a failure, mark dead), as the outbox's
-- lease_owner does (0007). A worker that paused past its lease while another worker claimed the
-- job then changes nothing (0 rows): it cannot clear the live worker's lease, add to the job's
-- attempts or dead-letter a payment the other worker settled. No index covers the column.
-- payments_settlement's UPDATE grant on both tables (0019) covers it.
ALTER TABLE settlement_jobs ADD COLUMN lease_owner uuid;
ALTER TABLE refund_jobs ADD COLUMN lease_owner uuid;

-- Down Migration

ALTER TABLE refund_jobs DROP COLUMN lease_owner;
ALTER TABLE settlement_jobs DROP COLUMN lease_owner;
