-- Up Migration
-- migrate: no-transaction

-- Issue 38 item 6 (DESIGN 118). The delivery claim caps each merchant's deliveries in flight
-- across every webhooks process (WEBHOOK_MERCHANT_CONCURRENCY), counting the jobs leased now in
-- the table on every claim. Leased jobs are few (at most the fleet's slots, plus leases lost
-- in a crash until they are claimed again): a partial index on them keeps that count from
-- reading a backlog of thousands of pending deliveries.
--
-- CONCURRENTLY: the table takes writes while the migration runs; a failed build leaves an
-- INVALID index, which IF NOT EXISTS would keep: drop it by hand and migrate again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_delivery_jobs_leased
  ON webhook_delivery_jobs (endpoint_id, locked_until) WHERE lease_owner IS NOT NULL;

-- Down Migration

DROP INDEX CONCURRENTLY IF EXISTS webhook_delivery_jobs_leased;
