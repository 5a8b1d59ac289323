#!/usr/bin/env bash
# Entrypoint of the CI stand-in for postgres:15. Follows the official image's contract:
#   POSTGRES_PASSWORD (required unless POSTGRES_HOST_AUTH_METHOD=trust), POSTGRES_USER (postgres),
#   POSTGRES_DB (= POSTGRES_USER), POSTGRES_INITDB_ARGS, POSTGRES_HOST_AUTH_METHOD (scram-sha-256),
#   PGDATA (/var/lib/postgresql/data); on the first start (empty PGDATA) initdb, a temporary
#   socket-only server, the user's database, /docker-entrypoint-initdb.d/*.sh (executed when
#   executable, sourced otherwise) and *.sql (psql), then the real server: `postgres "$@"`.
set -Eeo pipefail # no -u: init scripts are sourced, as in the official image

# `docker run postgres:15 -c max_connections=200`: options go to postgres.
if [[ ${1:-} == -* ]]; then
  set -- postgres "$@"
fi

if [[ ${1:-} != postgres ]]; then
  exec "$@"
fi

# As root: own the data and socket directories, then run this script again as `postgres`.
if [[ $(id -u) == 0 ]]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chmod 00700 "$PGDATA" || :
  chmod 03775 /var/run/postgresql || :
  find "$PGDATA" /var/run/postgresql \! -user postgres -exec chown postgres:postgres '{}' +
  exec setpriv --reuid=postgres --regid=postgres --init-groups env HOME=/var/lib/postgresql "$0" "$@"
fi

log() { printf '%s\n' "$*"; }
die() { printf >&2 'error: %s\n' "$*"; exit 1; }

: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
: "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"
: "${POSTGRES_INITDB_ARGS:=}"
export POSTGRES_USER POSTGRES_DB

init_database() {
  if [[ -z ${POSTGRES_PASSWORD:-} && $POSTGRES_HOST_AUTH_METHOD != trust ]]; then
    die "Database is uninitialized and superuser password is not specified.
       Set POSTGRES_PASSWORD to a non-empty value (or POSTGRES_HOST_AUTH_METHOD=trust)."
  fi
  local pwfile
  pwfile="$(mktemp)"
  printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of options
  initdb --username="$POSTGRES_USER" --pwfile="$pwfile" $POSTGRES_INITDB_ARGS
  rm -f "$pwfile"
  printf '\nhost all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >>"$PGDATA/pg_hba.conf"

  # Temporary server: unix socket only, so nothing connects before the init scripts ran.
  export PGPASSWORD="${PGPASSWORD:-${POSTGRES_PASSWORD:-}}"
  PGUSER="${PGUSER:-$POSTGRES_USER}" pg_ctl -D "$PGDATA" -w start \
    -o "$(printf '%q ' "${@:2}" -c listen_addresses='' -p "${PGPORT:-5432}")"

  local psql=(psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc)
  if [[ $POSTGRES_DB != postgres ]]; then
    local exists
    exists="$("${psql[@]}" --dbname postgres --set db="$POSTGRES_DB" --tuples-only <<<"SELECT 1 FROM pg_database WHERE datname = :'db';")"
    if [[ -z ${exists// /} ]]; then
      "${psql[@]}" --dbname postgres --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
    fi
  fi

  local f
  log
  for f in /docker-entrypoint-initdb.d/*; do
    [[ -e $f ]] || continue
    case "$f" in
      *.sh)
        if [[ -x $f ]]; then
          log "$0: running $f"
          "$f"
        else
          log "$0: sourcing $f"
          # shellcheck disable=SC1090
          . "$f"
        fi
        ;;
      *.sql) log "$0: running $f"; "${psql[@]}" --dbname "$POSTGRES_DB" -f "$f" ;;
      *.sql.gz) log "$0: running $f"; gunzip -c "$f" | "${psql[@]}" --dbname "$POSTGRES_DB" ;;
      *) log "$0: ignoring $f" ;;
    esac
  done
  log

  PGUSER="${PGUSER:-$POSTGRES_USER}" pg_ctl -D "$PGDATA" -m fast -w stop
  unset PGPASSWORD
  log
  log 'PostgreSQL init process complete; ready for start up.'
  log
}

if [[ ! -s $PGDATA/PG_VERSION ]]; then
  init_database "$@"
else
  log
  log 'PostgreSQL Database directory appears to contain a database; Skipping initialization'
  log
fi

exec "$@"
