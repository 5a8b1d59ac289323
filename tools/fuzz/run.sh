#!/usr/bin/env bash
# `npm run fuzz`: the contract fuzzer. Starts the API (dist/apps/api/main.js) on a database of its
# own, creates a merchant and one payment, and runs schemathesis against /openapi.json: every
# check, valid and invalid data, stateful links (POST -> GET). Exits non-zero on any failure.
#
# Environment: DATABASE_URL (a login that may create databases: the local stack's owner by
#              default), API_DATABASE_URL (the API's login, payments_api by default; its
#              database part is replaced),
#              FUZZ_MAX_TIME (seconds, 150),
#              FUZZ_MAX_EXAMPLES (per operation and phase, 300), FUZZ_SEED (fixed, so CI is
#              reproducible; set another to explore), FUZZ_WORKERS (1).
# Arguments are passed to `schemathesis run`: `npm run fuzz -- --include-path-regex '^/webhook'`
# fuzzes the webhook operations only.
# The schemathesis virtualenv lives in .venv-fuzz and is reused when it has the pinned version.
set -euo pipefail
cd "$(dirname "$0")/../.."

SCHEMATHESIS_VERSION=4.32.5
VENV=.venv-fuzz
MAX_TIME="${FUZZ_MAX_TIME:-150}"
MAX_EXAMPLES="${FUZZ_MAX_EXAMPLES:-300}"
SEED="${FUZZ_SEED:-20261123}"
# One worker: with two, Python 3.11's ast.parse (Hypothesis describing strategies) races
# between threads and the run dies with "AST constructor recursion depth mismatch".
WORKERS="${FUZZ_WORKERS:-1}"

log() { printf '[fuzz] %s\n' "$*" >&2; }

# What it runs besides node: psql and curl (the local stack's PostgreSQL client; curl is on every
# machine of this kind), python3 for the virtualenv.
for tool in python3 psql curl; do
  command -v "$tool" >/dev/null || { log "$tool not found (psql: bash scripts/stack.sh install)"; exit 1; }
done

# --clear: a virtualenv whose python is gone (another python3 made it) is rebuilt, not patched.
venv_log="$(mktemp)"
make_venv() { python3 -m venv --clear "$VENV" >"$venv_log" 2>&1; }
if [[ "$("$VENV/bin/schemathesis" --version 2>/dev/null || true)" != *"$SCHEMATHESIS_VERSION"* ]]; then
  log "installing schemathesis $SCHEMATHESIS_VERSION into $VENV"
  if ! make_venv; then
    # Debian's own python3 makes virtualenvs only with python3-venv (its ensurepip) installed; a
    # python3 built from source (pyenv) has ensurepip itself. On a fresh machine, as root: install it.
    if ((EUID == 0)) && command -v apt-get >/dev/null; then
      log "python3 -m venv failed; apt-get install python3-venv"
      { apt-get -o DPkg::Lock::Timeout=300 update -q &&
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q \
          --no-install-recommends python3-venv; } >>"$venv_log" 2>&1 || { tail -n 20 "$venv_log" >&2; exit 1; }
    fi
    make_venv || { tail -n 20 "$venv_log" >&2; log "python3 -m venv failed (Debian: install python3-venv)"; exit 1; }
  fi
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
rm -f "$venv_log"

if [[ -z "${DATABASE_URL:-}" ]]; then
  # shellcheck disable=SC1090 # the stack prints the URLs of what it runs
  eval "$(bash scripts/stack.sh env)"
fi

log "building"
npm run -s build

# A database of its own, dropped at the end: the fuzzer writes thousands of payments.
db="payments_fuzz_$$"
admin_url="$DATABASE_URL"
on_db() { node -e 'const u = new URL(process.argv[1]); u.pathname = "/" + process.argv[2]; console.log(u.toString())' "$1" "$db"; }
fuzz_url="$(on_db "$admin_url")"
# The API runs as its own login, as deployed: API_DATABASE_URL's user and password (printed by
# `scripts/stack.sh env`), else the local stack's payments_api (password = name), on this database
# (the same rule as tools/support/role-database-url.ts). Only the owner creates and migrates it.
api_url="$(node -e '
  const u = new URL(process.argv[1]);
  const own = process.argv[2] ? new URL(process.argv[2]) : null;
  u.username = own?.username || "payments_api";
  u.password = own?.username ? own.password : "payments_api";
  console.log(u.toString());
' "$fuzz_url" "${API_DATABASE_URL:-}")"
api_pid=""
cleanup() {
  if [[ -n $api_pid ]]; then kill "$api_pid" 2>/dev/null && wait "$api_pid" 2>/dev/null || true; fi
  psql -X -q "$admin_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
}
trap cleanup EXIT
psql -X -q -v ON_ERROR_STOP=1 "$admin_url" -c "CREATE DATABASE $db" >/dev/null
MIGRATION_DATABASE_URL="$fuzz_url" DATABASE_URL="$fuzz_url" LOG_LEVEL=warn node dist/cli/migrate.js

# Its merchant on a tier far above what the fuzzer sends: a 429 is documented, but it would hide
# the answers the checks are for.
DATABASE_URL="$fuzz_url" node dist/cli/merchant-tier.js --define fuzz --rate 1000000 --burst 10000000 >/dev/null
merchant="$(DATABASE_URL="$fuzz_url" node dist/cli/merchant-create.js --name 'Contract fuzzer' --tier fuzz)"
api_key="$(node -e 'console.log(JSON.parse(process.argv[1]).api_key)' "$merchant")"

port="$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
base="http://127.0.0.1:$port"
log "starting the API on $base"
# Failed authentications are limited per address like the merchant's tier above: the auth
# checks of every operation come from this one address. Webhook urls: the hooks point every
# valid one at 192.0.2.1 (TEST-NET-1; the API alone never delivers), allowed here, so no
# generated host is looked up in DNS; and endpoints enough for the whole run (the limit's 409
# is documented, but it would end the stateful links). METRICS_PORT=0: its internal listener on a
# free port, not 9464, which a dev API or a role of the stack may hold beside it.
DATABASE_URL="$api_url" PORT="$port" METRICS_PORT=0 \
  LOG_LEVEL="${FUZZ_LOG_LEVEL:-warn}" \
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE=1000000 RATE_LIMIT_UNAUTHENTICATED_BURST=1000000 \
  WEBHOOK_ALLOWED_NETWORKS=192.0.2.0/24 WEBHOOK_MAX_ENDPOINTS_PER_MERCHANT=1000 \
  node --max-old-space-size=1024 dist/apps/api/main.js &
api_pid=$!
for _ in $(seq 1 100); do
  if curl -fsS "$base/healthz" >/dev/null 2>&1; then break; fi
  kill -0 "$api_pid" 2>/dev/null || { log "the API exited during start-up"; exit 1; }
  sleep 0.2
done

payment_id="$(curl -fsS -X POST "$base/payments" -H "Authorization: Bearer $api_key" \
  -H 'Content-Type: application/json' -H "Idempotency-Key: fuzz-seed-$$" \
  -d '{"amount":1000,"currency":"EUR"}' | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).id))')"

# GET /events' one usable cursor: that payment's payment.created.
event_id="$(psql -X -qAt -v ON_ERROR_STOP=1 "$fuzz_url" -v payment="$payment_id" <<'SQL'
SELECT event_id FROM merchant_events WHERE subject = :'payment';
SQL
)"

# A webhook endpoint with one failed delivery (an event of that payment, written as the fan-out
# and the delivery worker would), so the delivery operations also meet one that exists.
endpoint_id="$(curl -fsS -X POST "$base/webhook_endpoints" -H "Authorization: Bearer $api_key" \
  -H 'Content-Type: application/json' \
  -d '{"url":"http://192.0.2.1/fuzz-seed","enabled_events":["*"]}' | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).id))')"
delivery_id="$(psql -X -qAt -v ON_ERROR_STOP=1 "$fuzz_url" \
  -v endpoint="$endpoint_id" -v payment="$payment_id" <<'SQL'
WITH event AS (
  INSERT INTO webhook_events (event_id, merchant_id, payment_id, event_type, body, created_at)
  SELECT gen_random_uuid(), merchant_id, id, 'payment.failed', '{}', now()
    FROM payments WHERE id = :'payment'
  RETURNING event_id, payment_id
)
INSERT INTO webhook_deliveries (endpoint_id, event_id, payment_id, status, attempts, failed_reason)
SELECT :'endpoint', event_id, payment_id, 'failed', 1, 'attempts_exhausted' FROM event
RETURNING id;
SQL
)"

# Its banner lines ("==== 2 warnings in 150s ====") are reworded: CI reads a line of that shape as
# pytest's closing line and would count the run's tests from it, not from vitest's summary.
log "schemathesis: seed $SEED, at most ${MAX_TIME}s, ${MAX_EXAMPLES} examples per operation"
mkdir -p reports
status=0
FUZZ_PAYMENT_ID="$payment_id" FUZZ_EVENT_ID="$event_id" FUZZ_ENDPOINT_ID="$endpoint_id" FUZZ_DELIVERY_ID="$delivery_id" \
  PYTHONPATH=tools/fuzz SCHEMATHESIS_HOOKS=hooks \
  "$VENV/bin/schemathesis" --config-file tools/fuzz/schemathesis.toml --no-color \
  run "$base/openapi.json" \
  --url "$base" \
  --checks all \
  --mode all \
  --phases examples,coverage,fuzzing,stateful \
  --header "Authorization: Bearer $api_key" \
  --max-examples "$MAX_EXAMPLES" \
  --max-time "$MAX_TIME" \
  --seed "$SEED" \
  --workers "$WORKERS" \
  --request-timeout 10 \
  --report junit --report-junit-path reports/fuzz-junit.xml \
  "$@" \
  | sed -u -E 's/^=+ (.*) =+$/--- \1 ---/' \
  || status=$?
if ((status != 0)); then log "FAILED (exit $status)"; else log "passed"; fi
exit "$status"
