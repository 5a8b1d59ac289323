#!/usr/bin/env bash
# The HA topology's Redis configuration files (sourced by redis-ha.sh): each node's and each
# Sentinel's file is written once and then left to the server, because Sentinel rewrites both
# (a failover moves `replicaof`, the Sentinels record the primary they agree on).
# shellcheck disable=SC2034 # redis-ha.sh reads these

REDIS_HA_DIR="$HA_DIR/redis"
REDIS_HA_MASTER=payments
# Development passwords (as the single-node stack's: known to every reader, refused in
# production by the service's config where it sees them).
REDIS_HA_ADMIN_PASSWORD="${PAYMENTS_REDIS_ADMIN_PASSWORD:-payments}"
REDIS_HA_API_PASSWORD="${PAYMENTS_REDIS_API_PASSWORD:-payments_api}"
REDIS_HA_REPLICA_PASSWORD="${PAYMENTS_REDIS_REPLICA_PASSWORD:-payments_replica}"
REDIS_HA_SENTINEL_USER_PASSWORD="${PAYMENTS_REDIS_SENTINEL_USER_PASSWORD:-payments_sentinel}"
# The Sentinels' own password (requirepass): the API's REDIS_SENTINEL_PASSWORD.
REDIS_HA_SENTINEL_PASSWORD="${PAYMENTS_REDIS_SENTINEL_PASSWORD:-payments_sentinels}"

redis_ha_node_port() { ha_port $((7378 + $1)); }     # node 1: 7379, node 2: 7380
redis_ha_sentinel_port() { ha_port $((7380 + $1)); } # 7381..7383
redis_ha_cluster_port() { ha_port $((7390 + $1)); }  # 7391..7393

# TLS only: no plaintext port; clients are not asked for certificates, they log in by password.
redis_ha_tls_lines() {
  cat <<CONF
bind 127.0.0.1
port 0
tls-port $1
tls-cert-file $TLS_DIR/server.pem
tls-key-file $TLS_DIR/server.key
tls-ca-cert-file $TLS_DIR/ca.pem
tls-auth-clients no
tls-replication yes
daemonize yes
dir $2
pidfile $2/redis.pid
logfile $2/redis.log
CONF
}

# The users of a data node: scripts/redis/acl-users.sh's (the default user off), the replica's
# login to its primary, and the Sentinels' (the commands Redis' Sentinel documentation lists).
redis_ha_write_acl() {
  (
    umask 077
    PAYMENTS_REDIS_DEFAULT_USER=off PAYMENTS_REDIS_ADMIN_PASSWORD="$REDIS_HA_ADMIN_PASSWORD" \
      PAYMENTS_REDIS_API_PASSWORD="$REDIS_HA_API_PASSWORD" sh "$ROOT_DIR/scripts/redis/acl-users.sh"
    echo "user payments_replica reset on >$REDIS_HA_REPLICA_PASSWORD -@all +psync +replconf +ping"
    echo "user payments_sentinel reset on >$REDIS_HA_SENTINEL_USER_PASSWORD resetchannels &__sentinel__:hello -@all +multi +slaveof +ping +exec +subscribe +config|rewrite +role +publish +info +client|setname +client|kill +script|kill"
  ) >"$1.tmp"
  mv "$1.tmp" "$1"
}

# A data node's directory and users file (rewritten at every start), and its config file once:
# TLS, cache only (no persistence), the users file, then the lines on stdin.
redis_ha_data_conf() {
  local dir=$1 port=$2 conf=$1/redis.conf
  mkdir -p "$dir"
  redis_ha_write_acl "$dir/users.acl"
  if [[ -s $conf ]]; then cat >/dev/null; return 0; fi
  {
    redis_ha_tls_lines "$port" "$dir"
    printf 'save ""\nappendonly no\naclfile %s\n' "$dir/users.acl"
    cat
  } >"$conf.tmp"
  mv "$conf.tmp" "$conf"
}

# Node N: a primary (1) or a replica of node 1 (2), logging in to its primary as payments_replica.
redis_ha_node_conf() {
  {
    printf 'masteruser payments_replica\nmasterauth %s\nreplica-announce-ip 127.0.0.1\n' \
      "$REDIS_HA_REPLICA_PASSWORD"
    (($1 == 1)) || echo "replicaof 127.0.0.1 $(redis_ha_node_port 1)"
  } | redis_ha_data_conf "$REDIS_HA_DIR/node$1" "$(redis_ha_node_port "$1")"
}

# Sentinel N's file (it rewrites it: its own, written once): monitors node 1 under `payments`,
# quorum 2, a primary silent for 2 s is down, logs in to the nodes as payments_sentinel.
redis_ha_sentinel_conf() {
  local n=$1 dir="$REDIS_HA_DIR/sentinel$1" conf="$REDIS_HA_DIR/sentinel$1/sentinel.conf"
  mkdir -p "$dir"
  [[ -s $conf ]] && return 0
  {
    redis_ha_tls_lines "$(redis_ha_sentinel_port "$n")" "$dir"
    cat <<CONF
requirepass $REDIS_HA_SENTINEL_PASSWORD
sentinel sentinel-pass $REDIS_HA_SENTINEL_PASSWORD
sentinel announce-ip 127.0.0.1
sentinel monitor $REDIS_HA_MASTER 127.0.0.1 $(redis_ha_node_port 1) 2
sentinel down-after-milliseconds $REDIS_HA_MASTER 2000
sentinel failover-timeout $REDIS_HA_MASTER 6000
sentinel parallel-syncs $REDIS_HA_MASTER 1
sentinel auth-user $REDIS_HA_MASTER payments_sentinel
sentinel auth-pass $REDIS_HA_MASTER $REDIS_HA_SENTINEL_USER_PASSWORD
CONF
  } >"$conf.tmp"
  mv "$conf.tmp" "$conf"
}

# Cluster master N: TLS on the client port and on the cluster bus (port + 10000), no replicas.
redis_ha_cluster_conf() {
  local dir="$REDIS_HA_DIR/cluster$1"
  redis_ha_data_conf "$dir" "$(redis_ha_cluster_port "$1")" <<CONF
tls-cluster yes
cluster-enabled yes
cluster-config-file $dir/nodes.conf
cluster-node-timeout 5000
cluster-announce-ip 127.0.0.1
CONF
}
