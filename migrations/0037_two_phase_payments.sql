-- Up Migration

-- Issue 40 (DESIGN 131-133): authorize now, capture or cancel later. A payment says how it is
-- captured (automatic: charged in one step as before; manual: authorized, then captured or
-- canceled). A manual payment authorized by settlement is requires_capture until capture_before;
-- a capture settles it with amount_captured (the rest of the hold released); a cancel, or the
-- expiry job at capture_before, makes it canceled. Constant default and nullable columns: no
-- table rewrite, only a brief ACCESS EXCLUSIVE lock under the migration's lock timeout.
ALTER TABLE payments
  ADD COLUMN capture_method text NOT NULL DEFAULT 'automatic',
  ADD COLUMN amount_captured bigint,
  ADD COLUMN capture_before timestamptz,
  ADD COLUMN canceled_at timestamptz,
  ADD COLUMN cancellation_reason text;

-- The new rules, NOT VALID (new and changed rows are checked; every existing row satisfies them:
-- all are automatic with the new columns NULL). A later migration VALIDATEs them.
ALTER TABLE payments
  ADD CONSTRAINT payments_capture_method
    CHECK (capture_method IN ('automatic', 'manual')) NOT VALID,
  ADD CONSTRAINT payments_status_two_phase
    CHECK (status IN ('pending', 'processing', 'requires_capture', 'settled', 'failed',
                      'canceled')) NOT VALID,
  -- Never more captured than authorized; never more refunded than captured (the money invariant
  -- of a partial capture, as payments_refund_within_amount is for a full one).
  ADD CONSTRAINT payments_captured_within_amount
    CHECK (amount_captured IS NULL OR amount_captured BETWEEN 1 AND amount) NOT VALID,
  ADD CONSTRAINT payments_refund_within_captured
    CHECK (amount_captured IS NULL OR amount_refunded <= amount_captured) NOT VALID,
  ADD CONSTRAINT payments_cancellation
    CHECK ((status = 'canceled') = (canceled_at IS NOT NULL)
           AND (cancellation_reason IS NULL OR cancellation_reason IN
                ('requested_by_customer', 'duplicate', 'fraudulent', 'abandoned', 'expired')))
    NOT VALID;

-- The old status list (0002's inline CHECK) is replaced by payments_status_two_phase.
ALTER TABLE payments DROP CONSTRAINT payments_status_check;

-- The decision on an authorization, at most one per payment (the primary key): a capture (its
-- amount) or a cancel (its reason; 'expired' when the expiry job took it). Written under the
-- payment's row lock by POST /payments/{id}/capture or /cancel (or the expiry job), so a capture
-- and a cancel racing cannot both win; the acquirer call follows on the hold job.
CREATE TABLE payment_hold_decisions (
  payment_id           uuid PRIMARY KEY REFERENCES payments (id),
  action               text NOT NULL CHECK (action IN ('capture', 'cancel')),
  amount               bigint CHECK (amount BETWEEN 1 AND 99999999),
  cancellation_reason  text CHECK (cancellation_reason IN
                         ('requested_by_customer', 'duplicate', 'fraudulent', 'abandoned',
                          'expired')),
  created_at           timestamptz NOT NULL DEFAULT now(),
  CHECK ((action = 'capture') = (amount IS NOT NULL)),
  CHECK (action = 'cancel' OR cancellation_reason IS NULL)
);

-- One job per authorized payment, written with requires_capture and due at capture_before (the
-- expiry: it survives restarts as any job does); a decision makes it due at once. The job
-- engine's columns, as refund_jobs has them (0012, 0017, 0020, 0027, revival).
CREATE TABLE hold_jobs (
  payment_id        uuid PRIMARY KEY REFERENCES payments (id),
  state             text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'dead')),
  attempts          integer NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz NOT NULL DEFAULT now(),
  locked_until      timestamptz,
  lease_owner       uuid,
  first_failure_at  timestamptz,
  last_failure_at   timestamptz,
  last_error_class  text,
  last_error        text,
  replay_token      text,
  revived_at        timestamptz,
  needs_inquiry     boolean NOT NULL DEFAULT false,
  last_inquiry      text,
  not_sent          integer NOT NULL DEFAULT 0,
  traceparent       text,
  tracestate        text,
  created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX hold_jobs_claimable ON hold_jobs
  ((greatest(next_attempt_at, coalesce(locked_until, next_attempt_at))))
  WHERE state = 'pending';

-- Down Migration

DROP TABLE hold_jobs;
DROP TABLE payment_hold_decisions;
ALTER TABLE payments
  ADD CONSTRAINT payments_status_check
    CHECK (status IN ('pending', 'processing', 'settled', 'failed')) NOT VALID;
ALTER TABLE payments
  DROP CONSTRAINT payments_cancellation,
  DROP CONSTRAINT payments_refund_within_captured,
  DROP CONSTRAINT payments_captured_within_amount,
  DROP CONSTRAINT payments_status_two_phase,
  DROP CONSTRAINT payments_capture_method,
  DROP COLUMN cancellation_reason,
  DROP COLUMN canceled_at,
  DROP COLUMN capture_before,
  DROP COLUMN amount_captured,
  DROP COLUMN capture_method;
