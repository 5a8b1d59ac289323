-- Up Migration

-- The relay claims pending rows oldest first. Without this index an `ORDER BY id` scan would
-- walk through every published row still inside the retention window before reaching the first
-- pending one; with it the scan starts at the oldest pending row.
CREATE INDEX outbox_pending_order ON outbox (id)
  WHERE published_at IS NULL AND parked_at IS NULL;

-- Parked rows are few and need a human: the metrics count them without scanning the table.
CREATE INDEX outbox_parked ON outbox (id) WHERE parked_at IS NOT NULL;

-- Every row is inserted, updated twice (claim, mark) and deleted within the retention window:
-- vacuum it after 2% churn instead of the default 20%, so dead tuples do not pile up in the
-- indexes the relay scans.
ALTER TABLE outbox SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);

-- A payload-free wake-up for the relay's LISTEN connection. Statement level, and Postgres folds
-- identical notifications of one transaction into one, so a transaction sends one hint however
-- many rows it inserts. It is only a hint: the relay also polls, and it never trusts a payload.
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outbox', '');
  RETURN NULL;
END;
$$;

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
  FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- Down Migration

DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION outbox_notify();
ALTER TABLE outbox RESET (autovacuum_vacuum_scale_factor, autovacuum_analyze_scale_factor);
DROP INDEX outbox_parked;
DROP INDEX outbox_pending_order;
