-- Up Migration

-- The settlement role deletes dead letters published longer ago than
-- DEAD_LETTER_RETENTION_SECONDS (the topic is the record; the row was the way there).
-- grant_service_roles() of 0021 with DELETE on dead_letters for payments_settlement.
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
    -- Dead letters waiting for (or published to) the dead-letter topic (0021), and deleted
    -- after DEAD_LETTER_RETENTION_SECONDS once published (0022).
    GRANT SELECT, INSERT, UPDATE, DELETE ON dead_letters TO payments_settlement;
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
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_settlement') THEN
    REVOKE DELETE ON dead_letters FROM payments_settlement;
  END IF;
END $$;

-- 0021's procedure again.
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
    -- Dead letters waiting for (or published to) the dead-letter topic (0021).
    GRANT SELECT, INSERT, UPDATE ON dead_letters TO payments_settlement;
    -- The acquirer simulator's books (its own tables; a real acquirer keeps its own).
    GRANT SELECT, INSERT ON acquirer_simulator_calls, acquirer_simulator_charges,
      acquirer_simulator_refunds, acquirer_simulator_refund_calls TO payments_settlement;
  ELSE
    RAISE NOTICE 'role payments_settlement does not exist: no grants (create it, then CALL grant_service_roles())';
  END IF;
END;
$$;
