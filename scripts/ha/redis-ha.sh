#!/usr/bin/env bash
# The HA topology's Redis (sourced by stack-ha.sh), TLS only, ACL users, the default user off
# (DESIGN 123):
#   nodes 1 (7379) and 2 (7380): a primary and its replica (at first; Sentinel moves the roles)
#   Sentinels 1-3 (7381-7383): monitor `payments`, quorum 2, down after 2 s
#   Cluster masters 1-3 (7391-7393): a three-master Redis Cluster (no replicas), made once
# Files under $HA_DIR/redis (redis-ha-conf.sh writes them).

# shellcheck source=scripts/ha/redis-ha-conf.sh
source "$ROOT_DIR/scripts/ha/redis-ha-conf.sh"

# redis-cli on port $1 over TLS as the operators' user (the default user is off).
redis_ha_cli() {
  local port=$1
  shift
  timeout 10 redis-cli --tls --cacert "$TLS_DIR/ca.pem" -h 127.0.0.1 -p "$port" \
    --user payments --pass "$REDIS_HA_ADMIN_PASSWORD" --no-auth-warning "$@"
}
redis_ha_sentinel_cli() {
  local port=$1
  shift
  timeout 10 redis-cli --tls --cacert "$TLS_DIR/ca.pem" -h 127.0.0.1 -p "$port" \
    --pass "$REDIS_HA_SENTINEL_PASSWORD" --no-auth-warning "$@"
}

# One server: its directory, config file, port and whether it is a Sentinel.
redis_ha_start_one() {
  local name=$1 dir=$2 conf=$3 port=$4 sentinel=${5:-} pid
  if pid="$(pid_from "$dir/redis.pid")"; then
    log "$name already running (pid $pid)"
    return 0
  fi
  port_open "$port" && die "port $port is taken by another process ($name)"
  rm -f "$dir/redis.pid"
  log "starting $name on 127.0.0.1:$port (TLS)"
  redis-server "$conf" ${sentinel:+--sentinel} >/dev/null 9>&- || die "$name failed to start"
  REDIS_HA_WAIT_PORT=$port REDIS_HA_WAIT_DIR=$dir REDIS_HA_WAIT_SENTINEL=$sentinel \
    wait_for "$name" redis_ha_answers redis_ha_alive "$dir/redis.log"
}
redis_ha_answers() {
  local reply
  if [[ -n $REDIS_HA_WAIT_SENTINEL ]]; then
    reply="$(redis_ha_sentinel_cli "$REDIS_HA_WAIT_PORT" ping 2>/dev/null)"
  else
    reply="$(redis_ha_cli "$REDIS_HA_WAIT_PORT" ping 2>/dev/null)"
  fi
  [[ $reply == PONG ]]
}
# redis writes its pid file only after binding, so "no pid file yet" is not "dead".
redis_ha_alive() { [[ ! -f $REDIS_HA_WAIT_DIR/redis.pid ]] || pid_from "$REDIS_HA_WAIT_DIR/redis.pid" >/dev/null; }

redis_ha_start() {
  command -v redis-server >/dev/null || die "redis-server is missing (scripts/stack.sh start installs it)"
  local n
  for n in 1 2; do
    redis_ha_node_conf "$n"
    redis_ha_start_one "redis node $n" "$REDIS_HA_DIR/node$n" "$REDIS_HA_DIR/node$n/redis.conf" \
      "$(redis_ha_node_port "$n")"
    # A running node gets the users file again (a restart would too).
    redis_ha_cli "$(redis_ha_node_port "$n")" ACL LOAD >/dev/null || die "redis node $n: ACL LOAD failed"
  done
  for n in 1 2 3; do
    redis_ha_sentinel_conf "$n"
    redis_ha_start_one "redis sentinel $n" "$REDIS_HA_DIR/sentinel$n" \
      "$REDIS_HA_DIR/sentinel$n/sentinel.conf" "$(redis_ha_sentinel_port "$n")" sentinel
  done
  for n in 1 2 3; do
    redis_ha_cluster_conf "$n"
    redis_ha_start_one "redis cluster $n" "$REDIS_HA_DIR/cluster$n" \
      "$REDIS_HA_DIR/cluster$n/redis.conf" "$(redis_ha_cluster_port "$n")"
    redis_ha_cli "$(redis_ha_cluster_port "$n")" ACL LOAD >/dev/null || die "redis cluster $n: ACL LOAD failed"
  done
  redis_ha_cluster_create
  redis_ha_wait_replication
}

# Made once: the first start assigns the slots (a restarted node keeps them in nodes.conf).
redis_ha_cluster_create() {
  local first state
  first="$(redis_ha_cluster_port 1)"
  if [[ "$(redis_ha_cli "$first" CLUSTER INFO | tr -d '\r' | grep '^cluster_slots_assigned:')" != "cluster_slots_assigned:16384" ]]; then
    log "creating the redis cluster (3 masters)"
    redis_ha_cli "$first" --cluster create "127.0.0.1:$first" "127.0.0.1:$(redis_ha_cluster_port 2)" \
      "127.0.0.1:$(redis_ha_cluster_port 3)" --cluster-yes >"$REDIS_HA_DIR/cluster-create.log" 2>&1 ||
      { tail_logs "$REDIS_HA_DIR/cluster-create.log"; die "redis-cli --cluster create failed"; }
  fi
  local deadline=$((SECONDS + WAIT_SECS))
  until state="$(redis_ha_cli "$first" CLUSTER INFO | tr -d '\r' | grep '^cluster_state:')" &&
    [[ $state == cluster_state:ok ]]; do
    ((SECONDS < deadline)) || die "redis cluster not ok within ${WAIT_SECS}s ($state)"
    sleep 1
  done
}

# The primary Sentinel names, as host:port (empty when no Sentinel answers).
redis_ha_primary_address() {
  local n reply
  for n in 1 2 3; do
    reply="$(redis_ha_sentinel_cli "$(redis_ha_sentinel_port "$n")" SENTINEL \
      get-master-addr-by-name "$REDIS_HA_MASTER" 2>/dev/null | tr -d '\r' | paste -sd:)" || continue
    [[ $reply == *:* ]] && { echo "$reply"; return 0; }
  done
  return 1
}

# Ready when the primary has a connected replica and the Sentinels know each other.
redis_ha_wait_replication() {
  local deadline=$((SECONDS + WAIT_SECS)) primary sentinels
  while :; do
    primary="$(redis_ha_primary_address || true)"
    sentinels="$(redis_ha_sentinel_cli "$(redis_ha_sentinel_port 1)" SENTINEL master \
      "$REDIS_HA_MASTER" 2>/dev/null | tr -d '\r' | grep -A1 '^num-other-sentinels$' | tail -1)"
    if [[ -n $primary && $sentinels == 2 ]] &&
      redis_ha_cli "${primary##*:}" INFO replication | tr -d '\r' | grep -q '^connected_slaves:1$'; then
      return 0
    fi
    ((SECONDS < deadline)) || die "redis: no replicated primary known to 3 Sentinels within ${WAIT_SECS}s"
    sleep 1
  done
}

redis_ha_stop() {
  local pid dir
  for dir in "$REDIS_HA_DIR"/sentinel{1,2,3} "$REDIS_HA_DIR"/node{1,2} "$REDIS_HA_DIR"/cluster{1,2,3}; do
    if pid="$(pid_from "$dir/redis.pid")"; then
      log "stopping redis ${dir##*/} (pid $pid)"
      kill_wait "$pid" 10
    fi
    rm -f "$dir/redis.pid"
  done
}

redis_ha_status() {
  local n rc=0 primary
  primary="$(redis_ha_primary_address || true)"
  for n in 1 2; do
    redis_ha_status_line "redis-node-$n" "$(redis_ha_node_port "$n")" "$REDIS_HA_DIR/node$n" || rc=3
  done
  for n in 1 2 3; do
    redis_ha_status_line "redis-sentinel-$n" "$(redis_ha_sentinel_port "$n")" "$REDIS_HA_DIR/sentinel$n" || rc=3
  done
  for n in 1 2 3; do
    redis_ha_status_line "redis-cluster-$n" "$(redis_ha_cluster_port "$n")" "$REDIS_HA_DIR/cluster$n" || rc=3
  done
  printf '%-18s %s\n' "redis-primary" "${primary:-unknown}"
  return "$rc"
}
redis_ha_status_line() {
  local pid state=stopped
  pid="$(pid_from "$3/redis.pid" || true)"
  [[ -n $pid ]] && state=running
  printf '%-18s %-8s 127.0.0.1:%-6s %s\n' "$1" "$state" "$2" "${pid:+pid $pid}"
  [[ $state == running ]]
}

redis_ha_env() {
  local port api admin sentinels n
  port="$(redis_ha_node_port 1)"
  api="rediss://payments_api:$REDIS_HA_API_PASSWORD@127.0.0.1:$port"
  admin="rediss://payments:$REDIS_HA_ADMIN_PASSWORD@127.0.0.1:$port"
  sentinels="$(for n in 1 2 3; do printf '127.0.0.1:%s\n' "$(redis_ha_sentinel_port "$n")"; done | paste -sd,)"
  echo "export REDIS_URL=$admin"
  echo "export API_REDIS_URL=$api"
  echo "export REDIS_SENTINELS=$sentinels"
  echo "export REDIS_SENTINEL_MASTER=$REDIS_HA_MASTER"
  echo "export REDIS_SENTINEL_PASSWORD=$REDIS_HA_SENTINEL_PASSWORD"
  echo "export REDIS_TLS_CA_FILE=$TLS_DIR/ca.pem"
  echo "export REDIS_CLUSTER_TEST_NODES=$(for n in 1 2 3; do printf '127.0.0.1:%s\n' "$(redis_ha_cluster_port "$n")"; done | paste -sd,)"
}

# redis-node N | redis-primary | redis-sentinel N  ->  one pid (exit 3 if not running).
redis_ha_pid() {
  local dir port n
  case "$1" in
    redis-node) dir="$REDIS_HA_DIR/node${2:?redis-node N}" ;;
    redis-sentinel) dir="$REDIS_HA_DIR/sentinel${2:?redis-sentinel N}" ;;
    redis-cluster) dir="$REDIS_HA_DIR/cluster${2:?redis-cluster N}" ;;
    redis-primary)
      port="$(redis_ha_primary_address)" || return 3
      port="${port##*:}"
      for n in 1 2; do [[ $port == "$(redis_ha_node_port "$n")" ]] && dir="$REDIS_HA_DIR/node$n"; done
      [[ -n ${dir:-} ]] || return 3
      ;;
    *) return 2 ;;
  esac
  pid_from "$dir/redis.pid" || return 3
}
