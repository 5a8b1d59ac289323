#!/usr/bin/env bash
# `npm run test:ha [vitest args]`: the HA topology's tests (test/ha/) against the running HA
# topology (`npm run stack:ha` starts it), with the endpoints `STACK_TOPOLOGY=ha scripts/stack.sh
# env` prints. Builds first: the tests start the roles from dist/ as separate processes.
set -euo pipefail
cd "$(dirname "$0")/.."
STACK_TOPOLOGY=ha bash scripts/stack.sh status >/dev/null ||
  { echo "the HA topology is not running: npm run stack:ha" >&2; exit 2; }
# shellcheck disable=SC1090 # the endpoints of the running topology
eval "$(STACK_TOPOLOGY=ha bash scripts/stack.sh env)"
npm run -s build
npm run -s build:tools
exec npx vitest run --project ha "$@"
