#!/usr/bin/env bash
# What row-level security would cost the new-payment path, database side (DESIGN 11).
#
# pgbench, -M prepared, the service's own new-payment statement (the script bench:api uses) on a
# scratch database, in rounds (the tables grow, so the runs of a round are compared together):
#   1. the statement as the service runs it: one auto-committed statement;
#   2. the same inside BEGIN; set_config('payments.merchant_id', ..., true); ...; COMMIT, no RLS
#      (what the transaction RLS needs costs by itself);
#   3. the same with RLS forced on payments and idempotency_keys (policy: merchant_id equals the
#      setting).
# Environment: DATABASE_URL (a login that may create databases; the local stack's by default),
# BENCH_CONCURRENCY (16), BENCH_SECONDS (10), BENCH_ROUNDS (3), PGBENCH. Needs `npm run build` and `npm run
# build:tools` (it runs them).
set -euo pipefail
cd "$(dirname "$0")/../.."

CONCURRENCY="${BENCH_CONCURRENCY:-16}"
SECONDS_PER_RUN="${BENCH_SECONDS:-10}"
ROUNDS="${BENCH_ROUNDS:-3}"
PGBENCH="${PGBENCH:-/usr/lib/postgresql/15/bin/pgbench}"
if [[ -z "${DATABASE_URL:-}" ]]; then
  # shellcheck disable=SC1090 # the stack prints the URLs of what it runs
  eval "$(bash scripts/stack.sh env)"
fi
npm run -s build
npm run -s build:tools

db="payments_rls_bench_$$"
on_db() { node -e 'const u = new URL(process.argv[1]); u.pathname = "/" + process.argv[2]; console.log(u.toString())' "$1" "$db"; }
url="$(on_db "$DATABASE_URL")"
dir="$(mktemp -d)"
cleanup() {
  psql -X -q "$DATABASE_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
psql -X -q -v ON_ERROR_STOP=1 "$DATABASE_URL" -c "CREATE DATABASE $db" >/dev/null
MIGRATION_DATABASE_URL="$url" DATABASE_URL="$url" LOG_LEVEL=warn node dist/cli/migrate.js
merchant="$(DATABASE_URL="$url" node dist/cli/merchant-create.js --name 'RLS bench' |
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).id))')"

# The scripts and pgbench's -D values, from the bench's own generator.
node --input-type=module -e '
  import { writeFileSync } from "node:fs";
  import { paymentPgbenchScript, paymentPgbenchDefines } from "./dist-tools/tools/bench/pgbench-script.js";
  const [dir, merchant] = process.argv.slice(1);
  const plain = paymentPgbenchScript();
  writeFileSync(`${dir}/plain.sql`, plain);
  const lines = plain.trimEnd().split("\n");
  const statement = lines.filter((l) => !l.startsWith("\\")).join("\n");
  const meta = lines.filter((l) => l.startsWith("\\"));
  writeFileSync(`${dir}/tx.sql`, [...meta, "BEGIN;",
    "SELECT set_config(\x27payments.merchant_id\x27, :merchant, true);", statement, "COMMIT;", ""].join("\n"));
  writeFileSync(`${dir}/defines`, paymentPgbenchDefines(merchant, "{\"id\":\"x\"}").join("\n") + "\n");
' "$dir" "$merchant"
mapfile -t defines <"$dir/defines"

host="$(node -e 'console.log(new URL(process.argv[1]).hostname)' "$url")"
port="$(node -e 'console.log(new URL(process.argv[1]).port || "5432")' "$url")"
user="$(node -e 'console.log(decodeURIComponent(new URL(process.argv[1]).username))' "$url")"
export PGPASSWORD
PGPASSWORD="$(node -e 'console.log(decodeURIComponent(new URL(process.argv[1]).password))' "$url")"

bench() {
  local name=$1 script=$2
  local out
  out="$("$PGBENCH" -n -M prepared -c "$CONCURRENCY" -j 2 -T "$SECONDS_PER_RUN" "${defines[@]}" \
    -f "$script" -h "$host" -p "$port" -U "$user" "$db" 2>&1)"
  printf '%-48s %s tps, latency average %s ms (load %s)\n' "$name" \
    "$(sed -n 's/^tps = \([0-9.]*\) (without.*/\1/p' <<<"$out")" \
    "$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")" \
    "$(cut -d' ' -f1 /proc/loadavg)"
  grep -q "number of failed transactions: 0" <<<"$out" || { echo "$out" >&2; exit 1; }
}

echo "pgbench -M prepared, concurrency $CONCURRENCY, $SECONDS_PER_RUN s per run, $(nproc) cores, $ROUNDS rounds"
for round in $(seq 1 "$ROUNDS"); do
  bench "round $round: 1. one statement (as the service runs)" "$dir/plain.sql"
  bench "round $round: 2. BEGIN; set_config; statement; COMMIT" "$dir/tx.sql"
  psql -X -q -v ON_ERROR_STOP=1 "$url" >/dev/null <<'SQL'
ALTER TABLE payments ENABLE ROW LEVEL SECURITY;
ALTER TABLE payments FORCE ROW LEVEL SECURITY;
CREATE POLICY merchant_isolation ON payments
  USING (merchant_id = current_setting('payments.merchant_id', true)::uuid);
ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY merchant_isolation ON idempotency_keys
  USING (merchant_id = current_setting('payments.merchant_id', true)::uuid);
SQL
  bench "round $round: 3. as 2, with RLS forced" "$dir/tx.sql"
  psql -X -q -v ON_ERROR_STOP=1 "$url" >/dev/null <<'SQL'
DROP POLICY merchant_isolation ON payments;
ALTER TABLE payments NO FORCE ROW LEVEL SECURITY;
ALTER TABLE payments DISABLE ROW LEVEL SECURITY;
DROP POLICY merchant_isolation ON idempotency_keys;
ALTER TABLE idempotency_keys NO FORCE ROW LEVEL SECURITY;
ALTER TABLE idempotency_keys DISABLE ROW LEVEL SECURITY;
SQL
done
