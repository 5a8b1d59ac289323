-- Up Migration

-- Dead refund jobs come back through `npm run dlq:replay` like dead settlement jobs (0011): the
-- consumer revives a dead refund job when the replayed `refund.created` copy carries a token it
-- has not been revived with before. A second delivery of the same copy changes nothing.
ALTER TABLE refund_jobs
  ADD COLUMN replay_token text,
  ADD COLUMN revived_at timestamptz;

-- Down Migration

ALTER TABLE refund_jobs DROP COLUMN revived_at, DROP COLUMN replay_token;
