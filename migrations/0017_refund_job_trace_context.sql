-- Up Migration

-- A refund is traced end to end like a payment (issue 13): the API stores the POST's trace
-- context with the refund's durable job, and every attempt of the refund worker continues it
-- (as 0013 did for the outbox; settlement jobs carry theirs in the stored Kafka record).
ALTER TABLE refund_jobs
  ADD COLUMN traceparent text,
  ADD COLUMN tracestate text;

-- Down Migration

ALTER TABLE refund_jobs DROP COLUMN tracestate, DROP COLUMN traceparent;
