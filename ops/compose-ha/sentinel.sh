#!/bin/sh
# docker-compose.yml's sentinel-1..3 (profile ha), in the redis:7 image: a Sentinel watching the
# master `payments` (redis-1 at first; quorum 2 of 3), over TLS, logging in to the data nodes as
# the operators' user `payments`. Host names, not addresses, are announced, so clients verify the
# certificate against them. The configuration is written on the first start only: Sentinel
# rewrites it with what it learns (the current primary after a failover). POSIX sh.
set -eu

name=${HA_SENTINEL_NAME:?}
password=${PAYMENTS_REDIS_ADMIN_PASSWORD:-payments}
if [ ! -s /data/sentinel.conf ]; then
  cat >/data/sentinel.conf <<CONF
port 0
tls-port 26379
tls-cert-file /tls/server.pem
tls-key-file /tls/server.key
tls-ca-cert-file /tls/ca.pem
tls-auth-clients no
tls-replication yes
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel announce-ip $name
sentinel monitor payments redis-1 6379 2
sentinel auth-user payments payments
sentinel auth-pass payments $password
sentinel down-after-milliseconds payments 5000
sentinel failover-timeout payments 30000
sentinel parallel-syncs payments 1
CONF
fi
exec docker-entrypoint.sh redis-server /data/sentinel.conf --sentinel
