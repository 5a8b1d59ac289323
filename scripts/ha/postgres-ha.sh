#!/usr/bin/env bash
# The HA topology's Postgres (sourced by stack-ha.sh), DESIGN 124: a primary and a synchronous
# standby (synchronous_commit = on, synchronous_standby_names = FIRST 1 (the standby)), TLS on
# every TCP login (hostssl, scram), behind haproxy on one stable address that follows the
# primary. Node 1 on ha_port 7433 and node 2 on 7434 (node 1 is the first primary), haproxy on
# 7432. The current primary's node number is kept in $HA_DIR/postgres/primary.
#
#   start    starts what is down; a node that is not a standby of the current primary (the old
#            primary after a promote, or no data) is rebuilt from a fresh base backup; then the
#            standby is made synchronous again
#   promote  the standby becomes the primary: the old primary is fenced (stopped if it still
#            runs), pg_ctl promote, no synchronous standby (degraded: logged), haproxy switched
#
# SC2174: mkdir -p -m applies the mode to the last component only, as intended.
# shellcheck disable=SC2174
# shellcheck source=scripts/ha/postgres-ha-node.sh
source "$ROOT_DIR/scripts/ha/postgres-ha-node.sh"
# shellcheck source=scripts/ha/postgres-ha-proxy.sh
source "$ROOT_DIR/scripts/ha/postgres-ha-proxy.sh"

postgres_ha_start() {
  local p s
  p="$(pgha_primary)"
  s="$(pgha_other "$p")"
  mkdir -p -m 755 "$PGHA_DIR"
  [[ -f $PGHA_STATE ]] || echo "$p" >"$PGHA_STATE"
  pgha_dirs "$p"
  pgha_dirs "$s"
  # The primary: created on the first start only; never rebuilt from the standby here.
  if [[ ! -f "$(pgha_data "$p")/PG_VERSION" ]]; then
    [[ -f "$(pgha_data "$s")/PG_VERSION" ]] &&
      die "postgres HA: primary node $p has no data but node $s has: promote it first"
    pgha_initdb "$p"
  fi
  [[ -f "$(pgha_data "$p")/standby.signal" ]] &&
    die "postgres HA: node $p is the primary in $PGHA_STATE but its data is a standby's"
  pgha_start_node "$p"
  pgha_bootstrap "$p"
  # The standby: rebuilt unless its data is already a standby's (an old primary's is not).
  if [[ ! -f "$(pgha_data "$s")/standby.signal" ]]; then pgha_rebuild_standby "$s" "$p"; fi
  pgha_start_node "$s"
  local deadline=$((SECONDS + WAIT_SECS))
  until pgha_in_recovery "$s" t; do
    ((SECONDS < deadline)) || { tail_logs "$(pgha_log "$s")"; die "postgres HA: node $s did not start as a standby"; }
    sleep 1
  done
  # Synchronous again once it streams (the setting waits for it; written once, then kept).
  if ! grep -q "$(pgha_app_name "$s")" "$(pgha_data "$p")/sync.conf"; then
    log "postgres HA: node $s is the synchronous standby of node $p"
    pgha_write_sync "$p" "$(pgha_app_name "$s")"
    pgha_psql "$p" -c 'select pg_reload_conf()' >/dev/null
  fi
  wait_for "postgres HA synchronous standby (node $s)" "pgha_sync_ok_now" "pgha_both_running" \
    "$(pgha_log "$s")" "$(pgha_log "$p")"
  pgha_proxy_ensure "$p"
  wait_for "postgres HA via haproxy" pgha_proxy_ready pgha_proxy_pid "$(pgha_log "$p")"
}

pgha_sync_ok_now() { pgha_sync_ok "$(pgha_primary)" "$(pgha_other "$(pgha_primary)")"; }
pgha_both_running() { pgha_running 1 && pgha_running 2; }

postgres_ha_stop() {
  local p
  p="$(pgha_primary)"
  pgha_proxy_stop
  # The primary first: its shutdown checkpoint reaches the standby before that stops.
  pgha_stop_node "$p"
  pgha_stop_node "$(pgha_other "$p")"
}

postgres_ha_status() {
  local p n pid role rc=0
  p="$(pgha_primary)"
  for n in 1 2; do
    role=stopped
    if pid="$(pgha_pid "$n")"; then
      if pgha_in_recovery "$n" t; then
        role=standby
        pgha_sync_ok "$p" "$n" && role="standby (sync)"
      elif pgha_in_recovery "$n" f; then
        role=primary
        [[ $n == "$p" ]] || role="writable, NOT the primary (fence it)"
      else
        role=not-answering
      fi
    else
      pid=''
    fi
    printf '%-11s %-22s 127.0.0.1:%-6s %s\n' "postgres-$n" "$role" "$(pgha_port "$n")" "${pid:+pid $pid}"
    [[ $role == primary || $role == "standby (sync)" ]] || rc=3
  done
  role=stopped
  if pid="$(pgha_proxy_pid)"; then
    role=not-answering
    pgha_proxy_ready && role="-> node $p"
  else
    pid=''
  fi
  printf '%-11s %-22s 127.0.0.1:%-6s %s\n' haproxy "$role" "$(pgha_proxy_port)" "${pid:+pid $pid}"
  [[ $role == "-> node $p" ]] || rc=3
  return "$rc"
}

postgres_ha_env() {
  local base role query
  base="127.0.0.1:$(pgha_proxy_port)/$APP_DB"
  query="sslmode=verify-full&sslrootcert=$TLS_DIR/ca.pem"
  echo "export DATABASE_URL='postgres://$APP_USER:$APP_PASSWORD@$base?$query'"
  echo "export MIGRATION_DATABASE_URL='postgres://$APP_USER:$APP_PASSWORD@$base?$query'"
  for role in api relay settlement webhooks acquirer; do
    echo "export ${role^^}_DATABASE_URL='postgres://payments_$role:payments_$role@$base?$query'"
  done
}

postgres_ha_pid() {
  local pid
  case "$1" in
    postgres-node)
      [[ ${2:-} == 1 || ${2:-} == 2 ]] || die "usage: pid postgres-node 1|2"
      pgha_pid "$2" || return 3
      ;;
    postgres-primary) pgha_pid "$(pgha_primary)" || return 3 ;;
    haproxy) pgha_proxy_pid || return 3 ;;
    *) die "unknown postgres pid '$1' (postgres-node N | postgres-primary | haproxy)" ;;
  esac
}

postgres_ha_promote() {
  local old new
  old="$(pgha_primary)"
  new="$(pgha_other "$old")"
  if ! pgha_running "$new" || ! pgha_in_recovery "$new" t; then
    die "postgres HA: node $new is not a running standby; nothing to promote"
  fi
  # Fencing: a primary that still runs must stop taking writes before another one exists.
  if pgha_running "$old"; then
    log "postgres HA: fencing node $old (old primary still running: immediate stop)"
    pgha_stop_node "$old" immediate
  fi
  # No standby is left: a synchronous_standby_names naming one would hang every commit.
  pgha_write_sync "$new" ''
  log "postgres HA: promoting node $new"
  as_pg "$PG_BIN/pg_ctl" -D "$(pgha_data "$new")" -w -t "$WAIT_SECS" -s promote 9>&- ||
    die "pg_ctl promote of node $new failed"
  pgha_psql "$new" -c 'select pg_reload_conf()' >/dev/null
  echo "$new" >"$PGHA_STATE.tmp" && mv "$PGHA_STATE.tmp" "$PGHA_STATE"
  pgha_proxy_ensure "$new"
  wait_for "postgres HA via haproxy" pgha_proxy_ready pgha_proxy_pid "$(pgha_log "$new")"
  log "postgres HA: DEGRADED: node $new is the primary with no synchronous standby; node $old stays out until 'start' rebuilds it"
}
