#!/usr/bin/env bash
# `npm run test:redis-cluster [vitest args]`: the idempotency and rate-limit integration tests
# against the HA topology's three-master Redis Cluster (TLS, ACL users; DESIGN 123), with the
# Postgres and Kafka of the environment when DATABASE_URL and KAFKA_BROKERS are set, else of the
# single-node stack. Starts the HA Redis (idempotent). The tests' Redis clients and the APIs they
# start are Cluster clients (test/support/test-redis-client.ts, REDIS_CLUSTER_NODES).
set -euo pipefail
cd "$(dirname "$0")/.."

FILES=(
  test/integration/key-lock.test.ts
  test/integration/key-lock-redlock.test.ts
  test/integration/rate-limit-peek.test.ts
  test/integration/rate-limits-autopipeline.test.ts
  test/integration/rate-limits.test.ts
  test/integration/redis-round-trips.test.ts
  test/integration/idempotency-expiry.test.ts
  test/integration/payments-create.test.ts
  test/integration/payments-race.test.ts
  test/integration/webhook-secrets-at-rest.test.ts
)

STACK_TOPOLOGY=ha bash scripts/stack.sh start redis
ha_value() { STACK_TOPOLOGY=ha bash scripts/stack.sh env | sed -n "s/^export $1=//p"; }
nodes="$(ha_value REDIS_CLUSTER_TEST_NODES)"
ca="$(ha_value REDIS_TLS_CA_FILE)"
if [[ -z ${DATABASE_URL:-} || -z ${KAFKA_BROKERS:-} ]]; then
  # shellcheck disable=SC1090 # the single-node stack's Postgres and Kafka
  eval "$(bash scripts/stack.sh env)"
fi
# The operators' user (tests set up and inspect keys), on the Cluster's first seed.
export REDIS_URL="rediss://payments:${PAYMENTS_REDIS_ADMIN_PASSWORD:-payments}@${nodes%%,*}"
export REDIS_CLUSTER_NODES="$nodes" REDIS_TLS_CA_FILE="$ca"
unset REDIS_SENTINELS
exec npx vitest run --project integration "${FILES[@]}" "$@"
