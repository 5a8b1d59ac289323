#!/usr/bin/env bash
# The compose profile's promote step (docs/operations.md, "The compose profile ha"), run in pg-2:
#   docker compose --profile ha exec pg-2 bash /ha/postgres-promote.sh
# Fences pg-1 first (it refuses to start as a primary afterwards), promotes pg-2, and lets it
# commit without a synchronous standby until one is rebuilt: with its only standby gone a primary's
# commits would wait forever. haproxy sends connections to pg-2 once pg-1 is down (its backup).
set -euo pipefail
date -u +"promoted pg-2 at %Y-%m-%dT%H:%M:%SZ" >/ha-state/promoted
gosu postgres psql -X -v ON_ERROR_STOP=1 -q -c 'SELECT pg_promote(true, 60)'
gosu postgres psql -X -v ON_ERROR_STOP=1 -q -c "ALTER SYSTEM SET synchronous_standby_names = ''" \
  -c 'SELECT pg_reload_conf()'
echo "pg-2 is the primary (synchronous_standby_names empty until a standby is rebuilt)"
