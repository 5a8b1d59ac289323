-- Up Migration

-- Issue 36 (DESIGN 106): an acquirer call whose outcome is unknown (a timeout after sending, a
-- connection lost before the answer) is followed by a status inquiry by its idempotency key,
-- never by a new call. needs_inquiry keeps that next step durable across crashes and claims;
-- last_inquiry is the acquirer's latest answer to one ('not_found', 'approved', 'declined'),
-- carried by the dead letter; not_sent counts the calls that never reached the acquirer
-- (refused, breaker open, 503 before processing), which are not attempts. The job engine keeps
-- the same columns on every job table, so webhook jobs get them too (unused there).
-- Constant defaults: no table rewrite, only a brief ACCESS EXCLUSIVE lock under the migration's
-- lock timeout. The table-level grants of grant_service_roles() cover the new columns.
ALTER TABLE settlement_jobs
  ADD COLUMN needs_inquiry boolean NOT NULL DEFAULT false,
  ADD COLUMN last_inquiry text,
  ADD COLUMN not_sent integer NOT NULL DEFAULT 0;
ALTER TABLE refund_jobs
  ADD COLUMN needs_inquiry boolean NOT NULL DEFAULT false,
  ADD COLUMN last_inquiry text,
  ADD COLUMN not_sent integer NOT NULL DEFAULT 0;
ALTER TABLE webhook_delivery_jobs
  ADD COLUMN needs_inquiry boolean NOT NULL DEFAULT false,
  ADD COLUMN last_inquiry text,
  ADD COLUMN not_sent integer NOT NULL DEFAULT 0;

-- Down Migration

ALTER TABLE webhook_delivery_jobs DROP COLUMN not_sent, DROP COLUMN last_inquiry,
  DROP COLUMN needs_inquiry;
ALTER TABLE refund_jobs DROP COLUMN not_sent, DROP COLUMN last_inquiry,
  DROP COLUMN needs_inquiry;
ALTER TABLE settlement_jobs DROP COLUMN not_sent, DROP COLUMN last_inquiry,
  DROP COLUMN needs_inquiry;
