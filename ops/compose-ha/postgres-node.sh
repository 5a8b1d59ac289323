#!/usr/bin/env bash
# docker-compose.yml's pg-1 and pg-2 (profile ha): `postgres-node.sh primary` or `standby`, run as
# root in the postgres:15 image, which then starts the server as postgres through its entrypoint.
#   primary  the image's first-start init (initdb.d: the service's logins, then
#            postgres-primary-init.sh: replication login, TLS-only pg_hba, the synchronous
#            standby's name). Refuses to start once the standby was promoted (the fence below).
#   standby  on an empty data directory, a copy of the primary by pg_basebackup over verify-full
#            TLS, then recovery streaming from it as `pg_2`: the primary's synchronous standby.
# Both: TLS with the ha-certs certificate, WAL for replication, synchronous_commit on.
set -euo pipefail

role=${1:?primary or standby}
fence=/ha-state/promoted
args=(
  -c listen_addresses='*' -c max_connections=200 -c shared_buffers=256MB
  -c ssl=on -c ssl_cert_file=/tls/server.pem -c ssl_key_file=/tls/server.key
  -c ssl_ca_file=/tls/ca.pem -c ssl_min_protocol_version=TLSv1.2
  -c wal_level=replica -c max_wal_senders=10 -c max_replication_slots=10
  -c hot_standby=on -c synchronous_commit=on
)

case "$role" in
  primary)
    if [[ -e $fence ]]; then
      echo "pg-1: the standby was promoted ($(cat "$fence")); refusing to start as a second" \
        "primary. Rebuild pg-1 as the new primary's standby, or docker compose --profile ha down -v" >&2
      exit 1
    fi
    ;;
  standby)
    if [[ ! -s $PGDATA/PG_VERSION ]]; then
      mkdir -p "$PGDATA"
      chown postgres:postgres "$PGDATA"
      chmod 0700 "$PGDATA"
      conninfo="host=pg-1 port=5432 user=replicator sslmode=verify-full sslrootcert=/tls/ca.pem"
      echo "pg-2: copying pg-1 (pg_basebackup)"
      PGPASSWORD=$PAYMENTS_REPLICATION_PASSWORD gosu postgres \
        pg_basebackup --pgdata="$PGDATA" --dbname="$conninfo" --wal-method=stream \
        --checkpoint=fast --write-recovery-conf --progress
      # The primary names its synchronous standby by application_name (postgres-primary-init.sh).
      printf "primary_conninfo = '%s password=%s application_name=pg_2'\n" \
        "$conninfo" "$PAYMENTS_REPLICATION_PASSWORD" >>"$PGDATA/postgresql.auto.conf"
    fi
    ;;
  *)
    echo "usage: postgres-node.sh primary|standby" >&2
    exit 2
    ;;
esac
exec docker-entrypoint.sh postgres "${args[@]}"
