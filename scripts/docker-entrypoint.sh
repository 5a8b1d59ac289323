#!/bin/sh
# The service image's entry point (Dockerfile: tini runs this, this execs node, so node is tini's
# child and gets the SIGTERM that `docker stop` sends tini). The first argument picks what runs;
# one image serves every role:
#
#   api | relay | settlement | webhooks | acquirer
#                               one role per container (the deployed shape; the image's default: api)
#   all                         every role in one process (needs DB_ALLOW_PRIVILEGED_LOGIN=true)
#   migrate                     applies migrations/ as MIGRATION_DATABASE_URL, else DATABASE_URL
#   merchant:create | merchant:key | merchant:tier | dlq:replay | secrets:reencrypt
#                                                                 the owner-only CLIs (`-- --help`)
#   node | sh                   anything else, e.g. `docker run --rm IMAGE node -v`
#
# Service processes run with the flags of SERVICE_NODE_FLAGS (src/platform/lifecycle/service-node-flags.ts;
# test/unit/service-node-flags.test.ts checks every command line below carries them).
set -eu
role=${1:-api}
[ "$#" -gt 0 ] && shift
case "$role" in
  api) exec node --max-old-space-size=1024 --import ./dist/platform/telemetry/register-tracing.js dist/apps/api/main.js "$@" ;;
  relay) exec node --max-old-space-size=1024 --import ./dist/platform/telemetry/register-tracing.js dist/apps/relay/main.js "$@" ;;
  settlement) exec node --max-old-space-size=1024 --import ./dist/platform/telemetry/register-tracing.js dist/apps/settlement/main.js "$@" ;;
  acquirer) exec node --max-old-space-size=1024 --import ./dist/platform/telemetry/register-tracing.js dist/apps/acquirer/main.js "$@" ;;
  webhooks) exec node --max-old-space-size=1024 --import ./dist/platform/telemetry/register-tracing.js dist/apps/webhooks/main.js "$@" ;;
  all) exec node --max-old-space-size=1024 --import ./dist/platform/telemetry/register-tracing.js dist/apps/all/main.js "$@" ;;
  migrate) exec node dist/cli/migrate.js "$@" ;;
  merchant:create) exec node dist/cli/merchant-create.js "$@" ;;
  merchant:key) exec node dist/cli/merchant-key.js "$@" ;;
  merchant:tier) exec node dist/cli/merchant-tier.js "$@" ;;
  dlq:replay) exec node dist/cli/dlq-replay.js "$@" ;;
  secrets:reencrypt) exec node dist/cli/secrets-reencrypt.js "$@" ;;
  node | sh) exec "$role" "$@" ;;
  *)
    echo "unknown command: $role (one of: api relay settlement webhooks acquirer all migrate merchant:create merchant:key merchant:tier dlq:replay secrets:reencrypt node sh)" >&2
    exit 64
    ;;
esac
