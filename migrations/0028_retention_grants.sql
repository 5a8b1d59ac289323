-- Up Migration

-- Issue 36 item 7 (DESIGN 110): tables that do not grow forever. The settlement role deletes
-- processed_events rows past PROCESSED_EVENT_RETENTION_SECONDS and dead settlement/refund jobs
-- whose payment or refund is final past DEAD_JOB_RETENTION_SECONDS (it has DELETE on its job
-- tables already); the acquirer role deletes its books past ACQUIRER_BOOKS_RETENTION_SECONDS.
-- grant_service_roles() of 0026 with DELETE on processed_events for payments_settlement and on
-- the books for payments_acquirer. Procedures and grants only: no lock on a live table beyond
-- the catalog. The indexes the deletes use come in 0029 (CONCURRENTLY, outside a transaction).
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
    -- Webhook endpoints, their secrets, and what a merchant sees and does with deliveries
    -- (list, retry, replay): 0023.
    GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_endpoints TO payments_api;
    GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_endpoint_secrets TO payments_api;
    GRANT SELECT ON webhook_events, webhook_delivery_attempts TO payments_api;
    GRANT SELECT, INSERT, UPDATE ON webhook_deliveries, webhook_delivery_jobs TO payments_api;
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
    -- Event ids seen (dedup, I4), deleted after PROCESSED_EVENT_RETENTION_SECONDS (0028).
    GRANT SELECT, INSERT, DELETE ON processed_events TO payments_settlement;
    GRANT SELECT, INSERT, UPDATE, DELETE ON settlement_jobs TO payments_settlement;
    GRANT SELECT, UPDATE, DELETE ON refund_jobs TO payments_settlement;
    GRANT SELECT, UPDATE ON refunds TO payments_settlement;
    -- A payment's status and failure code (settlement), and releasing a failed refund's amount.
    GRANT SELECT, UPDATE (status, failure_code, updated_at, amount_refunded) ON payments
      TO payments_settlement;
    -- Result events of payments and refunds.
    GRANT INSERT ON outbox TO payments_settlement;
    -- Result events fan out to the merchant's webhook endpoints in the transaction that writes
    -- them to the outbox (0023): the endpoints read, the event and its deliveries inserted.
    GRANT SELECT (id, merchant_id, enabled_events, disabled_at) ON webhook_endpoints
      TO payments_settlement;
    GRANT SELECT, INSERT ON webhook_events, webhook_deliveries, webhook_delivery_jobs
      TO payments_settlement;
    -- Dead letters waiting for (or published to) the dead-letter topic (0021), and deleted
    -- after DEAD_LETTER_RETENTION_SECONDS once published (0022).
    GRANT SELECT, INSERT, UPDATE, DELETE ON dead_letters TO payments_settlement;
    -- The acquirer simulator's books, while settlement may run the simulator in-process: not
    -- once acquirer_books_own_login() recorded that the acquirer role keeps them (0026).
    IF NOT EXISTS (SELECT FROM acquirer_books_login) THEN
      GRANT SELECT, INSERT ON acquirer_simulator_calls, acquirer_simulator_charges,
        acquirer_simulator_refunds, acquirer_simulator_refund_calls TO payments_settlement;
    END IF;
  ELSE
    RAISE NOTICE 'role payments_settlement does not exist: no grants (create it, then CALL grant_service_roles())';
  END IF;

  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_webhooks') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO payments_webhooks', current_schema());
    -- The delivery jobs (claim, retry, complete, give up), the deliveries they move and the
    -- attempts they record (0023).
    GRANT SELECT, UPDATE, DELETE ON webhook_delivery_jobs TO payments_webhooks;
    GRANT SELECT, UPDATE ON webhook_deliveries TO payments_webhooks;
    GRANT SELECT, INSERT ON webhook_delivery_attempts TO payments_webhooks;
    -- The event sent (and deleted after WEBHOOK_EVENT_RETENTION_SECONDS, with its deliveries).
    GRANT SELECT, DELETE ON webhook_events TO payments_webhooks;
    -- Where to send and how to sign; an endpoint that answers 410 or fails for the whole retry
    -- window is disabled by the worker.
    GRANT SELECT ON webhook_endpoints, webhook_endpoint_secrets TO payments_webhooks;
    GRANT UPDATE (disabled_at, disabled_reason, failing_since, updated_at) ON webhook_endpoints
      TO payments_webhooks;
  ELSE
    RAISE NOTICE 'role payments_webhooks does not exist: no grants (create it, then CALL grant_service_roles())';
  END IF;

  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_acquirer') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO payments_acquirer', current_schema());
    -- The acquirer role (issue 29): the simulator's books and nothing else.
    -- Deleted after ACQUIRER_BOOKS_RETENTION_SECONDS by the acquirer role itself (0028).
    GRANT SELECT, INSERT, DELETE ON acquirer_simulator_calls, acquirer_simulator_charges,
      acquirer_simulator_refunds, acquirer_simulator_refund_calls TO payments_acquirer;
  ELSE
    RAISE NOTICE 'role payments_acquirer does not exist: no grants (create it, then CALL grant_service_roles())';
  END IF;
END;
$$;

CALL grant_service_roles();

-- Down Migration

-- 0026's procedure again; the DELETE grants go with a REVOKE.
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
    -- Webhook endpoints, their secrets, and what a merchant sees and does with deliveries
    -- (list, retry, replay): 0023.
    GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_endpoints TO payments_api;
    GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_endpoint_secrets TO payments_api;
    GRANT SELECT ON webhook_events, webhook_delivery_attempts TO payments_api;
    GRANT SELECT, INSERT, UPDATE ON webhook_deliveries, webhook_delivery_jobs TO payments_api;
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
    -- Result events fan out to the merchant's webhook endpoints in the transaction that writes
    -- them to the outbox (0023): the endpoints read, the event and its deliveries inserted.
    GRANT SELECT (id, merchant_id, enabled_events, disabled_at) ON webhook_endpoints
      TO payments_settlement;
    GRANT SELECT, INSERT ON webhook_events, webhook_deliveries, webhook_delivery_jobs
      TO payments_settlement;
    -- Dead letters waiting for (or published to) the dead-letter topic (0021), and deleted
    -- after DEAD_LETTER_RETENTION_SECONDS once published (0022).
    GRANT SELECT, INSERT, UPDATE, DELETE ON dead_letters TO payments_settlement;
    -- The acquirer simulator's books, while settlement may run the simulator in-process: not
    -- once acquirer_books_own_login() recorded that the acquirer role keeps them (0026).
    IF NOT EXISTS (SELECT FROM acquirer_books_login) THEN
      GRANT SELECT, INSERT ON acquirer_simulator_calls, acquirer_simulator_charges,
        acquirer_simulator_refunds, acquirer_simulator_refund_calls TO payments_settlement;
    END IF;
  ELSE
    RAISE NOTICE 'role payments_settlement does not exist: no grants (create it, then CALL grant_service_roles())';
  END IF;

  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_webhooks') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO payments_webhooks', current_schema());
    -- The delivery jobs (claim, retry, complete, give up), the deliveries they move and the
    -- attempts they record (0023).
    GRANT SELECT, UPDATE, DELETE ON webhook_delivery_jobs TO payments_webhooks;
    GRANT SELECT, UPDATE ON webhook_deliveries TO payments_webhooks;
    GRANT SELECT, INSERT ON webhook_delivery_attempts TO payments_webhooks;
    -- The event sent (and deleted after WEBHOOK_EVENT_RETENTION_SECONDS, with its deliveries).
    GRANT SELECT, DELETE ON webhook_events TO payments_webhooks;
    -- Where to send and how to sign; an endpoint that answers 410 or fails for the whole retry
    -- window is disabled by the worker.
    GRANT SELECT ON webhook_endpoints, webhook_endpoint_secrets TO payments_webhooks;
    GRANT UPDATE (disabled_at, disabled_reason, failing_since, updated_at) ON webhook_endpoints
      TO payments_webhooks;
  ELSE
    RAISE NOTICE 'role payments_webhooks does not exist: no grants (create it, then CALL grant_service_roles())';
  END IF;

  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_acquirer') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO payments_acquirer', current_schema());
    -- The acquirer role (issue 29): the simulator's books and nothing else.
    GRANT SELECT, INSERT ON acquirer_simulator_calls, acquirer_simulator_charges,
      acquirer_simulator_refunds, acquirer_simulator_refund_calls TO payments_acquirer;
  ELSE
    RAISE NOTICE 'role payments_acquirer does not exist: no grants (create it, then CALL grant_service_roles())';
  END IF;
END;
$$;

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_settlement') THEN
    REVOKE DELETE ON processed_events FROM payments_settlement;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_acquirer') THEN
    REVOKE DELETE ON acquirer_simulator_calls, acquirer_simulator_charges,
      acquirer_simulator_refunds, acquirer_simulator_refund_calls FROM payments_acquirer;
  END IF;
END;
$$;
