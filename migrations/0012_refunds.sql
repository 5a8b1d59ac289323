-- Up Migration

-- The money invariant's hard guard: amount_refunded is the sum of the payment's refunds that
-- are not failed, maintained in the transaction that creates (or fails) a refund. The CHECK
-- makes "never more than was paid" a property of the database, whatever the code does.
ALTER TABLE payments
  ADD COLUMN amount_refunded bigint NOT NULL DEFAULT 0,
  ADD CONSTRAINT payments_refund_within_amount
    CHECK (amount_refunded >= 0 AND amount_refunded <= amount);

CREATE TABLE refunds (
  id            uuid PRIMARY KEY,                      -- UUIDv7: time-ordered
  payment_id    uuid NOT NULL REFERENCES payments (id),
  merchant_id   uuid NOT NULL REFERENCES merchants (id),
  amount        bigint NOT NULL CHECK (amount BETWEEN 1 AND 99999999),
  currency      char(3) NOT NULL,
  reason        text CHECK (reason IN ('duplicate', 'fraudulent', 'requested_by_customer')),
  metadata      jsonb NOT NULL DEFAULT '{}',
  status        text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'succeeded', 'failed')),
  failure_code  text,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  CHECK ((status = 'failed') = (failure_code IS NOT NULL))
);

-- GET /payments/{id}/refunds: newest first, keyset on (created_at, id).
CREATE INDEX refunds_payment_created ON refunds (payment_id, created_at DESC, id DESC);

-- An idempotency record now points at a payment (POST /payments) or at a refund and its payment
-- (POST /payments/{id}/refunds): one per-merchant key space for both endpoints.
ALTER TABLE idempotency_keys ADD COLUMN refund_id uuid REFERENCES refunds (id);

-- Durable refund work, written in the API's transaction with the refund (no consumer hop):
-- claimed with SKIP LOCKED and a lease, retried with backoff, dead after the attempt limit.
CREATE TABLE refund_jobs (
  refund_id         uuid PRIMARY KEY REFERENCES refunds (id),
  state             text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'dead')),
  attempts          integer NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz NOT NULL DEFAULT now(),
  locked_until      timestamptz,
  first_failure_at  timestamptz,
  last_failure_at   timestamptz,
  last_error_class  text,
  last_error        text,
  created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refund_jobs_due ON refund_jobs (next_attempt_at) WHERE state = 'pending';

-- The acquirer simulator's refund books (its own, like acquirer_simulator_charges): one row per
-- refund idempotency key, so a retried refund call is recognised and never refunds twice.
CREATE TABLE acquirer_simulator_refunds (
  idempotency_key  text PRIMARY KEY,
  payment_id       uuid NOT NULL,
  refund_id        uuid NOT NULL,
  amount           bigint NOT NULL,
  result           text NOT NULL CHECK (result IN ('approved', 'declined')),
  reference        text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX acquirer_simulator_refunds_payment ON acquirer_simulator_refunds (payment_id);

CREATE TABLE acquirer_simulator_refund_calls (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  idempotency_key  text NOT NULL,
  refund_id        uuid NOT NULL,
  result           text NOT NULL CHECK (result IN ('approved', 'declined', 'transient')),
  replayed         boolean NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX acquirer_simulator_refund_calls_key ON acquirer_simulator_refund_calls (idempotency_key);

-- Down Migration

DROP TABLE acquirer_simulator_refund_calls;
DROP TABLE acquirer_simulator_refunds;
DROP TABLE refund_jobs;
ALTER TABLE idempotency_keys DROP COLUMN refund_id;
DROP TABLE refunds;
ALTER TABLE payments DROP CONSTRAINT payments_refund_within_amount, DROP COLUMN amount_refunded;
