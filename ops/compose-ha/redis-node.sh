#!/bin/sh
# docker-compose.yml's redis-1 (primary) and redis-2 (replica, HA_REDIS_REPLICA_OF=redis-1), in
# the redis:7 image: TLS only (port 6379, no clear-text port), replication over TLS, the ACL users
# of scripts/redis/acl-users.sh (DESIGN 117; the default user may only PING). The replica logs in
# to the primary as the operators' user `payments`. No persistence: Redis only spares the database
# work (DESIGN 13). The image's entrypoint chowns /data and drops to the redis user. POSIX sh.
set -eu

name=${HA_REDIS_NAME:?}
umask 077
sh /payments-redis/acl-users.sh >/data/users.acl
set -- redis-server --port 0 --tls-port 6379 \
  --tls-cert-file /tls/server.pem --tls-key-file /tls/server.key --tls-ca-cert-file /tls/ca.pem \
  --tls-auth-clients no --tls-replication yes \
  --aclfile /data/users.acl --save '' --appendonly no \
  --replica-announce-ip "$name" \
  --masteruser payments --masterauth "${PAYMENTS_REDIS_ADMIN_PASSWORD:-payments}"
if [ -n "${HA_REDIS_REPLICA_OF:-}" ]; then
  set -- "$@" --replicaof "$HA_REDIS_REPLICA_OF" 6379
fi
exec docker-entrypoint.sh "$@"
