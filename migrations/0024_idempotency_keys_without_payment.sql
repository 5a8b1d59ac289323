-- Up Migration

-- A key record of a creating POST that makes no payment (POST /webhook_endpoints and
-- POST /webhook_endpoints/{id}/replay, issue 27) points at no payment: payment_id becomes
-- nullable. Those records share the merchant's key space with payments and refunds (a key used
-- on another endpoint is 422, as between payments and refunds). Dropping NOT NULL only changes
-- the catalog (no scan, no rewrite); the ACCESS EXCLUSIVE lock it takes is held for that moment.
-- Running code is unaffected: every record it writes still has a payment.
ALTER TABLE idempotency_keys ALTER COLUMN payment_id DROP NOT NULL;

-- Down Migration

-- Records without a payment (webhook creates and replays) cannot stay under NOT NULL.
DELETE FROM idempotency_keys WHERE payment_id IS NULL;
ALTER TABLE idempotency_keys ALTER COLUMN payment_id SET NOT NULL;
