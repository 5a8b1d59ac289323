-- Up Migration

-- I4 dedup: one row per event id the settlement consumer has accepted, written in the same
-- transaction as the state change it caused. A redelivered or republished copy (new offset,
-- same UUIDv5 id) finds its row and changes nothing.
CREATE TABLE processed_events (
  event_id      uuid PRIMARY KEY,
  event_type    text NOT NULL,
  payment_id    uuid NOT NULL,
  processed_at  timestamptz NOT NULL DEFAULT now()
);

-- Durable settlement work: one row per payment in processing. Retries live here, not in the
-- consumer (no sleeping with a partition blocked, and a restart resumes where it stopped).
-- The original Kafka record is kept so an exhausted job can be dead-lettered with it.
CREATE TABLE settlement_jobs (
  payment_id        uuid PRIMARY KEY REFERENCES payments (id),
  event_id          uuid NOT NULL,
  state             text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'dead')),
  attempts          integer NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz NOT NULL DEFAULT now(),
  locked_until      timestamptz,
  first_failure_at  timestamptz,
  last_failure_at   timestamptz,
  last_error_class  text,
  last_error        text,
  source_topic      text NOT NULL,
  source_partition  integer NOT NULL,
  source_offset     text NOT NULL,
  message_key       text,
  message_value     text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now()
);

-- The worker claims due pending jobs, soonest first.
CREATE INDEX settlement_jobs_due ON settlement_jobs (next_attempt_at) WHERE state = 'pending';

-- The acquirer simulator's own books (a stand-in for an external acquirer, so it keeps its
-- state apart from ours and never inside our transactions). Every call is logged; a charge is
-- recorded once per idempotency key, which is what makes retried calls safe.
CREATE TABLE acquirer_simulator_calls (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  idempotency_key  text NOT NULL,
  payment_id       uuid NOT NULL,
  source           text NOT NULL,
  amount           bigint NOT NULL,
  currency         char(3) NOT NULL,
  result           text NOT NULL CHECK (result IN ('approved', 'declined', 'transient', 'timeout')),
  replayed         boolean NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX acquirer_simulator_calls_key ON acquirer_simulator_calls (idempotency_key);
CREATE INDEX acquirer_simulator_calls_payment ON acquirer_simulator_calls (payment_id);

CREATE TABLE acquirer_simulator_charges (
  idempotency_key  text PRIMARY KEY,
  payment_id       uuid NOT NULL,
  result           text NOT NULL CHECK (result IN ('approved', 'declined')),
  reference        text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX acquirer_simulator_charges_payment ON acquirer_simulator_charges (payment_id);

-- Down Migration

DROP TABLE acquirer_simulator_charges;
DROP TABLE acquirer_simulator_calls;
DROP TABLE settlement_jobs;
DROP TABLE processed_events;
