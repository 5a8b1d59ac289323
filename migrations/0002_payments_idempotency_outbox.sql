-- Up Migration

-- Amounts are integer minor units (bigint), never floating point.
CREATE TABLE payments (
  id            uuid PRIMARY KEY,                      -- UUIDv7: time-ordered
  merchant_id   uuid NOT NULL REFERENCES merchants (id),
  amount        bigint NOT NULL CHECK (amount BETWEEN 1 AND 99999999),
  currency      char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  source        text NOT NULL,
  description   text CHECK (length(description) <= 500),
  metadata      jsonb NOT NULL DEFAULT '{}',
  status        text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'processing', 'settled', 'failed')),
  failure_code  text,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  CHECK ((status = 'failed') = (failure_code IS NOT NULL))
);

-- GET /payments: newest first per merchant, keyset on (created_at, id).
CREATE INDEX payments_merchant_created ON payments (merchant_id, created_at DESC, id DESC);

-- I1: the guard. At most one live record per (merchant, key); Redis and Redlock only make the
-- common path fast. The record stores the exact response so a replay is byte-identical.
CREATE TABLE idempotency_keys (
  merchant_id      uuid NOT NULL REFERENCES merchants (id),
  idempotency_key  text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
  fingerprint      bytea NOT NULL CHECK (length(fingerprint) = 32),
  payment_id       uuid NOT NULL REFERENCES payments (id),
  response_status  smallint NOT NULL,
  response_body    text NOT NULL,
  created_at       timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL,
  PRIMARY KEY (merchant_id, idempotency_key)
);

-- The reaper deletes expired records in batches, oldest first.
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- The transactional outbox (I2: written in the same transaction as the payment change).
-- event_id is the UUIDv5 minted here and never changed (I3): every copy published carries it.
CREATE TABLE outbox (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id      uuid NOT NULL UNIQUE,
  event_type    text NOT NULL,
  aggregate_id  uuid NOT NULL,                          -- payment id: Kafka key and ordering unit
  topic         text NOT NULL,
  data          jsonb NOT NULL,                         -- CloudEvents `data`: the payment snapshot
  created_at    timestamptz NOT NULL,
  published_at  timestamptz,
  attempts      integer NOT NULL DEFAULT 0,
  last_error    text,
  locked_until  timestamptz,                            -- relay claim lease
  parked_at     timestamptz                             -- gave up after N attempts; needs a human
);

-- Pending rows per payment in creation order: what the relay claims.
CREATE INDEX outbox_pending ON outbox (aggregate_id, id)
  WHERE published_at IS NULL AND parked_at IS NULL;
-- Retention deletes published rows by age.
CREATE INDEX outbox_published_at ON outbox (published_at) WHERE published_at IS NOT NULL;

-- Down Migration

DROP TABLE outbox;
DROP TABLE idempotency_keys;
DROP TABLE payments;
