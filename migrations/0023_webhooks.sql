-- Up Migration

-- Webhooks (issue 27, DESIGN "Webhooks"). A merchant registers endpoints; every result event of
-- its payments and refunds (payment.settled, payment.failed, refund.succeeded, refund.failed)
-- is stored once in webhook_events and becomes one delivery per subscribed endpoint, inserted in
-- the transaction that writes the event to the outbox (no event without its deliveries, no
-- delivery without its event). Deliveries run on the job engine as a third kind
-- (webhook_delivery_jobs, the job columns of settlement_jobs and refund_jobs). All tables are
-- new, so nothing here locks a live table beyond the foreign keys' brief SHARE ROW EXCLUSIVE on
-- merchants.

CREATE TABLE webhook_endpoints (
  id               uuid PRIMARY KEY,                     -- UUIDv7
  merchant_id      uuid NOT NULL REFERENCES merchants (id),
  url              text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  description      text CHECK (length(description) <= 500),
  -- Event types, or '*' for every webhook event type.
  enabled_events   text[] NOT NULL CHECK (cardinality(enabled_events) >= 1),
  -- Null while enabled. A disabled endpoint gets no new deliveries; its pending ones fail.
  disabled_at      timestamptz,
  -- 'merchant' | 'gone' (answered 410) | 'failing' (no 2xx for the whole retry window).
  disabled_reason  text,
  -- The first failed attempt since the last 2xx; null while the endpoint succeeds.
  failing_since    timestamptz,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  CHECK ((disabled_at IS NULL) = (disabled_reason IS NULL))
);
-- GET /webhook_endpoints (keyset, oldest first) and the fan-out's lookup by merchant.
CREATE INDEX webhook_endpoints_merchant ON webhook_endpoints (merchant_id, created_at, id);

-- Signing secrets (whsec_...): the current one has no expiry; a rotation gives the old one an
-- expiry (the grace period) during which both sign.
CREATE TABLE webhook_endpoint_secrets (
  endpoint_id  uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  secret       text NOT NULL,
  created_at   timestamptz NOT NULL,
  expires_at   timestamptz,
  PRIMARY KEY (endpoint_id, created_at)
);

-- A result event as delivered: its CloudEvent (the same envelope the relay publishes) as the
-- exact body bytes signed. Kept for merchants with at least one endpoint, for the retries and
-- replays, and deleted after WEBHOOK_EVENT_RETENTION_SECONDS with its deliveries.
CREATE TABLE webhook_events (
  event_id     uuid PRIMARY KEY,                         -- the event's UUIDv5 = webhook-id
  merchant_id  uuid NOT NULL,
  payment_id   uuid NOT NULL,                            -- the ordering unit (refunds' too)
  event_type   text NOT NULL,
  body         text NOT NULL,
  created_at   timestamptz NOT NULL
);
-- Replay since a time; retention.
CREATE INDEX webhook_events_merchant_created ON webhook_events (merchant_id, created_at, event_id);
CREATE INDEX webhook_events_created ON webhook_events (created_at);

-- One event to one endpoint. `seq` orders a payment's deliveries to an endpoint: a later one is
-- not attempted while an earlier one is pending.
CREATE TABLE webhook_deliveries (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  seq               bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  endpoint_id       uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id          uuid NOT NULL REFERENCES webhook_events (event_id) ON DELETE CASCADE,
  payment_id        uuid NOT NULL,
  status            text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts          integer NOT NULL DEFAULT 0,
  last_attempt_at   timestamptz,
  last_status_code  integer,
  last_latency_ms   integer,
  last_error        text,
  delivered_at      timestamptz,
  failed_reason     text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (endpoint_id, event_id)
);
-- GET /webhook_endpoints/{id}/deliveries: newest first, keyset on (created_at, id).
CREATE INDEX webhook_deliveries_endpoint_created
  ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- Every attempt of a delivery, as the merchant sees it.
CREATE TABLE webhook_delivery_attempts (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id  uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  started_at   timestamptz NOT NULL,
  status_code  integer,
  latency_ms   integer NOT NULL,
  error        text
);
CREATE INDEX webhook_delivery_attempts_delivery ON webhook_delivery_attempts (delivery_id, id);

-- The job engine's third kind: one job per pending delivery, removed when it is delivered or
-- given up. endpoint_id, payment_id and seq are the delivery's, copied so the claim's order and
-- fairness predicates read this table alone.
CREATE TABLE webhook_delivery_jobs (
  delivery_id       uuid PRIMARY KEY REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  endpoint_id       uuid NOT NULL,
  payment_id        uuid NOT NULL,
  seq               bigint NOT NULL,
  state             text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'dead')),
  attempts          integer NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz NOT NULL DEFAULT now(),
  locked_until      timestamptz,
  lease_owner       uuid,
  first_failure_at  timestamptz,
  last_failure_at   timestamptz,
  last_error_class  text,
  last_error        text,
  replay_token      text,
  revived_at        timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now()
);
-- The engine's claim order (job-table.ts CLAIMABLE_AT), as settlement_jobs_claimable (0018).
CREATE INDEX webhook_delivery_jobs_claimable
  ON webhook_delivery_jobs ((greatest(next_attempt_at, coalesce(locked_until, next_attempt_at))))
  WHERE state = 'pending';
-- "Is an earlier delivery of this payment to this endpoint still pending?"
CREATE INDEX webhook_delivery_jobs_order
  ON webhook_delivery_jobs (endpoint_id, payment_id, seq) WHERE state = 'pending';

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
    -- The acquirer simulator's books (its own tables; a real acquirer keeps its own).
    GRANT SELECT, INSERT ON acquirer_simulator_calls, acquirer_simulator_charges,
      acquirer_simulator_refunds, acquirer_simulator_refund_calls TO payments_settlement;
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
END;
$$;

CALL grant_service_roles();

-- Down Migration

DROP TABLE webhook_delivery_jobs;
DROP TABLE webhook_delivery_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_events;
DROP TABLE webhook_endpoint_secrets;
DROP TABLE webhook_endpoints;

-- 0022's procedure again (dropping the tables took their grants).
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
