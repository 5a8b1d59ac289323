-- Up Migration

-- The W3C trace context (https://www.w3.org/TR/trace-context/) of the transaction that wrote
-- the row: the POST for payment.created, the settlement attempt for payment.settled/failed.
-- The relay copies it, unchanged, into the CloudEvents distributed-tracing extension of the
-- Kafka record, so a consumer continues the trace the payment started. NULL when tracing is
-- off (or for rows written before this migration): the record then carries no trace context.
-- Nullable columns without a default: adding them rewrites nothing, and no index covers them,
-- so the relay's claim stays a HOT update (migration 0004).
ALTER TABLE outbox ADD COLUMN traceparent text, ADD COLUMN tracestate text;

-- Down Migration

ALTER TABLE outbox DROP COLUMN traceparent, DROP COLUMN tracestate;
