#!/usr/bin/env bash
# Runs one k6 scenario against a running service with everything it needs set up:
#   k6/run.sh <storm|mismatch|cross-merchant|new-payments|replays|mix> [k6 run options...]
#   (npm run k6 -- storm)
#
# - k6: $K6, else .stack/bin/k6 (scripts/install-k6.sh), else k6 on PATH.
# - The service under load is whatever runs on BASE_URL(S): `npm run up` runs it as deployed,
#   api, relay and settlement as three processes, each on its own database login.
# - API_KEYS: when unset, creates MERCHANTS (2) merchants with dist/cli/merchant-create.js (the
#   same as `npm run merchant:create`), on the `bench` tier (defined here, the widest the tiers
#   table allows) so the load is not rate limited. Merchants and tiers are the owner's to write:
#   they go through the owner's URL, MIGRATION_DATABASE_URL, else DATABASE_URL, else the local
#   stack's (`scripts/stack.sh env`), never through a service login.
# - RUN_ID: when unset, k6-<scenario>-<time>; every Idempotency-Key of the run starts with it.
# - The k6 summary is saved to reports/k6-<RUN_ID without k6->.json; no usage report is sent.
# - VERIFY=1: afterwards runs `npm run verify -- --wait $VERIFY_WAIT --key-prefix $RUN_ID`
#   (VERIFY_WAIT 120 s) as the same owner login (an operator's read of everything) and fails
#   when either k6's thresholds or the verifier failed.
# - WEBHOOKS=1: before the load, starts one webhook receiver (tools/webhooks/receiver.ts) per mode
#   in WEBHOOK_RECEIVER_MODES (default ok; e.g. ok,fail-for:30,hang-for:20) and has each create
#   an endpoint for every merchant (POST /webhook_endpoints on the first API; the service must
#   allow loopback: WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8); their receipts go to
#   reports/webhooks-<RUN_ID without k6->-<n>.jsonl and, with VERIFY=1, to verify's
#   --webhook-receipts. The receivers stop when this script ends. Without WEBHOOKS nothing of
#   this runs (the load costs what it did).
# Everything else (BASE_URL, KEYS, COPIES, VUS, RATE, DURATION, ...) is read by the scripts
# themselves; see the header of each k6/<scenario>.js.
set -euo pipefail

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT_DIR"
scenario="${1:-}"
if [[ -z $scenario || ! -f k6/$scenario.js ]]; then
  echo "usage: k6/run.sh <scenario> [k6 run options...]; scenarios:" \
    "$(cd k6 && ls -- *.js | sed 's/\.js$//' | tr '\n' ' ')" >&2
  exit 2
fi
shift

K6="${K6:-}"
if [[ -z $K6 ]]; then
  if [[ -x .stack/bin/k6 ]]; then K6=.stack/bin/k6; else K6="$(command -v k6 || true)"; fi
fi
if [[ -z $K6 ]]; then
  echo "k6 not found: run scripts/install-k6.sh (npm run k6:install), or set K6=/path/to/k6" >&2
  exit 2
fi

export RUN_ID="${RUN_ID:-k6-$scenario-$(date +%Y%m%d-%H%M%S)}"
owner_url="${MIGRATION_DATABASE_URL:-${DATABASE_URL:-}}"
if [[ -z $owner_url ]]; then
  owner_url="$(bash scripts/stack.sh env | sed -n 's/^export MIGRATION_DATABASE_URL=//p')"
fi
if [[ -z ${API_KEYS:-} ]]; then
  npm run -s build
  # Load tests measure the API, not the limit: their merchants get the widest tier.
  DATABASE_URL="$owner_url" node dist/cli/merchant-tier.js --define bench --rate 1000000 \
    --burst 10000000 >/dev/null
  keys=()
  for ((i = 1; i <= ${MERCHANTS:-2}; i++)); do
    keys+=("$(DATABASE_URL="$owner_url" node dist/cli/merchant-create.js \
      --name "$RUN_ID merchant $i" --tier bench |
      node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0, "utf8")).api_key)')")
  done
  API_KEYS="$(IFS=,; echo "${keys[*]}")"
  export API_KEYS
  echo "k6/run.sh: created ${#keys[@]} merchants for run $RUN_ID" >&2
fi

mkdir -p reports
summary="reports/k6-${RUN_ID#k6-}.json"

receipts=()
receiver_pids=()
# shellcheck disable=SC2317 # called by the EXIT trap
stop_receivers() {
  for pid in "${receiver_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap stop_receivers EXIT
if [[ ${WEBHOOKS:-0} == 1 ]]; then
  npm run -s build:tools
  api_url="${BASE_URLS:-${BASE_URL:-http://127.0.0.1:3000}}"
  api_url="${api_url%%,*}"
  IFS=, read -r -a modes <<<"${WEBHOOK_RECEIVER_MODES:-ok}"
  for ((i = 0; i < ${#modes[@]}; i++)); do
    file="reports/webhooks-${RUN_ID#k6-}-$((i + 1)).jsonl"
    log="$file.log"
    node dist-tools/tools/cli/webhook-receiver.js --receipts "$file" --mode "${modes[$i]}" \
      --endpoints-for "$API_KEYS" --api-url "$api_url" >"$log" 2>&1 &
    receiver_pids+=("$!")
    receipts+=("$file")
    for ((tries = 0; ; tries++)); do
      if grep -q '"webhook receiver ready"' "$log"; then break; fi
      if ! kill -0 "${receiver_pids[-1]}" 2>/dev/null || ((tries > 150)); then
        echo "k6/run.sh: the webhook receiver (${modes[$i]}) did not get ready:" >&2
        cat "$log" >&2
        exit 2
      fi
      sleep 0.2
    done
    echo "k6/run.sh: webhook receiver ${modes[$i]}: $(grep '"webhook receiver ready"' "$log")" >&2
  done
fi
status=0
# No usage report (nothing leaves the machine); no REST API server (port 6565 stays free, so
# several runs can share the machine).
"$K6" run --no-usage-report --address '' --summary-export "$summary" "$@" "k6/$scenario.js" ||
  status=$?
echo "k6/run.sh: run $RUN_ID, k6 exit $status, summary $summary" >&2
if ((${#receipts[@]} > 0)); then
  echo "k6/run.sh: check it with: npm run verify -- --wait 120 --key-prefix $RUN_ID" \
    "--webhook-receipts $(IFS=,; echo "${receipts[*]}") (while the receivers run)" >&2
else
  echo "k6/run.sh: check it with: npm run verify -- --wait 120 --key-prefix $RUN_ID" >&2
fi

if [[ ${VERIFY:-0} == 1 ]]; then
  npm run -s build:tools
  verify_status=0
  webhook_args=()
  if ((${#receipts[@]} > 0)); then webhook_args=(--webhook-receipts "$(IFS=,; echo "${receipts[*]}")"); fi
  DATABASE_URL="$owner_url" node dist-tools/tools/cli/verify.js --wait "${VERIFY_WAIT:-120}" \
    --key-prefix "$RUN_ID" "${webhook_args[@]}" || verify_status=$?
  if [[ $status -eq 0 ]]; then status=$verify_status; fi
fi
exit "$status"
