-- Up Migration

-- A transaction that sends NOTIFY takes a cluster-wide lock at commit and holds it until its
-- commit record is flushed, so notifying transactions commit one at a time, one WAL flush each:
-- no group commit. The outbox trigger (0003) notified on every insert, which capped pgbench's
-- run of the API's insert at about 2,900/s here against 6,500/s without it, and cost the
-- pipeline 18% of Postgres's CPU at 500 payments/s (docs/benchmarks.md, DESIGN 24).
--
-- Now writers notify only while a relay has asked for it: an idle relay (one that has found
-- nothing to do for a while) sets `wanted_until`, and a busy relay, which looks again on its
-- own within milliseconds, lets it run out. One row; the trigger only reads it.
CREATE TABLE outbox_wakeups (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  wanted_until timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO outbox_wakeups DEFAULT VALUES;

CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT FROM outbox_wakeups WHERE wanted_until > now()) THEN
    PERFORM pg_notify('outbox', '');
  END IF;
  RETURN NULL;
END;
$$;

DO $$
BEGIN
  -- Every role that inserts outbox rows runs the trigger, which reads the row.
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_api') THEN
    GRANT SELECT ON outbox_wakeups TO payments_api;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_settlement') THEN
    GRANT SELECT ON outbox_wakeups TO payments_settlement;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_relay') THEN
    GRANT SELECT, UPDATE ON outbox_wakeups TO payments_relay;
  END IF;
END;
$$;

-- Down Migration

CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outbox', '');
  RETURN NULL;
END;
$$;
DROP TABLE outbox_wakeups;
