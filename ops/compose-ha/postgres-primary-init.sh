#!/usr/bin/env bash
# Mounted into pg-1's /docker-entrypoint-initdb.d (after the logins' script): on the first start
# only, the replication login, a pg_hba that accepts TLS connections only, and the synchronous
# standby's name. ALTER SYSTEM takes effect at the server's real start, after init: the init's own
# commits do not wait for a standby that cannot exist yet.
set -euo pipefail
psql -X -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v password="${PAYMENTS_REPLICATION_PASSWORD:?}" <<'SQL'
CREATE ROLE replicator WITH REPLICATION LOGIN PASSWORD :'password';
ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (pg_2)';
SQL
cat >"$PGDATA/pg_hba.conf" <<'HBA'
# Written by ops/compose-ha/postgres-primary-init.sh: the socket inside the container, and TLS
# with a password from anywhere else; nothing in clear text.
local   all          all                     trust
hostssl replication  replicator  all         scram-sha-256
hostssl all          all         all         scram-sha-256
HBA
