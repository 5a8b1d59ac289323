#!/bin/sh
# Prints the Redis users of the payment service, one ACL-file line each (Redis 7 ACL). The one
# place their rights are written: scripts/stack.sh loads them into the native Redis at every
# start, docker-compose.yml's redis service writes them to its --aclfile, and the tests give a
# per-file user the API's line (test/support/redis-user.ts). POSIX sh: it runs in the redis:7 image.
#
# Only the API uses Redis (idempotency response cache and key locks, rate limits), so payments_api
# is the only role user; the relay, settlement, webhooks and acquirer get no Redis URL at all.
# It may touch only <prefix>idem:* and <prefix>rl:*, and run only what the API sends
# (src/apps/api/redis-needs.ts; test/unit/redis-acl.test.ts keeps the two equal): GET and SET, the
# scripts (EVALSHA, EVAL on NOSCRIPT) and the commands inside them, PING and INFO for readiness,
# CLUSTER INFO and CLUSTER SLOTS (a Cluster client's ready check and slot map, DESIGN 123).
# No KEYS, FLUSHALL, CONFIG, ACL, SCRIPT, no pub/sub.
#
# Environment (development defaults: a user's password is its name, as for the database logins;
# NODE_ENV=production refuses them in REDIS_URL):
#   REDIS_KEY_PREFIX                the service's REDIS_KEY_PREFIX (payments:)
#   PAYMENTS_REDIS_API_PASSWORD     payments_api's password (payments_api)
#   PAYMENTS_REDIS_ADMIN_PASSWORD   payments' password (payments): every right, for operators
#   PAYMENTS_REDIS_DEFAULT_USER     open: the passwordless default user keeps every right (the
#                                   native stack: the test suite and stack.sh use it); ping: it
#                                   may only PING (compose: the healthcheck), nothing else;
#                                   off: disabled (the HA topology, scripts/ha/redis-ha-conf.sh)
set -eu

prefix="${REDIS_KEY_PREFIX:-payments:}"
api_password="${PAYMENTS_REDIS_API_PASSWORD:-payments_api}"
admin_password="${PAYMENTS_REDIS_ADMIN_PASSWORD:-payments}"
default_user="${PAYMENTS_REDIS_DEFAULT_USER:-open}"

# The API's commands, in the order of src/apps/api/redis-needs.ts.
API_COMMANDS="ping info get set eval evalsha exists del pexpire time hmget hset cluster|info cluster|slots"

case "$prefix" in
  *[!A-Za-z0-9:_.-]*) echo "acl-users.sh: REDIS_KEY_PREFIX may hold only A-Z a-z 0-9 : _ . -" >&2; exit 2 ;;
esac

# The file holds password hashes only (#<sha256>), never the passwords.
hash() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }

case "$default_user" in
  open) echo "user default reset on nopass ~* &* +@all" ;;
  ping) echo "user default reset on nopass resetkeys resetchannels -@all +ping" ;;
  off) echo "user default reset off resetkeys resetchannels -@all" ;;
  *) echo "acl-users.sh: PAYMENTS_REDIS_DEFAULT_USER is open, ping or off, not $default_user" >&2; exit 2 ;;
esac
echo "user payments reset on #$(hash "$admin_password") ~* &* +@all"
commands=""
for command in $API_COMMANDS; do commands="$commands +$command"; done
echo "user payments_api reset on #$(hash "$api_password") ~${prefix}idem:* ~${prefix}rl:* resetchannels -@all$commands"
