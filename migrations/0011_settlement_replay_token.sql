-- Up Migration

-- A dead settlement job comes back only through `npm run dlq:replay`: replay stamps the records
-- it republishes with a token (header `dlq_replay_token`, one per replay run), and the consumer
-- revives a dead job only for a token it has not revived it with before. A stray duplicate of
-- `payment.created` (no token) or a second delivery of the same replayed copy changes nothing.
ALTER TABLE settlement_jobs
  ADD COLUMN replay_token text,
  ADD COLUMN revived_at timestamptz;

-- Down Migration

ALTER TABLE settlement_jobs DROP COLUMN revived_at, DROP COLUMN replay_token;
