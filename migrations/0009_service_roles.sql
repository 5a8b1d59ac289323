-- Up Migration

-- Least privilege (issue #11, DESIGN "Database roles"). The login that runs migrations owns every
-- table; each process kind logs in as its own role holding only what its statements need. The
-- roles are cluster-wide and created by provisioning (scripts/stack.sh, the compose init script,
-- or an operator), not here: creating roles needs CREATEROLE, which the owner does not get.
-- Grants go to the roles that exist; a role created later gets them with
-- `CALL grant_service_roles();` run as the owner.
--
-- Every statement of src/ was read to derive these (grep FROM/INTO/UPDATE per process):
--   api:        merchants (auth lookup), payments + idempotency_keys + outbox (the one
--               create statement; RETURNING reads outbox.aggregate_id), payments reads,
--               idempotency_keys DELETE (expired key on the request path and the reaper).
--   relay:      outbox only (claim, mark, park, retention DELETE, metrics).
--   settlement: processed_events, settlement_jobs, the acquirer simulator's tables, payments
--               (reads; UPDATE of the status columns only) and outbox INSERT (result events).
-- A new table or statement needs its grant here (a new migration re-creating the procedure).
CREATE PROCEDURE grant_service_roles() LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_api') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO payments_api', current_schema());
    GRANT SELECT ON merchants TO payments_api;
    GRANT SELECT, INSERT ON payments TO payments_api;
    GRANT SELECT, INSERT, DELETE ON idempotency_keys TO payments_api;
    -- The reaper locks the rows it deletes (FOR UPDATE SKIP LOCKED), which Postgres allows only
    -- with UPDATE on some column; no API statement updates, this is for the lock.
    GRANT UPDATE (expires_at) ON idempotency_keys TO payments_api;
    GRANT INSERT ON outbox TO payments_api;
    GRANT SELECT (aggregate_id) ON outbox TO payments_api;
    -- The keys table of issue #11 item 2, when its migration is present.
    IF to_regclass('api_keys') IS NOT NULL THEN
      GRANT SELECT ON api_keys TO payments_api;
    END IF;
  ELSE
    RAISE NOTICE 'role payments_api does not exist: no grants (create it, then CALL grant_service_roles())';
  END IF;

  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_relay') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO payments_relay', current_schema());
    GRANT SELECT, UPDATE, DELETE ON outbox TO payments_relay;
  ELSE
    RAISE NOTICE 'role payments_relay does not exist: no grants (create it, then CALL grant_service_roles())';
  END IF;

  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_settlement') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO payments_settlement', current_schema());
    GRANT SELECT, INSERT ON processed_events TO payments_settlement;
    GRANT SELECT, INSERT, UPDATE, DELETE ON settlement_jobs TO payments_settlement;
    GRANT SELECT, INSERT ON acquirer_simulator_calls, acquirer_simulator_charges
      TO payments_settlement;
    GRANT SELECT, UPDATE (status, failure_code, updated_at) ON payments TO payments_settlement;
    GRANT INSERT ON outbox TO payments_settlement;
  ELSE
    RAISE NOTICE 'role payments_settlement does not exist: no grants (create it, then CALL grant_service_roles())';
  END IF;
END;
$$;

CALL grant_service_roles();

-- Down Migration

DO $$
DECLARE
  role_name text;
BEGIN
  FOREACH role_name IN ARRAY ARRAY['payments_api', 'payments_relay', 'payments_settlement'] LOOP
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = role_name) THEN
      EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM %I', current_schema(), role_name);
      EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM %I', current_schema(), role_name);
    END IF;
  END LOOP;
END;
$$;
DROP PROCEDURE grant_service_roles();
