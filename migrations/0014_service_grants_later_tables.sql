-- Up Migration

-- Grants of the per-process logins (record 67, migration 0009) on what later migrations added:
-- rate-limit tiers and API keys (0008), refunds (0012). Same rule as 0009: each login gets what
-- its statements need, granted only to the roles that exist (they are cluster-wide and created
-- by scripts/db/create-roles.sql, not by migrations).
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_api') THEN
    -- Authentication joins keys, merchants and their tier.
    GRANT SELECT ON api_keys, rate_limit_tiers TO payments_api;
    -- Creating a refund locks its payment (FOR UPDATE needs an UPDATE grant) and raises
    -- amount_refunded in the same transaction; the API still cannot change a payment's status.
    GRANT UPDATE (amount_refunded) ON payments TO payments_api;
    GRANT SELECT, INSERT ON refunds, refund_jobs TO payments_api;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_settlement') THEN
    -- The refund worker: its jobs, the refund's status, releasing a failed refund's amount,
    -- and the simulator's refund books.
    GRANT SELECT, UPDATE, DELETE ON refund_jobs TO payments_settlement;
    GRANT SELECT, UPDATE ON refunds TO payments_settlement;
    GRANT UPDATE (amount_refunded) ON payments TO payments_settlement;
    GRANT SELECT, INSERT ON acquirer_simulator_refunds, acquirer_simulator_refund_calls
      TO payments_settlement;
  END IF;
END;
$$;

-- Down Migration

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_api') THEN
    REVOKE SELECT ON api_keys, rate_limit_tiers FROM payments_api;
    REVOKE UPDATE (amount_refunded) ON payments FROM payments_api;
    REVOKE SELECT, INSERT ON refunds, refund_jobs FROM payments_api;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'payments_settlement') THEN
    REVOKE SELECT, UPDATE, DELETE ON refund_jobs FROM payments_settlement;
    REVOKE SELECT, UPDATE ON refunds FROM payments_settlement;
    REVOKE UPDATE (amount_refunded) ON payments FROM payments_settlement;
    REVOKE SELECT, INSERT ON acquirer_simulator_refunds, acquirer_simulator_refund_calls
      FROM payments_settlement;
  END IF;
END;
$$;
