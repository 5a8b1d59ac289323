-- The database logins of the payment service, created or updated idempotently; run as a
-- superuser (or a role with CREATEROLE and CREATEDB) before the migrations. Used by
-- scripts/stack.sh (native stack) and scripts/db/compose-init.sh (docker-compose.yml).
--
-- psql variables: database, owner, owner_password, api_password, relay_password,
-- settlement_password, webhooks_password, acquirer_password.
--
--   owner                 runs the migrations and owns the database and its tables; CREATEDB
--                         so the test suite can clone a database per test file.
--   payments_api          the API processes             (grants: src/platform/database/service-grants.ts)
--   payments_relay        the outbox relay processes
--   payments_settlement   the settlement processes
--   payments_webhooks     the webhook delivery processes
--   payments_acquirer     the acquirer simulator process (its books only; migrations/0025)
-- None is a superuser, none can create roles; only the owner can create databases.

\set ON_ERROR_STOP on

SELECT format('CREATE ROLE %I', :'owner')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'owner') \gexec
SELECT format('ALTER ROLE %I LOGIN CREATEDB NOSUPERUSER NOCREATEROLE PASSWORD %L',
              :'owner', :'owner_password') \gexec

SELECT format('CREATE ROLE %I', name)
  FROM (VALUES ('payments_api'), ('payments_relay'), ('payments_settlement'),
               ('payments_webhooks'), ('payments_acquirer')) AS r (name)
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = name) \gexec
SELECT format('ALTER ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD %L', name, password)
  FROM (VALUES ('payments_api', :'api_password'),
               ('payments_relay', :'relay_password'),
               ('payments_settlement', :'settlement_password'),
               ('payments_webhooks', :'webhooks_password'),
               ('payments_acquirer', :'acquirer_password')) AS r (name, password) \gexec

SELECT format('CREATE DATABASE %I OWNER %I', :'database', :'owner')
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'database') \gexec
SELECT format('ALTER DATABASE %I OWNER TO %I', :'database', :'owner') \gexec
