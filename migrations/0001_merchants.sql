-- Up Migration

-- Merchants are the API clients. Their API keys are stored only as SHA-256 hashes: the key is
-- a 256-bit random secret, so a fast hash is enough (no password stretching needed) and lets
-- authentication be one indexed lookup.
CREATE TABLE merchants (
  id            uuid PRIMARY KEY,
  name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  api_key_hash  bytea NOT NULL UNIQUE CHECK (length(api_key_hash) = 32),
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- Down Migration

DROP TABLE merchants;
