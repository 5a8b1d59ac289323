#!/usr/bin/env bash
# `npm run up`: from a fresh clone to the service running on the local stack, as deployed.
# Installs what is missing (npm packages, PostgreSQL, Redis, Kafka), starts the services,
# migrates (as the owner), then runs api, relay, settlement, webhooks and the acquirer simulator
# as five processes in the foreground, each logging in as its own role (payments_api,
# payments_relay, payments_settlement, payments_webhooks, payments_acquirer; the URLs
# `scripts/stack.sh env` prints). Settlement calls the acquirer over HTTP (ACQUIRER_URL) with the
# development bearer token (ACQUIRER_TOKEN, also from `scripts/stack.sh env`) and its login loses the acquirer's books (CALL acquirer_books_own_login(), migrations/0025-0026: the
# choice is recorded once, later migrations keep it). Safe to re-run.
#
#   npm run up                  five processes; their logs here, each line prefixed with the
#                               role on a terminal (JSON lines, with their `roles` field, otherwise)
#   npm run up -- --single      one process running all four roles, as the owner login
#                               (DB_ALLOW_PRIVILEGED_LOGIN=true: the local all-in-one only),
#                               with the acquirer simulator inside it
#
# Webhooks may go to loopback receivers here: WEBHOOK_ALLOWED_NETWORKS defaults to
# 127.0.0.0/8,::1/128 for this local mode (deployments allow public addresses only; set it to
# an empty value to get that here).
#
# Ctrl-C (SIGINT) or SIGTERM stops every process gracefully, then the command exits (0 when each
# shut down cleanly). If one process exits on its own, the others are stopped and the command
# exits 1 naming it. `npm run down` stops the stack.
# Ports: the API on PORT (3000); the internal listeners (/metrics, /readyz) on METRICS_PORT
# (9464) for the API, +1 for the relay, +2 for settlement, +3 for webhooks and +4 for the
# acquirer, which serves settlement on ACQUIRER_PORT (3100).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[up] %s\n' "$*" >&2; }

USAGE='usage: npm run up [-- --single]
  (none)    api, relay, settlement, webhooks and the acquirer as five processes, each with its own database login
  --single  one process running all four roles, as the owner login (local development only)'
single=false
for arg in "$@"; do
  case "$arg" in
    --single) single=true ;;
    -h | --help)
      echo "$USAGE"
      exit 0
      ;;
    *)
      printf '%s\n%s\n' "up: unknown argument $arg" "$USAGE" >&2
      exit 2
      ;;
  esac
done

# npm packages: install when node_modules is missing or older than the lockfile.
if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
  log "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund
fi

bash scripts/stack.sh start
# DATABASE_URL / MIGRATION_DATABASE_URL (the owner), API_, RELAY_, SETTLEMENT_,
# WEBHOOKS_, ACQUIRER_DATABASE_URL (the roles), REDIS_URL (the default user) and API_REDIS_URL
# (the API's Redis user), KAFKA_BROKERS of the stack just started
# (STACK_DIR and the *_PORT_STACK variables choose which).
# shellcheck disable=SC1090 # the stack prints the URLs of what it runs
eval "$(bash scripts/stack.sh env)"

log "building"
npm run -s build

log "migrating"
node dist/cli/migrate.js

if [[ $single == false ]]; then
  # Settlement calls the acquirer process: its login loses the acquirer's books (recorded, so
  # later migration runs leave them out; calling it again is harmless).
  psql -X -q -v ON_ERROR_STOP=1 -d "$MIGRATION_DATABASE_URL" -c 'CALL acquirer_books_own_login()'
  export ACQUIRER_URL="${ACQUIRER_URL:-http://127.0.0.1:${ACQUIRER_PORT:-3100}}"
fi

# Local receivers (the API checks an endpoint's URL with it, the webhooks role every connection).
export WEBHOOK_ALLOWED_NETWORKS="${WEBHOOK_ALLOWED_NETWORKS-127.0.0.0/8,::1/128}"
# No load balancer routes to a developer's terminal: the API's drain delay on SIGTERM
# (SHUTDOWN_DRAIN_MS, 5 s by default, record 98) would only slow Ctrl-C down.
export SHUTDOWN_DRAIN_MS="${SHUTDOWN_DRAIN_MS:-0}"

# Human-readable logs on a terminal, JSON otherwise (e.g. when piped to a collector).
if [[ -t 1 && -z "${LOG_FORMAT:-}" ]]; then export LOG_FORMAT=pretty; fi

# The processes to run, and the login of each.
metrics_port="${METRICS_PORT:-9464}"
declare -A pid_of=() role_of=() url_of=(
  [api]="$API_DATABASE_URL"
  [relay]="$RELAY_DATABASE_URL"
  [settlement]="$SETTLEMENT_DATABASE_URL"
  [webhooks]="$WEBHOOKS_DATABASE_URL"
  [acquirer]="$ACQUIRER_DATABASE_URL"
)
if [[ $single == true ]]; then
  # One process for all four roles needs the union of their grants: this local mode runs as the
  # owner login, explicitly allowed. Everything else runs one process per role with its own login.
  url_of=([all]="$DATABASE_URL")
  export DB_ALLOW_PRIVILEGED_LOGIN=true
fi
prefixers=()
pretty=false
if [[ ${LOG_FORMAT:-json} == pretty ]]; then
  pretty=true
  # pino-pretty colours only a terminal; the roles write into a pipe to their prefixer.
  if [[ -t 1 ]]; then export FORCE_COLOR="${FORCE_COLOR:-1}"; fi
fi

# start_role <role> <metrics port> <node command line...>: runs it in a session of its own, so a
# terminal's Ctrl-C reaches this script alone and each role gets exactly one SIGTERM from it (a
# role exits at once, without draining, on a second signal).
start_role() {
  local role=$1 port=$2
  shift 2
  # Each process gets its own DATABASE_URL; the migration login's URL is none of its business.
  # Redis: the API as its own user (payments_api); the other roles use none and get no URL; the
  # all-in-one keeps the stack's REDIS_URL (the default user, like its owner login).
  local -a env_args=(env -u MIGRATION_DATABASE_URL -u API_REDIS_URL "DATABASE_URL=${url_of[$role]}"
    "METRICS_PORT=$port")
  case "$role" in
    api) env_args+=("REDIS_URL=$API_REDIS_URL") ;;
    all) ;;
    *) env_args=(env -u REDIS_URL "${env_args[@]:1}") ;;
  esac
  if [[ $pretty == true ]]; then
    local fd
    # Each line prefixed with the role. The prefixer ignores the terminal's signals: it ends when
    # its role closes the pipe, after the role's last (shutdown) line.
    exec {fd}> >(
      trap '' INT TERM
      exec sed -u "s/^/$(printf '%-10s' "$role") | /"
    )
    prefixers+=("$!")
    setsid "${env_args[@]}" "$@" >&"$fd" 2>&1 &
    exec {fd}>&-
  else
    setsid "${env_args[@]}" "$@" &
  fi
  pid_of[$role]=$!
  role_of[$!]=$role
}

stopping=""
stop_roles() {
  local pid
  for pid in "${pid_of[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # Each role bounds its shutdown (SHUTDOWN_TIMEOUT_MS, 15 s); past that, it is killed.
  (
    trap 'kill "$nap" 2>/dev/null; exit 0' TERM
    sleep "${UP_STOP_GRACE_SECONDS:-30}" &
    nap=$!
    wait "$nap"
    for pid in "$@"; do kill -KILL "$pid" 2>/dev/null || true; done
  ) </dev/null >/dev/null 2>&1 &
  watchdog=$!
}
watchdog=""
# Whatever ends this script, its watchdog goes with it (it must never signal a reused pid).
trap 'if [[ -n $watchdog ]]; then kill "$watchdog" 2>/dev/null || true; fi' EXIT
# shellcheck disable=SC2317 # run by the traps below
on_signal() {
  # npm forwards the terminal's SIGINT that reached us already: one stop is enough. (A bare
  # `return` here would return the interrupted wait's status, 130, and set -e would end the script.)
  if [[ -n $stopping ]]; then return 0; fi
  stopping=$1
  log "$1: stopping ${!pid_of[*]}"
  stop_roles "${pid_of[@]}"
}
trap 'on_signal SIGINT' INT
trap 'on_signal SIGTERM' TERM

if [[ $single == true ]]; then
  log "starting api (port ${PORT:-3000}), relay, settlement and webhooks in one process," \
    "as the owner (Ctrl-C to stop)"
  start_role all "$metrics_port" \
    node --max-old-space-size=1024 --import ./dist/platform/telemetry/register-tracing.js dist/apps/all/main.js
else
  log "starting the acquirer (port ${ACQUIRER_PORT:-3100}), api (port ${PORT:-3000}), relay," \
    "settlement and webhooks, each as its own login (Ctrl-C to stop)"
  start_role acquirer "$((metrics_port + 4))" \
    node --max-old-space-size=1024 --import ./dist/platform/telemetry/register-tracing.js \
    dist/apps/acquirer/main.js
  start_role api "$metrics_port" \
    node --max-old-space-size=1024 --import ./dist/platform/telemetry/register-tracing.js dist/apps/api/main.js
  start_role relay "$((metrics_port + 1))" \
    node --max-old-space-size=1024 --import ./dist/platform/telemetry/register-tracing.js \
    dist/apps/relay/main.js
  start_role settlement "$((metrics_port + 2))" \
    node --max-old-space-size=1024 --import ./dist/platform/telemetry/register-tracing.js \
    dist/apps/settlement/main.js
  start_role webhooks "$((metrics_port + 3))" \
    node --max-old-space-size=1024 --import ./dist/platform/telemetry/register-tracing.js \
    dist/apps/webhooks/main.js
fi

# How a process with wait status $1 ended: "exited with code 1", "was killed by SIGKILL".
describe() {
  if (($1 > 128)) && kill -l "$(($1 - 128))" >/dev/null 2>&1; then
    echo "was killed by SIG$(kill -l "$(($1 - 128))")"
  else
    echo "exited with code $1"
  fi
}

status=0
first_exit=""
while ((${#pid_of[@]} > 0)); do
  exited=""
  code=0
  wait -n -p exited "${pid_of[@]}" || code=$?
  # A trapped signal interrupts wait without a process having exited (exited is unset): again.
  if [[ -z ${exited:-} ]]; then continue; fi
  role=${role_of[$exited]}
  unset "pid_of[$role]"
  if [[ -n $stopping ]]; then
    # 143: the SIGTERM came before the role had set up its shutdown (it was still starting).
    if ((code == 143)); then
      log "$role stopped during start-up"
    elif ((code != 0)); then
      log "$role $(describe "$code") while stopping"
      status=1
    fi
    continue
  fi
  # A process exited on its own: the service is down, stop the others.
  first_exit=$role
  status=1
  stopping=$role
  others="${!pid_of[*]}"
  log "$role $(describe "$code")${others:+: stopping $others}"
  stop_roles "${pid_of[@]}"
done
if [[ -n $watchdog ]]; then kill "$watchdog" 2>/dev/null || true; fi
# The prefixers end with their roles' pipes; their last lines are out before the command ends.
for pid in "${prefixers[@]}"; do wait "$pid" 2>/dev/null || true; done
if [[ -n $first_exit ]]; then
  log "stopped because $first_exit ended (its log is above)"
else
  log "stopped"
fi
exit "$status"
