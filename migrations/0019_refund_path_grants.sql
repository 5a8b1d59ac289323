-- Up Migration

-- The grants of the per-process logins in one place again (issue #24). 0009 defined
-- grant_service_roles() for roles created after the migrations ran, but 0014 granted the refund
-- tables in a DO block of its own, so `CALL grant_service_roles()` never gave a later role its
-- refund grants. And 0014 missed one column: creating a refund stamps the payment's
-- `updated_at` beside `amount_refunded` (src/refunds/insert-refund-once.ts), so every refund
-- answered 500 (permission denied for table payments) when the API ran as payments_api.
--
-- The procedure below is the complete list, derived from the statements each process runs
-- (grep FROM/INTO/UPDATE/JOIN/RETURNING per role); integration tests run every role as its own
-- login, so a statement that needs more fails a test. Column grants where a role updates a few
-- columns of a table it does not own. Still nothing that can change a payment's amount, delete
-- a payment or publish as another role.
CREATE OR REPLACE PROCEDURE grant_service_roles() LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_api') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO payments_api', current_schema());
    -- Authentication joins keys, merchants and their tier.
    GRANT SELECT ON merchants, api_keys, rate_limit_tiers TO payments_api;
    -- The create statement (payment + key record + outbox row); reads and lists.
    GRANT SELECT, INSERT ON payments TO payments_api;
    -- Creating a refund locks its payment (FOR UPDATE needs an UPDATE grant), raises
    -- amount_refunded and stamps updated_at in the same statement; never the status or amount.
    GRANT UPDATE (amount_refunded, updated_at) ON payments TO payments_api;
    GRANT SELECT, INSERT, DELETE ON idempotency_keys TO payments_api;
    -- The reaper locks the rows it deletes (FOR UPDATE SKIP LOCKED), which needs UPDATE on some
    -- column; no API statement updates a key.
    GRANT UPDATE (expires_at) ON idempotency_keys TO payments_api;
    -- Outbox rows are written, never read back beyond the key the statement returns.
    GRANT INSERT ON outbox TO payments_api;
    GRANT SELECT (aggregate_id) ON outbox TO payments_api;
    GRANT SELECT, INSERT ON refunds, refund_jobs TO payments_api;
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
    GRANT SELECT, UPDATE, DELETE ON refund_jobs TO payments_settlement;
    GRANT SELECT, UPDATE ON refunds TO payments_settlement;
    -- A payment's status and failure code (settlement), and releasing a failed refund's amount.
    GRANT SELECT, UPDATE (status, failure_code, updated_at, amount_refunded) ON payments
      TO payments_settlement;
    -- Result events of payments and refunds.
    GRANT INSERT ON outbox TO payments_settlement;
    -- The acquirer simulator's books (its own tables; a real acquirer keeps its own).
    GRANT SELECT, INSERT ON acquirer_simulator_calls, acquirer_simulator_charges,
      acquirer_simulator_refunds, acquirer_simulator_refund_calls TO payments_settlement;
  ELSE
    RAISE NOTICE 'role payments_settlement does not exist: no grants (create it, then CALL grant_service_roles())';
  END IF;
END;
$$;

CALL grant_service_roles();

-- Down Migration

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_api') THEN
    REVOKE UPDATE (updated_at) ON payments FROM payments_api;
  END IF;
END;
$$;
