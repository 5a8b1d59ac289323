#!/usr/bin/env bash
# Local backing services for the payment service, run natively (the target machines
# have no Docker engine): PostgreSQL 15, Redis, Kafka 3.9 in single-node KRaft mode.
# Everything listens on 127.0.0.1 only; all data and logs live under $STACK_DIR
# (default: <repo>/.stack).
#
# Usage: scripts/stack.sh install
#        scripts/stack.sh start  [postgres|redis|kafka ...]   (default: all)
#        scripts/stack.sh stop   [postgres|redis|kafka ...]   (default: all)
#        scripts/stack.sh status [postgres|redis|kafka ...]   (exit 0 all running, 3 otherwise)
#        scripts/stack.sh env    [kafka3]                     (export lines for the app/tests; makes
#                                                             the local key ring $STACK_DIR/secrets-keys once)
#        scripts/stack.sh pid    <service>                    (main pid(s), one a line; exit 3 if none)
#
# STACK_TOPOLOGY=ha: the same commands act on the HA topology instead (scripts/ha/stack-ha.sh:
# three Kafka brokers, Redis with Sentinels, a Postgres standby, TLS and authentication).
#
# Optional, never part of "all": kafka3, a three-node Kafka cluster (replication factor 3,
# min.insync.replicas 2) on its own ports, for broker-loss tests (`npm run chaos -- --kafka3`);
# `env kafka3` points KAFKA_BROKERS at it.
#
# Environment: STACK_DIR, PGPORT_STACK (5432), REDIS_PORT_STACK (6379),
#              KAFKA_PORT_STACK (9092), KAFKA_CONTROLLER_PORT_STACK (9093),
#              KAFKA3_PORT_BASE_STACK (9094: brokers on base..base+2, controllers base+3..base+5),
#              STACK_WAIT_SECS (120, per service readiness timeout).
# SC2174: "mkdir -p -m" applying the mode to the last component only is intended (never
# chmod a pre-existing dir). SC2016: single-quoted $$/$0/$@ are meant for the inner bash.
# shellcheck disable=SC2174,SC2016
set -euo pipefail

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STACK_DIR="${STACK_DIR:-$ROOT_DIR/.stack}"
case "$STACK_DIR" in /*) ;; *) STACK_DIR="$PWD/$STACK_DIR" ;; esac

PG_PORT="${PGPORT_STACK:-5432}"
REDIS_PORT="${REDIS_PORT_STACK:-6379}"
KAFKA_PORT="${KAFKA_PORT_STACK:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT_STACK:-9093}"
WAIT_SECS="${STACK_WAIT_SECS:-120}"

APP_DB=payments
APP_USER=payments
APP_PASSWORD=payments

PG_BIN=/usr/lib/postgresql/15/bin
# Postgres refuses to run as root, so its files must be reachable by the postgres user. When
# the checkout sits below a folder that user cannot traverse (e.g. /root), or so deep that the
# socket path would exceed the ~100-byte limit, its folder lives under /var/lib instead, with
# .stack/postgres as a symlink to it (pg_relocate).
pg_paths() {
  PG_DIR="$STACK_DIR/postgres"
  if [[ -L $PG_DIR ]]; then PG_DIR="$(readlink -f "$PG_DIR")"; fi
  PG_DATA="$PG_DIR/data"
  PG_LOG="$PG_DIR/log/postgres.log"
  PG_SOCK="$PG_DIR/run"
}
pg_paths

REDIS_DIR="$STACK_DIR/redis"
REDIS_PID="$REDIS_DIR/redis.pid"
REDIS_LOG="$REDIS_DIR/redis.log"

KAFKA_SRC="$ROOT_DIR/scripts/kafka"  # pom.xml, templates (versioned)
KAFKA_DIR="$STACK_DIR/kafka"
KAFKA_LIBS="$KAFKA_DIR/libs"
KAFKA_DATA="$KAFKA_DIR/data"
KAFKA_LOGDIR="$KAFKA_DIR/log"
KAFKA_CONF="$KAFKA_DIR/server.properties"
KAFKA_PID="$KAFKA_DIR/kafka.pid"
KAFKA_STOP_SECS=60                   # TERM grace period before KILL

KAFKA3_DIR="$STACK_DIR/kafka3"
KAFKA3_PORT_BASE="${KAFKA3_PORT_BASE_STACK:-9094}"
KAFKA3_NODES=(1 2 3)

ALL_SERVICES=(postgres redis kafka)

# ---------------------------------------------------------------- helpers

log() { printf '[stack] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# True if something accepts TCP connections on 127.0.0.1:$1 (bash built-in, no nc needed).
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# True if the process exists and is not a zombie (in containers pid 1 may be slow to
# reap orphans, and kill -0 succeeds on a zombie).
pid_alive() {
  local stat
  kill -0 "$1" 2>/dev/null || return 1
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
  stat="${stat##*) }"
  [[ ${stat%% *} != Z ]]
}

# Reads a pid file; true if that process is alive. Prints the pid.
pid_from() {
  local pid
  [[ -f $1 ]] || return 1
  pid="$(<"$1")"
  [[ $pid =~ ^[0-9]+$ ]] && pid_alive "$pid" && echo "$pid"
}

tail_logs() {
  local f
  for f in "$@"; do
    [[ -s $f ]] || continue
    log "---- last lines of $f"
    tail -n 30 "$f" >&2
  done
}

# wait_for NAME PROBE_FN ALIVE_FN LOGFILE...: poll PROBE_FN once a second until it
# succeeds; give up after WAIT_SECS, or at once if ALIVE_FN says the process died.
wait_for() {
  local name=$1 probe=$2 alive=$3 deadline=$((SECONDS + WAIT_SECS))
  shift 3
  until "$probe"; do
    if ! "$alive"; then
      log "$name exited during startup"
      tail_logs "$@"
      die "$name failed to start"
    fi
    if ((SECONDS >= deadline)); then
      log "$name did not answer within ${WAIT_SECS}s"
      tail_logs "$@"
      die "$name not ready"
    fi
    sleep 1
  done
}

# Sends TERM, waits up to $2 s, then KILL.
kill_wait() {
  local pid=$1 secs=$2 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < secs * 5; i++)); do
    pid_alive "$pid" || return 0
    sleep 0.2
  done
  log "pid $pid still alive after ${secs}s, sending KILL"
  kill -KILL "$pid" 2>/dev/null || true
}

# Serialises install/start/stop (parallel test runners may call start at once).
# Daemons are launched with 9>&- so they do not inherit (and hold) this lock.
take_lock() {
  mkdir -p -m 755 "$STACK_DIR"
  exec 9>"$STACK_DIR/.lock"
  flock -w 600 9 || die "timed out waiting for another stack.sh (lock $STACK_DIR/.lock)"
}

# ---------------------------------------------------------------- install

pkg_installed() { [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]; }

install_packages() {
  local missing=()
  { pkg_installed postgresql && [[ -x $PG_BIN/initdb ]]; } || missing+=(postgresql)
  { pkg_installed redis-server && command -v redis-cli >/dev/null; } || missing+=(redis-server)
  command -v java >/dev/null || missing+=(default-jre-headless)
  command -v mvn >/dev/null || missing+=(maven)
  if ((${#missing[@]} == 0)); then return 0; fi

  ((EUID == 0)) || die "missing packages: ${missing[*]} (install them or run as root)"
  mkdir -p -m 755 "$STACK_DIR"
  local apt_log="$STACK_DIR/apt.log" policy=/usr/sbin/policy-rc.d
  log "installing ${missing[*]} via apt-get (log: $apt_log)"

  # policy-rc.d exit 101 = "do not start services": keeps the distro cluster (5432) and
  # the distro redis (6379) from grabbing our ports during the install.
  local own_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own_policy=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  # Lock timeout: on a fresh machine another apt-get (a boot-time update, prepare.sh) may hold
  # the dpkg lock for a while; without it apt-get fails at once.
  local rc=0 lock=(-o DPkg::Lock::Timeout=300)
  { apt-get "${lock[@]}" update -q && DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install \
      -y -q --no-install-recommends "${missing[@]}"; } >"$apt_log" 2>&1 || rc=$?
  if ((own_policy)); then rm -f "$policy"; trap - EXIT; fi
  if ((rc != 0)); then tail_logs "$apt_log"; die "apt-get failed"; fi

  disable_distro_services
}

# policy-rc.d is not honoured everywhere (e.g. systemd units started by other means);
# make sure the packaged services are stopped and will not come back at boot.
disable_distro_services() {
  if command -v pg_ctlcluster >/dev/null && [[ -d /etc/postgresql/15/main ]]; then
    pg_ctlcluster 15 main stop >/dev/null 2>&1 || true
    sed -i 's/^auto$/manual/' /etc/postgresql/15/main/start.conf 2>/dev/null || true
  fi
  if [[ -d /run/systemd/system ]]; then
    systemctl disable --now redis-server postgresql >/dev/null 2>&1 || true
  else
    service redis-server stop >/dev/null 2>&1 || true
    update-rc.d redis-server disable >/dev/null 2>&1 || true
  fi
}

kafka_version() { sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KAFKA_SRC/pom.xml"; }

# Kafka comes from Maven Central as jars (no tarball): copy the broker and its runtime
# dependencies into libs/. Downloaded into a temp dir first so an interrupted run never
# leaves a half-filled libs/ that looks complete.
install_kafka() {
  local version tmp
  version="$(kafka_version)"
  [[ -n $version ]] || die "cannot read <kafka.version> from $KAFKA_SRC/pom.xml"
  [[ -f $KAFKA_LIBS/kafka_2.13-$version.jar ]] && return 0

  mkdir -p "$KAFKA_LOGDIR"
  tmp="$KAFKA_DIR/libs.tmp"
  rm -rf "$tmp"
  log "downloading Kafka $version jars from Maven Central (log: $KAFKA_LOGDIR/mvn.log)"
  if ! mvn -q -B -f "$KAFKA_SRC/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp" >"$KAFKA_LOGDIR/mvn.log" 2>&1; then
    tail_logs "$KAFKA_LOGDIR/mvn.log"
    die "maven download of Kafka failed"
  fi
  [[ -f $tmp/kafka_2.13-$version.jar ]] || die "kafka_2.13-$version.jar missing after maven run"
  rm -rf "$KAFKA_LIBS"
  mv "$tmp" "$KAFKA_LIBS"
}

cmd_install() {
  install_packages
  install_kafka
}

# ---------------------------------------------------------------- postgres

# The postmaster refuses to run as root: run server-side commands as the postgres user.
as_pg() {
  # From /, so a working directory the postgres user cannot enter does not matter.
  if ((EUID == 0)); then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# First line of postmaster.pid is the postmaster's pid (the file outlives a crash).
pg_pid() {
  local pid
  [[ -f $PG_DATA/postmaster.pid ]] || return 1
  pid="$(head -n 1 "$PG_DATA/postmaster.pid")"
  [[ $pid =~ ^[0-9]+$ ]] && pid_alive "$pid" && echo "$pid"
}
pg_running() { pg_pid >/dev/null; }
pg_answers() { "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -t 2; }

# The real readiness check: the app role can log in over TCP with its password.
pg_app_ready() {
  [[ "$(PGPASSWORD="$APP_PASSWORD" PGCONNECT_TIMEOUT=5 psql -X -q -tA -h 127.0.0.1 -p "$PG_PORT" \
        -U "$APP_USER" -d "$APP_DB" -c 'select 1' 2>/dev/null)" == 1 ]]
}

pg_relocate() {
  [[ -L $STACK_DIR/postgres ]] && return 0
  mkdir -p "$STACK_DIR"
  if ((${#PG_SOCK} + 16 < 100)) && { ((EUID != 0)) || as_pg test -x "$STACK_DIR"; }; then
    return 0
  fi
  local target
  target="/var/lib/payments-stack/$(printf '%s' "$STACK_DIR" | cksum | cut -d' ' -f1)"
  log "postgres cannot use $STACK_DIR (untraversable or too deep); its data goes to $target"
  [[ -e $STACK_DIR/postgres ]] && die "$STACK_DIR/postgres exists; remove it first"
  mkdir -p -m 755 "$target"
  ln -s "$target" "$STACK_DIR/postgres"
  pg_paths
}

pg_init() {
  pg_relocate
  mkdir -p -m 755 "$PG_DIR" "$PG_DIR/log" "$PG_SOCK"
  if ((EUID == 0)); then chown postgres:postgres "$PG_DIR" "$PG_DIR/log" "$PG_SOCK"; fi
  as_pg test -w "$PG_DIR" ||
    die "user postgres cannot write $PG_DIR (is a parent directory not traversable?)"

  if [[ ! -f $PG_DATA/PG_VERSION ]]; then
    log "initdb $PG_DATA"
    # Local socket: trust (bootstrap as superuser). TCP: password (scram) for everyone.
    if ! as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256 >"$PG_DIR/log/initdb.log" 2>&1; then
      tail_logs "$PG_DIR/log/initdb.log"
      die "initdb failed"
    fi
    echo "include_if_exists = 'stack.conf'" | as_pg tee -a "$PG_DATA/postgresql.conf" >/dev/null
  fi

  # Rewritten on every start so changes here apply after a restart.
  as_pg tee "$PG_DATA/stack.conf" >/dev/null <<EOF
# Generated by scripts/stack.sh; do not edit.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_SOCK'
max_connections = 200
shared_buffers = 256MB
# Payment data: never trade durability for speed, not even in tests.
fsync = on
full_page_writes = on
password_encryption = scram-sha-256
EOF
}

# Idempotent: the owner login (migrations; CREATEDB for the test suite), one login per process
# kind (api, relay, settlement, webhooks, acquirer; grants in src/platform/database/service-grants.ts) and the database, passwords re-set
# every time. Local-development passwords: each login's password is its name.
pg_bootstrap() {
  psql -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres \
    -v database="$APP_DB" -v owner="$APP_USER" -v owner_password="$APP_PASSWORD" \
    -v api_password=payments_api -v relay_password=payments_relay \
    -v settlement_password=payments_settlement -v webhooks_password=payments_webhooks \
    -v acquirer_password=payments_acquirer \
    -f "$ROOT_DIR/scripts/db/create-roles.sql" >/dev/null
}

start_postgres() {
  pg_init
  if pg_running; then
    log "postgres already running (pid $(pg_pid))"
  else
    if port_open "$PG_PORT"; then
      die "port $PG_PORT is taken by another process (distro cluster? try: pg_ctlcluster 15 main stop)"
    fi
    log "starting postgres on 127.0.0.1:$PG_PORT"
    if ! as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t "$WAIT_SECS" -s start 9>&-; then
      tail_logs "$PG_LOG"
      die "postgres failed to start"
    fi
  fi
  wait_for postgres pg_answers pg_running "$PG_LOG"
  pg_bootstrap || die "creating the logins and database $APP_DB failed"
  wait_for postgres pg_app_ready pg_running "$PG_LOG"
}

stop_postgres() {
  if ! pg_running; then
    log "postgres already stopped"
    return 0
  fi
  log "stopping postgres"
  as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 60 -s stop 9>&- || die "pg_ctl stop failed"
}

# ---------------------------------------------------------------- redis

redis_pid() { pid_from "$REDIS_PID"; }
redis_running() { redis_pid >/dev/null; }
redis_answers() { [[ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" == PONG ]]; }
# redis writes its pid file only after binding, so "no pid file yet" is not "dead".
redis_alive() { [[ ! -f $REDIS_PID ]] || redis_running; }

# The service's Redis users (scripts/redis/acl-users.sh: payments_api with its key patterns and
# commands, payments for operators), rewritten on every start. The default user stays open
# (passwordless, every right) here, on loopback: the test suite and this script use it.
REDIS_ACL="$REDIS_DIR/users.acl"
redis_write_acl() {
  (umask 077 && sh "$ROOT_DIR/scripts/redis/acl-users.sh" >"$REDIS_ACL.tmp")
  mv "$REDIS_ACL.tmp" "$REDIS_ACL"
}

# A running Redis gets the users too (idempotent: each line resets its user first), whether it
# was started with the ACL file or, before it existed, without one.
redis_apply_acl() {
  local line rules
  while IFS= read -r line; do
    rules="${line#user }"
    # shellcheck disable=SC2086 # the rules are words; none holds a space
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ACL SETUSER $rules >/dev/null ||
      die "redis: ACL SETUSER ${rules%% *} failed"
  done <"$REDIS_ACL"
}

start_redis() {
  mkdir -p "$REDIS_DIR"
  redis_write_acl
  if redis_running; then
    log "redis already running (pid $(redis_pid))"
  else
    if port_open "$REDIS_PORT"; then
      die "port $REDIS_PORT is taken by another process (distro redis? try: service redis-server stop)"
    fi
    rm -f "$REDIS_PID"
    log "starting redis on 127.0.0.1:$REDIS_PORT"
    # No config file: everything on the command line (the users in the ACL file); cache only, no
    # persistence.
    redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" \
      --dir "$REDIS_DIR" --pidfile "$REDIS_PID" --logfile "$REDIS_LOG" \
      --save "" --appendonly no --aclfile "$REDIS_ACL" >/dev/null 9>&- ||
      die "redis-server failed to start"
  fi
  wait_for redis redis_answers redis_alive "$REDIS_LOG"
  redis_apply_acl
}

stop_redis() {
  local pid
  if ! pid="$(redis_pid)"; then
    log "redis already stopped"
    rm -f "$REDIS_PID"
    return 0
  fi
  log "stopping redis"
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  kill_wait "$pid" 10   # no-op if shutdown already ended it
  rm -f "$REDIS_PID"
}

# ---------------------------------------------------------------- kafka

# Runs a Kafka CLI class (bounded in time, errors-only logging).
kafka_tool() {
  timeout 60 java -Xmx256m -Dlog4j.configuration="file:$KAFKA_SRC/tools-log4j.properties" \
    -cp "$KAFKA_LIBS/*" "$@"
}

# The Kafka JVM whose pid file is $1, if it is alive; prints the pid. The command line is checked
# against pid reuse after a crash or reboot.
kafka_jvm_pid() {
  local pid
  pid="$(pid_from "$1")" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'kafka\.Kafka' || return 1
  echo "$pid"
}

kafka_pid() { kafka_jvm_pid "$KAFKA_PID"; }
kafka_running() { kafka_pid >/dev/null; }
kafka_alive() { [[ ! -f $KAFKA_PID ]] || kafka_running; }

# Real metadata round trip (ListTopics); port check first to avoid a JVM start per second.
kafka_answers() {
  port_open "$KAFKA_PORT" &&
    kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$KAFKA_PORT" \
      --command-config "$KAFKA_SRC/probe-client.properties" --list >/dev/null 2>&1
}

kafka_render_conf() {
  sed -e "s|@PORT@|$KAFKA_PORT|g" \
      -e "s|@CONTROLLER_PORT@|$KAFKA_CONTROLLER_PORT|g" \
      -e "s|@DATA_DIR@|$KAFKA_DATA|g" \
      "$KAFKA_SRC/server.properties.template" >"$KAFKA_CONF"
}

# KRaft needs its storage formatted with a cluster id exactly once.
kafka_format() {
  [[ -f $KAFKA_DATA/meta.properties ]] && return 0
  local id
  id="$(kafka_tool kafka.tools.StorageTool random-uuid)" || die "StorageTool random-uuid failed"
  log "formatting Kafka storage (cluster id $id)"
  kafka_tool kafka.tools.StorageTool format -t "$id" -c "$KAFKA_CONF" \
    >>"$KAFKA_LOGDIR/format.log" 2>&1 || { tail_logs "$KAFKA_LOGDIR/format.log"; die "kafka format failed"; }
}

start_kafka() {
  mkdir -p "$KAFKA_DATA" "$KAFKA_LOGDIR"
  if kafka_running; then
    log "kafka already running (pid $(kafka_pid))"
  else
    local p
    for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
      if port_open "$p"; then die "port $p is taken by another process"; fi
    done
    kafka_render_conf
    kafka_format
    rm -f "$KAFKA_PID"
    log "starting kafka on 127.0.0.1:$KAFKA_PORT (controller $KAFKA_CONTROLLER_PORT)"
    # setsid + nohup: own session, survives the calling shell/CI step. The inner bash
    # records its own pid and then exec's java, so the pid file holds the JVM's pid.
    setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$KAFKA_PID" \
      java -Xms256m -Xmx512m -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
      -Dkafka.logs.dir="$KAFKA_LOGDIR" -Dlog4j.configuration="file:$KAFKA_SRC/log4j.properties" \
      -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_CONF" \
      </dev/null >>"$KAFKA_LOGDIR/kafka.out" 2>&1 9>&- &
  fi
  wait_for kafka kafka_answers kafka_alive "$KAFKA_LOGDIR/kafka.out" "$KAFKA_LOGDIR/server.log"
}

stop_kafka() {
  local pid
  if ! pid="$(kafka_pid)"; then
    log "kafka already stopped"
    rm -f "$KAFKA_PID"
    return 0
  fi
  log "stopping kafka (pid $pid)"
  kill_wait "$pid" "$KAFKA_STOP_SECS"
  rm -f "$KAFKA_PID"
}

# ---------------------------------------------------------------- kafka3 (three nodes)

# Node $1 (1-3): broker port base+$1-1, controller port base+2+$1.
k3_port() { echo $((KAFKA3_PORT_BASE + $1 - 1)); }
k3_controller_port() { echo $((KAFKA3_PORT_BASE + 2 + $1)); }
k3_dir() { echo "$KAFKA3_DIR/node-$1"; }
k3_brokers() {
  local n list=()
  for n in "${KAFKA3_NODES[@]}"; do list+=("127.0.0.1:$(k3_port "$n")"); done
  (IFS=,; echo "${list[*]}")
}

k3_pid() { kafka_jvm_pid "$(k3_dir "$1")/kafka.pid"; }

# The cluster answers metadata requests through any node (the quorum has a leader).
k3_answers() {
  local n
  for n in "${KAFKA3_NODES[@]}"; do port_open "$(k3_port "$n")" || return 1; done
  kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(k3_brokers)" \
    --command-config "$KAFKA_SRC/probe-client.properties" --list >/dev/null 2>&1
}
# A node's broker port opens only once the controller has unfenced it (KRaft), so when the
# cluster was already up, every port open means the restarted node is back in service. No JVM
# probe: on a CPU-starved machine one takes longer than a broker restart.
k3_ports_open() {
  local n
  for n in "${KAFKA3_NODES[@]}"; do port_open "$(k3_port "$n")" || return 1; done
}
k3_alive() {
  local n
  for n in "${KAFKA3_NODES[@]}"; do
    [[ ! -f "$(k3_dir "$n")/kafka.pid" ]] || k3_pid "$n" >/dev/null || return 1
  done
}

start_kafka3() {
  local n dir voters=() id p was_up=0
  for n in "${KAFKA3_NODES[@]}"; do voters+=("$n@127.0.0.1:$(k3_controller_port "$n")"); done
  mkdir -p "$KAFKA3_DIR"
  # One cluster id for the three nodes, chosen once.
  if [[ ! -s $KAFKA3_DIR/cluster.id ]]; then
    kafka_tool kafka.tools.StorageTool random-uuid >"$KAFKA3_DIR/cluster.id" ||
      die "StorageTool random-uuid failed"
  fi
  id="$(<"$KAFKA3_DIR/cluster.id")"
  for n in "${KAFKA3_NODES[@]}"; do
    dir="$(k3_dir "$n")"
    mkdir -p "$dir/data" "$dir/log"
    if k3_pid "$n" >/dev/null; then
      log "kafka3 node $n already running (pid $(k3_pid "$n"))"
      was_up=1
      continue
    fi
    for p in "$(k3_port "$n")" "$(k3_controller_port "$n")"; do
      if port_open "$p"; then die "port $p is taken by another process"; fi
    done
    sed -e "s|@NODE_ID@|$n|g" -e "s|@PORT@|$(k3_port "$n")|g" \
        -e "s|@CONTROLLER_PORT@|$(k3_controller_port "$n")|g" \
        -e "s|@VOTERS@|$(IFS=,; echo "${voters[*]}")|g" -e "s|@DATA_DIR@|$dir/data|g" \
        "$KAFKA_SRC/server3.properties.template" >"$dir/server.properties"
    if [[ ! -f $dir/data/meta.properties ]]; then
      kafka_tool kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" \
        >>"$dir/log/format.log" 2>&1 || { tail_logs "$dir/log/format.log"; die "kafka3 format failed"; }
    fi
    rm -f "$dir/kafka.pid"
    log "starting kafka3 node $n on 127.0.0.1:$(k3_port "$n") (controller $(k3_controller_port "$n"))"
    setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$dir/kafka.pid" \
      java -Xms128m -Xmx384m -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
      -Dkafka.logs.dir="$dir/log" -Dlog4j.configuration="file:$KAFKA_SRC/log4j.properties" \
      -cp "$KAFKA_LIBS/*" kafka.Kafka "$dir/server.properties" \
      </dev/null >>"$dir/log/kafka.out" 2>&1 9>&- &
  done
  if ((was_up)); then
    wait_for kafka3 k3_ports_open k3_alive "$KAFKA3_DIR"/node-*/log/kafka.out
  else
    wait_for kafka3 k3_answers k3_alive "$KAFKA3_DIR"/node-*/log/kafka.out
  fi
}

stop_kafka3() {
  local n pid
  for n in "${KAFKA3_NODES[@]}"; do
    if pid="$(k3_pid "$n")"; then
      log "stopping kafka3 node $n (pid $pid)"
      kill_wait "$pid" "$KAFKA_STOP_SECS"
    fi
    rm -f "$(k3_dir "$n")/kafka.pid"
  done
}

# ---------------------------------------------------------------- commands

status_line() {
  local name=$1 port=$2 pid=$3 answers=$4 state
  if [[ -z $pid ]]; then state=stopped
  elif $answers; then state=running
  else state="not-answering"
  fi
  printf '%-9s %-14s 127.0.0.1:%-6s %s\n' "$name" "$state" "$port" "${pid:+pid $pid}"
  [[ $state == running ]]
}

status_one() {
  case "$1" in
    postgres) status_line postgres "$PG_PORT" "$(pg_pid || true)" pg_answers ;;
    redis) status_line redis "$REDIS_PORT" "$(redis_pid || true)" redis_answers ;;
    kafka) status_line kafka "$KAFKA_PORT" "$(kafka_pid || true)" 'port_open '"$KAFKA_PORT" ;;
    kafka3)
      local n rc=0
      for n in "${KAFKA3_NODES[@]}"; do
        status_line "kafka3-$n" "$(k3_port "$n")" "$(k3_pid "$n" || true)" \
          'port_open '"$(k3_port "$n")" || rc=3
      done
      return "$rc"
      ;;
  esac
}

cmd_status() {
  local svc rc=0
  for svc in "$@"; do status_one "$svc" || rc=3; done
  return "$rc"
}

# The local key ring of webhook signing secrets (SECRETS_KEYS_FILE, DESIGN 113): one random key,
# made once (mode 0600, by mktemp) and kept with the stack's data; `ln` publishes it atomically,
# so two stack.sh runs at once keep the first one's. Deleting it makes the local secrets unreadable.
secrets_keys_file() {
  local file="$STACK_DIR/secrets-keys" tmp
  if [[ ! -s $file ]]; then
    mkdir -p -m 755 "$STACK_DIR"
    tmp="$(mktemp "$STACK_DIR/.secrets-keys.XXXXXX")"
    printf 'local1:%s\n' "$(head -c 32 /dev/urandom | base64 -w0)" >"$tmp"
    ln "$tmp" "$file" 2>/dev/null || true
    rm -f "$tmp"
  fi
  echo "$file"
}

cmd_env() {
  local base="127.0.0.1:$PG_PORT/$APP_DB" role
  # DATABASE_URL is the owner: migrations, the test suite (it creates databases) and the
  # all-in-one dev process (`npm run up`, which allows the privileged login). Each process kind
  # has its own login: e.g. DATABASE_URL=$API_DATABASE_URL npm run start:api.
  echo "export DATABASE_URL=postgres://$APP_USER:$APP_PASSWORD@$base"
  echo "export MIGRATION_DATABASE_URL=postgres://$APP_USER:$APP_PASSWORD@$base"
  for role in api relay settlement webhooks acquirer; do
    echo "export ${role^^}_DATABASE_URL=postgres://payments_$role:payments_$role@$base"
  done
  # REDIS_URL is the passwordless default user (the test suite, `npm run up`); only the API uses
  # Redis, on its own user: REDIS_URL=$API_REDIS_URL npm run start:api. The other roles get none.
  echo "export REDIS_URL=redis://127.0.0.1:$REDIS_PORT"
  echo "export API_REDIS_URL=redis://payments_api:payments_api@127.0.0.1:$REDIS_PORT"
  echo "export SECRETS_KEYS_FILE=$(secrets_keys_file)"
  # The bearer token between settlement and the acquirer role (DESIGN 121): the development one,
  # which NODE_ENV=production refuses (src/platform/config/acquirer-link-settings.ts).
  echo "export ACQUIRER_TOKEN=dev-acquirer-token-not-secret"
  if [[ " ${SERVICES[*]} " == *" kafka3 "* ]]; then
    echo "export KAFKA_BROKERS=$(k3_brokers)"
  else
    echo "export KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT"
  fi
}

# The main process of each service (postgres: the postmaster; kafka3: one line per node, in
# node order, "-" for a node that is down). For fault injection: signal these, not names.
cmd_pid() {
  local svc n pid found=0
  for svc in "$@"; do
    case "$svc" in
      postgres) pid="$(pg_pid)" && { echo "$pid"; found=1; } ;;
      redis) pid="$(redis_pid)" && { echo "$pid"; found=1; } ;;
      kafka) pid="$(kafka_pid)" && { echo "$pid"; found=1; } ;;
      kafka3)
        for n in "${KAFKA3_NODES[@]}"; do
          if pid="$(k3_pid "$n")"; then echo "$pid"; found=1; else echo -; fi
        done
        ;;
    esac
  done
  ((found)) || return 3
}

# Normalises service arguments (none = all) into SERVICES.
parse_services() {
  SERVICES=()
  if (($# == 0)); then SERVICES=("${ALL_SERVICES[@]}"); return 0; fi
  local s
  for s in "$@"; do
    case "$s" in
      postgres | postgresql | pg) SERVICES+=(postgres) ;;
      redis) SERVICES+=(redis) ;;
      kafka) SERVICES+=(kafka) ;;
      kafka3) SERVICES+=(kafka3) ;;
      *) die "unknown service '$s' (postgres|redis|kafka|kafka3)" ;;
    esac
  done
}

usage() {
  echo "usage: $0 install|start|stop|status|env|pid [postgres|redis|kafka|kafka3 ...]" >&2
  exit 2
}

main() {
  (($# >= 1)) || usage
  local cmd=$1 svc t0=$SECONDS
  shift
  parse_services "$@"
  case "$cmd" in
    install)
      take_lock
      cmd_install
      ;;
    start)
      take_lock
      cmd_install
      for svc in "${SERVICES[@]}"; do "start_$svc"; done
      log "ready in $((SECONDS - t0))s"
      cmd_status "${ALL_SERVICES[@]}" || true
      if [[ " ${SERVICES[*]} " == *" kafka3 "* ]]; then cmd_status kafka3 || true; fi
      ;;
    stop)
      take_lock
      # Reverse dependency order: kafka first, postgres last.
      for svc in kafka3 kafka redis postgres; do
        if [[ " ${SERVICES[*]} " == *" $svc "* ]]; then "stop_$svc"; fi
      done
      ;;
    status) cmd_status "${SERVICES[@]}" ;;
    env) cmd_env ;;
    pid)
      (($# >= 1)) || usage
      cmd_pid "${SERVICES[@]}"
      ;;
    -h | --help | help) usage ;;
    *) usage ;;
  esac
}

if [[ ${STACK_TOPOLOGY:-single} == ha ]]; then
  # shellcheck source=scripts/ha/stack-ha.sh
  source "$ROOT_DIR/scripts/ha/stack-ha.sh"
  ha_main "$@"
elif [[ ${STACK_TOPOLOGY:-single} == single ]]; then
  main "$@"
else
  die "STACK_TOPOLOGY must be single or ha, not '${STACK_TOPOLOGY}'"
fi
