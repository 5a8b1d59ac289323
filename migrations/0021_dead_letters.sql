-- Up Migration

-- Dead letters are kept in the database until the dead-letter topic has them (DESIGN record 30).
-- A dead letter is written in the transaction that marks its job dead (or, for a poison record,
-- before the consumer moves past it) and published afterwards by the settlement role with a
-- bounded producer; a broker that does not answer leaves the row unpublished and it is sent
-- again later. One row per dead job and revival (dedup_key), so a job is never dead-lettered
-- twice as two different letters. The record is kept as it was consumed: raw value bytes (a
-- poison record need not be text) and its headers as JSON text (a header or an error message may
-- hold a NUL, which jsonb refuses).
CREATE TABLE dead_letters (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  dedup_key        text NOT NULL UNIQUE,
  event_id         uuid,
  topic            text NOT NULL,
  message_key      text NOT NULL,
  message_value    bytea NOT NULL,
  headers          text NOT NULL,                       -- JSON object (text: jsonb refuses NUL)
  created_at       timestamptz NOT NULL DEFAULT now(),
  published_at     timestamptz,
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  locked_until     timestamptz,
  last_error       text
);

-- What the publisher claims: unpublished letters, oldest first.
CREATE INDEX dead_letters_unpublished ON dead_letters (id) WHERE published_at IS NULL;

-- grant_service_roles() of 0019 plus the settlement role's rights on dead_letters.
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

CALL grant_service_roles();

-- Down Migration

DROP TABLE dead_letters;

-- 0019's procedure again (it would grant on the dropped table).
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

