#!/usr/bin/env bash
# docker-compose.yml mounts this into the postgres image's /docker-entrypoint-initdb.d: on the
# first start (empty volume) it creates the service's logins and database as the superuser.
# Passwords come from the container's environment (the local-development ones by default).
set -euo pipefail
psql -X -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v database="${PAYMENTS_DB:-payments}" \
  -v owner="${PAYMENTS_OWNER:-payments}" \
  -v owner_password="${PAYMENTS_OWNER_PASSWORD:-payments}" \
  -v api_password="${PAYMENTS_API_PASSWORD:-payments_api}" \
  -v relay_password="${PAYMENTS_RELAY_PASSWORD:-payments_relay}" \
  -v settlement_password="${PAYMENTS_SETTLEMENT_PASSWORD:-payments_settlement}" \
  -v webhooks_password="${PAYMENTS_WEBHOOKS_PASSWORD:-payments_webhooks}" \
  -v acquirer_password="${PAYMENTS_ACQUIRER_PASSWORD:-payments_acquirer}" \
  -f /payments-db/create-roles.sql
