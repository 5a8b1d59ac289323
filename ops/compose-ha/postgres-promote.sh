#!/usr/bin/env bash
# The compose profile's promote step (docs/operations.md, "The compose profile ha"), run in pg-2:
#   docker compose --profile ha exec pg-2 bash /ha/postgres-promote.sh
# Fences pg-1 first (postgres-node.sh refuses to start it as a primary afterwards), promotes
# pg-2, lets it commit without a synchronous standby until one is rebuilt (with its only standby
# gone a primary's commits would wait forever), then switches pg-proxy: pg-1 to maintenance, pg-2
# in service. Safe to run again (after a restart of pg-proxy, whose switch lives in its memory).
set -euo pipefail
[[ -e /ha-state/promoted ]] || date -u +"promoted pg-2 at %Y-%m-%dT%H:%M:%SZ" >/ha-state/promoted
if [[ $(gosu postgres psql -X -tAc 'SELECT pg_is_in_recovery()') == t ]]; then
  gosu postgres psql -X -v ON_ERROR_STOP=1 -q -c 'SELECT pg_promote(true, 60)'
fi
gosu postgres psql -X -v ON_ERROR_STOP=1 -q -c "ALTER SYSTEM SET synchronous_standby_names = ''" \
  -c 'SELECT pg_reload_conf()'
# haproxy's runtime API: one line of commands per connection, answered, then closed.
exec 3<>/dev/tcp/pg-proxy/9999
printf '%s\n' 'set server postgres_primary/pg-1 state maint; shutdown sessions server postgres_primary/pg-1; set server postgres_primary/pg-2 state ready' >&3
timeout 5 cat <&3 || true
exec 3<&-
echo "pg-2 is the primary behind pg-proxy (synchronous_standby_names empty until a standby is rebuilt)"
