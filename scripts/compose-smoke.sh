#!/usr/bin/env bash
# npm run compose:smoke: the container path end to end, on a machine with a Docker engine and the
# Compose v2 plugin. Builds the service image (Dockerfile), brings docker-compose.yml up under a
# project name of its own, then as a client would: creates a merchant (owner CLI in a one-off
# container), POSTs a payment and its replay, waits for `settled`, refunds part of it and waits for
# `succeeded`, reads the payment, the refund and the list, and checks /readyz of every role
# container. Always `docker compose down -v` at the end; exits 1 on any failure, after printing
# the last logs of every service.
#
# Host ports: the stack publishes loopback ports only, and this script picks free ones (the native
# stack or another compose project may hold 5432/6379/9092/3000), so it runs beside anything.
#
# Images: the official postgres:15, redis:7, apache/kafka:3.9.1 and node:20-bookworm-slim (the
# build's base). When one is missing and cannot be pulled, or COMPOSE_SMOKE_STANDINS=1 (CI, whose
# machines cannot pull), it first builds stand-ins under those names: .ci/images/README.md.
#
# Settings (environment): PAYMENTS_IMAGE (tag to build, payments-service:local), NODE_IMAGE (base,
# node:20-bookworm-slim), COMPOSE_SMOKE_SETTLE_S (bound of each wait, 90).
set -euo pipefail
cd "$(dirname "$0")/.."

export PAYMENTS_IMAGE=${PAYMENTS_IMAGE:-payments-service:local}
export NODE_IMAGE=${NODE_IMAGE:-node:20-bookworm-slim}
settle_s=${COMPOSE_SMOKE_SETTLE_S:-90}
project="payments-smoke-$(date +%s)-$$"
work=$(mktemp -d)
started=$SECONDS
failed=0
up_started=0
declare -A took=()

pass() { printf 'PASS  %s\n' "$*"; }
fail() {
  printf 'FAIL  %s\n' "$*"
  failed=1
  exit 1
}
compose() { docker compose -p "$project" "$@"; }

finish() {
  local status=$?
  set +e
  if [[ $status -ne 0 || $failed -ne 0 ]] && [[ $up_started -eq 1 ]]; then
    for service in postgres redis kafka migrate acquirer-books acquirer api relay settlement webhooks; do
      printf '\n--- last logs of %s\n' "$service"
      timeout 30 docker compose -p "$project" logs --no-color --tail 40 "$service" 2>&1
    done
  fi
  if [[ $up_started -eq 1 ]]; then
    local t=$SECONDS
    timeout 180 docker compose -p "$project" down -v --remove-orphans >"$work/down.log" 2>&1 ||
      {
        cat "$work/down.log"
        status=1
      }
    took[down]=$((SECONDS - t))
  fi
  rm -rf "$work"
  printf '\ntimes: stand-ins %ss, image build %ss, up %ss, smoke %ss, down %ss; total %ss\n' \
    "${took[standins]:-0}" "${took[build]:-0}" "${took[up]:-0}" "${took[smoke]:-0}" \
    "${took[down]:-0}" "$((SECONDS - started))"
  if [[ $status -eq 0 && $failed -eq 0 ]]; then
    echo "compose smoke: PASS"
  else
    echo "compose smoke: FAIL"
    status=1
  fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

# --- images ------------------------------------------------------------------------------------
official_images=(postgres:15 redis:7 apache/kafka:3.9.1 "$NODE_IMAGE")
need_standins() {
  [[ ${COMPOSE_SMOKE_STANDINS:-0} == 1 ]] && return 0
  local image
  for image in "${official_images[@]}"; do
    timeout 20 docker image inspect "$image" >/dev/null 2>&1 && continue
    timeout 300 docker pull -q "$image" >/dev/null 2>&1 || return 0
  done
  return 1
}
# CI's fresh machine may have no Docker yet: prepare.sh installs it and starts the engine too.
[[ ${COMPOSE_SMOKE_STANDINS:-0} == 1 ]] ||
  timeout 20 docker info >/dev/null 2>&1 || fail "a Docker engine answers (docker info)"
t=$SECONDS
if need_standins; then
  echo "official images not pullable here (or COMPOSE_SMOKE_STANDINS=1): building stand-ins"
  timeout 3600 bash .ci/images/prepare.sh || fail "stand-in images (.ci/images/prepare.sh)"
  took[standins]=$((SECONDS - t))
  pass "stand-in images ready (${took[standins]}s)"
fi
timeout 20 docker compose version >/dev/null 2>&1 ||
  fail "docker compose (the Compose v2 plugin) answers; COMPOSE_SMOKE_STANDINS=1 builds it too"

# With the Node stand-in (labelled by .ci/images/prepare.sh), a machine whose egress inspects TLS (its own CAs in
# /usr/local/share/ca-certificates, as this project's machines have) needs `npm ci` in the build
# to trust them: the build's base is then the Node stand-in plus those CAs, a local image only.
extra_cas=(/usr/local/share/ca-certificates/*.crt)
standin_label=$(timeout 20 docker image inspect -f '{{index .Config.Labels "org.payments-ci.inputs"}}' \
  "$NODE_IMAGE" 2>/dev/null || true)
if [[ -n $standin_label && -e ${extra_cas[0]} ]]; then
  mkdir -p "$work/node-ca"
  cp "${extra_cas[@]}" "$work/node-ca/"
  printf '%s\n' "FROM $NODE_IMAGE" 'USER root' 'COPY *.crt /usr/local/share/ca-certificates/' \
    'RUN update-ca-certificates' 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
    >"$work/node-ca/Dockerfile"
  NODE_IMAGE=payments-ci/node-trusted:20
  timeout 600 docker build -q -t "$NODE_IMAGE" "$work/node-ca" >"$work/node-ca.log" 2>&1 || {
    cat "$work/node-ca.log"
    fail "build base $NODE_IMAGE (the Node stand-in trusting this machine's CAs)"
  }
  pass "build base $NODE_IMAGE: the Node stand-in trusting ${#extra_cas[@]} local CA(s)"
fi

t=$SECONDS
previous_image=$(timeout 20 docker image inspect -f '{{.Id}}' "$PAYMENTS_IMAGE" 2>/dev/null || true)
timeout 1800 docker build -q --build-arg "NODE_IMAGE=$NODE_IMAGE" -t "$PAYMENTS_IMAGE" . \
  >"$work/build.log" 2>&1 || {
  cat "$work/build.log"
  fail "docker build -t $PAYMENTS_IMAGE ."
}
took[build]=$((SECONDS - t))
size=$(docker image inspect -f '{{.Size}}' "$PAYMENTS_IMAGE")
# The tag moved: the image it named is dangling now, and on the vfs driver each costs its full
# size on disk. Removed unless something still uses it.
if [[ -n $previous_image && $previous_image != "$(docker image inspect -f '{{.Id}}' "$PAYMENTS_IMAGE")" ]]; then
  timeout 60 docker rmi "$previous_image" >/dev/null 2>&1 || true
fi
pass "image $PAYMENTS_IMAGE built ($((size / 1000000)) MB, ${took[build]}s)"

# --- up ----------------------------------------------------------------------------------------
# Four free loopback ports (bound at once so they differ, then released for Docker to take).
read -r PAYMENTS_PG_PORT PAYMENTS_REDIS_PORT PAYMENTS_KAFKA_PORT PAYMENTS_API_PORTS < <(
  timeout 10 node -e '
    const net = require("node:net");
    const servers = [0, 1, 2, 3].map(() => net.createServer());
    Promise.all(servers.map((s) => new Promise((ok) => s.listen(0, "127.0.0.1", ok)))).then(() => {
      console.log(servers.map((s) => s.address().port).join(" "));
      servers.forEach((s) => s.close());
    });'
)
export PAYMENTS_PG_PORT PAYMENTS_REDIS_PORT PAYMENTS_KAFKA_PORT PAYMENTS_API_PORTS

t=$SECONDS
up_started=1
timeout 600 docker compose -p "$project" up -d --no-build --wait >"$work/up.log" 2>&1 || {
  cat "$work/up.log"
  fail "docker compose up -d --wait"
}
took[up]=$((SECONDS - t))
pass "docker compose -p $project up -d --wait (${took[up]}s)"

# --- smoke -------------------------------------------------------------------------------------
t=$SECONDS
api="http://127.0.0.1:$PAYMENTS_API_PORTS"

merchant=$(timeout 120 docker compose -p "$project" run --rm --no-deps -T migrate \
  merchant:create --name "compose smoke" 2>"$work/merchant.err") || {
  cat "$work/merchant.err"
  fail "merchant:create in a one-off container (owner login)"
}
# The JSON line with the key (a log line could precede it).
key=$(node -e '
  const keys = process.argv[1].split("\n").map((line) => {
    try {
      return JSON.parse(line).api_key;
    } catch {
      return undefined;
    }
  });
  process.stdout.write(keys.filter(Boolean).at(-1) ?? "");' "$merchant")
[[ $key == sk_* ]] || fail "merchant:create printed an api_key (got: $merchant)"
pass "merchant created (owner CLI in a one-off container of the image)"

# request METHOD PATH [BODY [IDEMPOTENCY-KEY]]: status code on stdout; body in $work/body,
# headers in $work/headers. Bounded by curl's --max-time.
request() {
  local args=(-sS --max-time 10 -o "$work/body" -D "$work/headers" -w '%{http_code}'
    -X "$1" -H "Authorization: Bearer $key")
  [[ $# -ge 3 ]] && args+=(-H 'Content-Type: application/json' --data "$3")
  [[ $# -ge 4 ]] && args+=(-H "Idempotency-Key: $4")
  curl "${args[@]}" "$api$2" || echo 000
}
# field NAME: a top-level field of the last JSON body ("" when absent or not JSON).
field() {
  node -e '
    try {
      const body = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      process.stdout.write(String(body[process.argv[2]] ?? ""));
    } catch {}' "$work/body" "$1"
}
# wait_for PATH STATUS: polls GET PATH until its status field is STATUS, within settle_s.
wait_for() {
  local deadline=$((SECONDS + settle_s)) code status=''
  while ((SECONDS < deadline)); do
    code=$(request GET "$1")
    [[ $code == 200 ]] && status=$(field status)
    [[ $status == "$2" ]] && return 0
    sleep 0.5
  done
  echo "last: HTTP $code, status ${status:-none}: $(head -c 500 "$work/body" 2>/dev/null)"
  return 1
}

idem="smoke-pay-$project"
payment_body='{"amount": 4200, "currency": "EUR", "source": "tok_visa", "description": "compose smoke"}'
code=$(request POST /payments "$payment_body" "$idem")
[[ $code == 202 ]] || fail "POST /payments: 202 (got $code: $(head -c 500 "$work/body"))"
cp "$work/body" "$work/first"
payment=$(field id)
pass "POST /payments: 202, payment $payment"

code=$(request POST /payments "$payment_body" "$idem")
[[ $code == 202 ]] || fail "replay of POST /payments: 202 (got $code)"
cmp -s "$work/first" "$work/body" || fail "replay: the same body byte for byte"
grep -qi '^idempotent-replayed: *true' "$work/headers" || fail "replay: Idempotent-Replayed: true"
pass "replay with the same Idempotency-Key: 202, byte-identical body, Idempotent-Replayed: true"

wait_for "/payments/$payment" settled || fail "payment settled within ${settle_s}s"
pass "payment settled (GET /payments/$payment)"

code=$(request POST "/payments/$payment/refunds" '{"amount": 1000}' "smoke-refund-$project")
[[ $code == 202 ]] || fail "POST /payments/{id}/refunds: 202 (got $code: $(head -c 500 "$work/body"))"
refund=$(field id)
pass "POST /payments/$payment/refunds {amount: 1000}: 202, refund $refund"

wait_for "/refunds/$refund" succeeded || fail "refund succeeded within ${settle_s}s"
[[ $(field amount) == 1000 && $(field payment_id) == "$payment" ]] ||
  fail "GET /refunds/{id}: amount 1000 of payment $payment ($(head -c 500 "$work/body"))"
pass "refund succeeded (GET /refunds/$refund)"

code=$(request GET "/payments/$payment")
[[ $code == 200 && $(field status) == settled && $(field amount) == 4200 ]] ||
  fail "GET /payments/{id}: 200, settled, 4200 (got $code: $(head -c 500 "$work/body"))"
pass "GET /payments/$payment: 200, settled"

code=$(request GET "/payments?limit=10")
[[ $code == 200 ]] || fail "GET /payments?limit=10: 200 (got $code)"
node -e '
  const page = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  process.exit(page.object === "list" && page.data.some((p) => p.id === process.argv[2]) ? 0 : 1);
' "$work/body" "$payment" || fail "GET /payments?limit=10 lists the payment"
pass "GET /payments?limit=10: 200, lists the payment"

# Each role container: /readyz of its internal listener (not published) answers 200 inside the
# container, and Docker's HEALTHCHECK (the same URL) says healthy.
for service in api relay settlement webhooks acquirer; do
  # shellcheck disable=SC2016 # a JavaScript template literal, expanded by node in the container
  ready=$(timeout 30 docker compose -p "$project" exec -T "$service" node -e '
    fetch(`http://127.0.0.1:${process.env.METRICS_PORT}/readyz`, { signal: AbortSignal.timeout(5000) })
      .then((r) => console.log(r.status), () => console.log("unreachable"));' 2>&1) || true
  container=$(docker compose -p "$project" ps -q "$service" | head -n 1)
  health=$(timeout 10 docker inspect -f '{{.State.Health.Status}}' "$container" 2>&1) || true
  [[ $ready == 200 && $health == healthy ]] ||
    fail "$service: /readyz 200 and healthy (got /readyz $ready, health $health)"
  pass "$service: /readyz 200, container healthy"
done
# The acquirer's books are its login's alone once acquirer-books ran: settlement, which settled the
# payment above over HTTP, is refused them.
denied=$(timeout 30 docker compose -p "$project" exec -T -e PGPASSWORD=payments_settlement postgres \
  psql -h 127.0.0.1 -U payments_settlement -d payments -X -q -t \
  -c 'SELECT count(*) FROM acquirer_simulator_charges' 2>&1) || true
[[ $denied == *"permission denied"* ]] ||
  fail "settlement's login is refused the acquirer's books (got: $(head -c 300 <<<"$denied"))"
pass "settlement's login is refused the acquirer's books (they are payments_acquirer's)"
took[smoke]=$((SECONDS - t))
