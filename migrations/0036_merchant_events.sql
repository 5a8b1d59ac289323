-- Up Migration

-- Issue 40 item 7 (DESIGN 129): GET /events lists a merchant's events of the last
-- EVENT_RETENTION_DAYS. The outbox cannot serve it: it has no merchant, and it is the relay's
-- queue, emptied OUTBOX_RETENTION_SECONDS after publishing. webhook_events holds only result
-- events, and only for merchants with an endpoint. So every event (each type, created ones too)
-- is written here by the outbox writer in the statement that writes its outbox row
-- (src/outbox/outbox-writer.ts): listed exactly when committed. The columns are the outbox
-- row's, so the CloudEvent is rebuilt byte for byte as the relay publishes it (toKafkaRecord).
-- A new table: nothing here locks a live one.
CREATE TABLE merchant_events (
  event_id     uuid PRIMARY KEY,                         -- the event's UUIDv5: GET /events/{id}
  merchant_id  uuid NOT NULL,
  event_type   text NOT NULL,
  subject      uuid NOT NULL,                            -- the payment id (a refund's too)
  data         jsonb NOT NULL,
  created_at   timestamptz NOT NULL,
  traceparent  text,
  tracestate   text
);

-- GET /events: newest first per merchant, keyset on (created_at, event_id); with `type`, the
-- second index, so a rare type is one range scan and not a walk over the merchant's others.
CREATE INDEX merchant_events_merchant_created
  ON merchant_events (merchant_id, created_at DESC, event_id DESC);
CREATE INDEX merchant_events_merchant_type_created
  ON merchant_events (merchant_id, event_type, created_at DESC, event_id DESC);
-- The retention reaper deletes by age, oldest first, a batch at a time.
CREATE INDEX merchant_events_created ON merchant_events (created_at);

-- Inserted once and deleted after 30 days, never updated: the default autovacuum suffices.

-- The new scope events:read (src/merchants/api-key-scopes.ts) among the names a restricted key
-- may hold; NOT VALID as in 0032 (existing rows hold only older names).
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_known;
ALTER TABLE api_keys
  ADD CONSTRAINT api_keys_scopes_known CHECK (
    scopes IS NULL OR (
      cardinality(scopes) >= 1
      AND scopes <@ ARRAY[
        'payments:read', 'payments:write',
        'refunds:read', 'refunds:write',
        'webhooks:read', 'webhooks:write',
        'events:read'
      ]::text[]
    )
  ) NOT VALID;

-- Down Migration

ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_known;
ALTER TABLE api_keys
  ADD CONSTRAINT api_keys_scopes_known CHECK (
    scopes IS NULL OR (
      cardinality(scopes) >= 1
      AND scopes <@ ARRAY[
        'payments:read', 'payments:write',
        'refunds:read', 'refunds:write',
        'webhooks:read', 'webhooks:write'
      ]::text[]
    )
  ) NOT VALID;
DROP TABLE merchant_events;
