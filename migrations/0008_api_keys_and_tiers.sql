-- Up Migration

-- Rate-limit tiers (issue 11). A token bucket per merchant: `rate_per_second` sustained,
-- `burst` at once. The name is sent to clients in the RateLimit-Policy header as a quoted
-- string, so it is restricted to characters that need no escaping there.
CREATE TABLE rate_limit_tiers (
  name             text PRIMARY KEY CHECK (name ~ '^[a-z0-9_-]{1,40}$'),
  rate_per_second  integer NOT NULL CHECK (rate_per_second BETWEEN 1 AND 1000000),
  -- At least one second's worth: the bucket must hold what one second refills.
  burst            integer NOT NULL CHECK (burst BETWEEN rate_per_second AND 10000000),
  created_at       timestamptz NOT NULL DEFAULT now()
);

-- The figure the best-known payment API uses for live mode: 100/s sustained, bursts of 200.
INSERT INTO rate_limit_tiers (name, rate_per_second, burst) VALUES ('default', 100, 200);

ALTER TABLE merchants
  ADD COLUMN tier text NOT NULL DEFAULT 'default' REFERENCES rate_limit_tiers (name);

-- API keys in a table of their own: several live keys per merchant (rotation without downtime),
-- each revocable and optionally expiring. Only the SHA-256 of a key is stored (a 256-bit random
-- secret needs no slow hash); `prefix` and `last_four` let a merchant tell its keys apart.
CREATE TABLE api_keys (
  id           uuid PRIMARY KEY,
  merchant_id  uuid NOT NULL REFERENCES merchants (id),
  key_hash     bytea NOT NULL UNIQUE CHECK (length(key_hash) = 32),
  prefix       text NOT NULL CHECK (length(prefix) BETWEEN 1 AND 16),
  -- NULL for keys migrated from merchants.api_key_hash: only their hash was ever stored.
  last_four    text CHECK (length(last_four) = 4),
  label        text CHECK (length(label) BETWEEN 1 AND 200),
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz,
  revoked_at   timestamptz
);

CREATE INDEX api_keys_merchant_idx ON api_keys (merchant_id, created_at);

-- Existing keys keep working: each merchant's one key becomes its first row here.
INSERT INTO api_keys (id, merchant_id, key_hash, prefix, label, created_at)
SELECT gen_random_uuid(), id, api_key_hash, 'sk_', 'migrated', created_at FROM merchants;

-- One source of truth for keys: the column goes once its hashes are copied.
ALTER TABLE merchants DROP COLUMN api_key_hash;

-- Down Migration

ALTER TABLE merchants ADD COLUMN api_key_hash bytea UNIQUE CHECK (length(api_key_hash) = 32);
UPDATE merchants m SET api_key_hash = (
  SELECT k.key_hash FROM api_keys k
  WHERE k.merchant_id = m.id AND k.revoked_at IS NULL
  ORDER BY k.created_at LIMIT 1
);
DROP TABLE api_keys;
ALTER TABLE merchants DROP COLUMN tier;
DROP TABLE rate_limit_tiers;
