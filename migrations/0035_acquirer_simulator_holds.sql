-- Up Migration

-- Issue 40 item 6 (DESIGN 128): the acquirer simulator's two-step books (src/acquirer/
-- hold-simulator.ts), its own tables like its charges and refunds. One row per payment for the
-- hold (authorized, captured, released, state), one per idempotency key for the answer it gave
-- (a retried key gets it again, never a second operation), and the log of every call. The
-- amounts are checked here too: whatever the code does, a capture never exceeds its hold and a
-- decided hold is wholly accounted for (captured + released = authorized).
--
-- New tables only: no lock on a live one. Grants: service-grants.ts (DESIGN 116).
CREATE TABLE acquirer_simulator_holds (
  payment_id         uuid PRIMARY KEY,
  authorize_key      text NOT NULL,
  source             text NOT NULL,
  currency           char(3) NOT NULL,
  amount_authorized  bigint NOT NULL CHECK (amount_authorized > 0),
  amount_captured    bigint NOT NULL DEFAULT 0,
  amount_released    bigint NOT NULL DEFAULT 0,
  state              text NOT NULL DEFAULT 'held' CHECK (state IN ('held', 'captured', 'voided')),
  reference          text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT acquirer_simulator_holds_amounts CHECK (
    CASE state
      WHEN 'held' THEN amount_captured = 0 AND amount_released = 0
      WHEN 'captured' THEN amount_captured > 0 AND amount_released >= 0
        AND amount_captured + amount_released = amount_authorized
      ELSE amount_captured = 0 AND amount_released = amount_authorized
    END
  )
);
-- The retention sweep deletes decided holds by when they were decided.
CREATE INDEX acquirer_simulator_holds_decided
  ON acquirer_simulator_holds (updated_at) WHERE state <> 'held';

CREATE TABLE acquirer_simulator_hold_operations (
  idempotency_key  text PRIMARY KEY,
  payment_id       uuid NOT NULL,
  operation        text NOT NULL CHECK (operation IN ('authorize', 'capture', 'void')),
  -- The amount asked for (authorize, capture); NULL for a void.
  amount           bigint,
  result           text NOT NULL CHECK (result IN ('approved', 'declined')),
  code             text,
  reference        text,
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT acquirer_simulator_hold_operations_answer CHECK (
    (result = 'approved' AND reference IS NOT NULL AND code IS NULL)
    OR (result = 'declined' AND code IS NOT NULL AND reference IS NULL)
  )
);
CREATE INDEX acquirer_simulator_hold_operations_payment
  ON acquirer_simulator_hold_operations (payment_id);

CREATE TABLE acquirer_simulator_hold_calls (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  idempotency_key  text NOT NULL,
  payment_id       uuid NOT NULL,
  operation        text NOT NULL CHECK (operation IN ('authorize', 'capture', 'void')),
  source           text NOT NULL,
  amount           bigint,
  result           text NOT NULL CHECK (result IN ('approved', 'declined', 'transient', 'timeout')),
  code             text,
  replayed         boolean NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX acquirer_simulator_hold_calls_key ON acquirer_simulator_hold_calls (idempotency_key);
CREATE INDEX acquirer_simulator_hold_calls_payment ON acquirer_simulator_hold_calls (payment_id);

-- acquirer_books_own_login() (0026) takes settlement's privileges on the simulator's books at
-- once; these tables are books too. The list of service-grants.ts keeps them off at every later
-- run, but a database whose owner calls the procedure after migrating (scripts/up.sh, compose)
-- would leave settlement its grants on the new tables until the next run.
CREATE OR REPLACE PROCEDURE acquirer_books_own_login() LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO acquirer_books_login (only_row) VALUES (true) ON CONFLICT (only_row) DO NOTHING;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_settlement') THEN
    REVOKE ALL ON acquirer_simulator_calls, acquirer_simulator_charges,
      acquirer_simulator_refunds, acquirer_simulator_refund_calls, acquirer_simulator_holds,
      acquirer_simulator_hold_operations, acquirer_simulator_hold_calls FROM payments_settlement;
  END IF;
END;
$$;

-- Down Migration

CREATE OR REPLACE PROCEDURE acquirer_books_own_login() LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO acquirer_books_login (only_row) VALUES (true) ON CONFLICT (only_row) DO NOTHING;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_settlement') THEN
    REVOKE ALL ON acquirer_simulator_calls, acquirer_simulator_charges,
      acquirer_simulator_refunds, acquirer_simulator_refund_calls FROM payments_settlement;
  END IF;
END;
$$;

DROP TABLE acquirer_simulator_hold_calls;
DROP TABLE acquirer_simulator_hold_operations;
DROP TABLE acquirer_simulator_holds;
