-- Up Migration

-- Issue 38 (DESIGN 115): restricted API keys. `scopes` lists what a key may do
-- (src/merchants/api-key-scopes.ts): NULL is a secret key ("sk_"), every scope, which every key
-- made before this migration is, so existing keys keep working unchanged; a restricted key
-- ("rk_", made by `merchant:key create --scopes/--read-only`) lists at least one scope.
-- A nullable column without a default: no table rewrite, only a brief ACCESS EXCLUSIVE lock
-- under the migration's lock timeout. The table-level SELECT of payments_api covers it.
ALTER TABLE api_keys ADD COLUMN scopes text[];

-- The names this version knows (a new one comes with a migration widening the list), at least
-- one, and a prefix that tells the truth: "sk_" exactly when the key holds every scope. NOT
-- VALID checks new rows only (the existing ones are all NULL and "sk_"); a later migration may
-- VALIDATE them under a lock that lets reads and writes go on.
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

ALTER TABLE api_keys
  ADD CONSTRAINT api_keys_prefix_matches_scopes
  CHECK ((scopes IS NULL) = (left(prefix, 3) = 'sk_')) NOT VALID;

-- Down Migration

ALTER TABLE api_keys DROP CONSTRAINT api_keys_prefix_matches_scopes;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_known;
ALTER TABLE api_keys DROP COLUMN scopes;
