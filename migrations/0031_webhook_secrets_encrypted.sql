-- Up Migration

-- Issue 38 (DESIGN 113): webhook signing secrets are stored encrypted (AES-256-GCM under the
-- SECRETS_KEYS key ring, in the application: SQL has no access to the key). A sealed secret is
-- secret_ciphertext (nonce, ciphertext, tag) with secret_key_id, the ring's key that sealed it;
-- its clear column `secret` is then NULL. Rows written before this release, and by the previous
-- API while the roles are rolled, keep their clear `secret` until `npm run secrets:reencrypt`
-- seals and clears them, run once no process of the previous release is left (docs/operations.md,
-- "How to upgrade"): until then a previous webhooks process still signs with the clear column.
-- Nullable columns without a default and DROP NOT NULL change only the catalog (no scan, no
-- rewrite), under a brief ACCESS EXCLUSIVE lock bounded by the migration's lock timeout. The
-- table-level grants cover the new columns (the api login writes them, the webhooks login reads).
ALTER TABLE webhook_endpoint_secrets
  ADD COLUMN secret_ciphertext bytea,
  ADD COLUMN secret_key_id text,
  ALTER COLUMN secret DROP NOT NULL;

-- Every row holds its secret one way or the other, and a ciphertext names its key. NOT VALID:
-- checked for rows written from now on; every existing row has its clear secret.
ALTER TABLE webhook_endpoint_secrets
  ADD CONSTRAINT webhook_endpoint_secrets_stored
  CHECK ((secret_ciphertext IS NULL) = (secret_key_id IS NULL)
         AND (secret IS NOT NULL OR secret_ciphertext IS NOT NULL)) NOT VALID;

-- Down Migration

-- SQL cannot decrypt: sealed rows are removed (their endpoints need a rotation after the down
-- migration). Roll back the code, not this schema (docs/operations.md, "How to upgrade").
DELETE FROM webhook_endpoint_secrets WHERE secret IS NULL;
ALTER TABLE webhook_endpoint_secrets DROP CONSTRAINT webhook_endpoint_secrets_stored;
ALTER TABLE webhook_endpoint_secrets
  DROP COLUMN secret_key_id,
  DROP COLUMN secret_ciphertext,
  ALTER COLUMN secret SET NOT NULL;
