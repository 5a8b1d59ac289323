#!/usr/bin/env bash
# Runs one scenario under YOUR k6 (the project never installs, builds or runs k6: it is
# AGPL-3.0): `npm run k6 -- <scenario> [k6 run options...]`. k6 is $K6, else `k6` on PATH; without
# one this says where to get it and exits 2. Everything around the run is the project's load
# driver's (tools/cli/load.ts --engine k6): merchants created when API_KEYS is unset, RUN_ID,
# WEBHOOKS=1 receivers, VERIFY=1, the summary in reports/<RUN_ID>/. The same scenarios run
# without k6 on the project's own driver: `npm run load -- <scenario>`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
npm run -s build:tools
exec node dist-tools/tools/cli/load.js --engine k6 "$@"
