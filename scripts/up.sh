#!/usr/bin/env bash
# `npm run up`: from a fresh clone to the service running (all roles) on the local stack.
# Installs what is missing (npm packages, PostgreSQL, Redis, Kafka), starts the services,
# migrates, then runs the service in the foreground. Safe to re-run; Ctrl-C stops the service,
# `npm run down` stops the stack.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[up] %s\n' "$*" >&2; }

# npm packages: install when node_modules is missing or older than the lockfile.
if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
  log "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund
fi

bash scripts/stack.sh start

log "building"
npm run -s build

log "migrating"
node dist/cli/migrate.js

# Human-readable logs on a terminal, JSON otherwise (e.g. when piped to a collector).
if [[ -t 1 && -z "${LOG_FORMAT:-}" ]]; then export LOG_FORMAT=pretty; fi
log "starting api, relay and settlement (Ctrl-C to stop)"
# One process for all three roles needs the union of their grants: in this local dev mode it runs
# as the owner login, explicitly allowed. Deployments run one process per role with its own
# login (API_DATABASE_URL etc. from `scripts/stack.sh env`; docker-compose.yml does).
export DB_ALLOW_PRIVILEGED_LOGIN="${DB_ALLOW_PRIVILEGED_LOGIN:-true}"
exec node --max-old-space-size=1024 dist/apps/all/main.js
