#!/usr/bin/env bash
# The HA topology of the backing services, natively on one machine (STACK_TOPOLOGY=ha
# scripts/stack.sh ...): three KRaft Kafka brokers (SASL_SSL, SCRAM), a Redis primary with a
# replica and three Sentinels (TLS, ACL users) plus a three-master Redis Cluster, and a Postgres
# primary with a synchronous standby behind haproxy (TLS, verify-full). One CA, made by tls.sh,
# signs every server certificate. Everything listens on 127.0.0.1; data, logs and certificates
# live under $STACK_DIR/ha.
#
# Sourced by scripts/stack.sh (its helpers: log, die, wait_for, port_open, kill_wait, pid_from,
# as_pg, kafka_tool, install_packages, install_kafka, ...), never run on its own.
#
# Usage: STACK_TOPOLOGY=ha scripts/stack.sh start|stop|status|env [kafka|redis|postgres ...]
#        STACK_TOPOLOGY=ha scripts/stack.sh pid <what>     (one pid a line; exit 3 if none)
#          kafka-node N | kafka-controller | redis-node N | redis-primary | redis-sentinel N |
#          postgres-node N | postgres-primary | haproxy
#        STACK_TOPOLOGY=ha scripts/stack.sh promote postgres   (the standby becomes the primary)
#
# Ports (each plus HA_PORT_OFFSET, default 0):
#   Kafka brokers 7092-7094, controllers 7095-7097
#   Redis nodes 7379 (1) and 7380 (2), Sentinels 7381-7383, Cluster masters 7391-7393
#   Postgres haproxy front 7432, nodes 7433 (1) and 7434 (2)
# shellcheck disable=SC2034 # the engine files read these

HA_DIR="$STACK_DIR/ha"
HA_PORT_OFFSET="${HA_PORT_OFFSET:-0}"
ha_port() { echo $(($1 + HA_PORT_OFFSET)); }

HA_ENGINES=(postgres redis kafka)

# shellcheck source=scripts/ha/tls.sh
source "$ROOT_DIR/scripts/ha/tls.sh"
# shellcheck source=scripts/ha/postgres-ha.sh
source "$ROOT_DIR/scripts/ha/postgres-ha.sh"
# shellcheck source=scripts/ha/redis-ha.sh
source "$ROOT_DIR/scripts/ha/redis-ha.sh"
# shellcheck source=scripts/ha/kafka-ha.sh
source "$ROOT_DIR/scripts/ha/kafka-ha.sh"

ha_parse_engines() {
  HA_SELECTED=()
  if (($# == 0)); then HA_SELECTED=("${HA_ENGINES[@]}"); return 0; fi
  local e
  for e in "$@"; do
    case "$e" in
      postgres | postgresql | pg) HA_SELECTED+=(postgres) ;;
      redis) HA_SELECTED+=(redis) ;;
      kafka) HA_SELECTED+=(kafka) ;;
      *) die "unknown HA service '$e' (postgres|redis|kafka)" ;;
    esac
  done
}

ha_usage() {
  echo "usage: STACK_TOPOLOGY=ha $0 start|stop|status|env [postgres|redis|kafka ...] | pid <what> | promote postgres" >&2
  exit 2
}

ha_main() {
  (($# >= 1)) || ha_usage
  local cmd=$1 e t0=$SECONDS rc=0
  shift
  case "$cmd" in
    start)
      ha_parse_engines "$@"
      take_lock
      cmd_install
      install_ha_packages
      tls_ensure
      for e in "${HA_SELECTED[@]}"; do "${e}_ha_start"; done
      log "HA topology ready in $((SECONDS - t0))s"
      for e in "${HA_SELECTED[@]}"; do "${e}_ha_status" || true; done
      ;;
    stop)
      ha_parse_engines "$@"
      take_lock
      for e in kafka redis postgres; do
        if [[ " ${HA_SELECTED[*]} " == *" $e "* ]]; then "${e}_ha_stop"; fi
      done
      ;;
    status)
      ha_parse_engines "$@"
      for e in "${HA_SELECTED[@]}"; do "${e}_ha_status" || rc=3; done
      return "$rc"
      ;;
    env)
      # Every engine's lines, whatever arguments: the app needs all three.
      tls_ensure_quiet
      echo "export STACK_TOPOLOGY=ha"
      for e in "${HA_ENGINES[@]}"; do "${e}_ha_env"; done
      echo "export SECRETS_KEYS_FILE=$(secrets_keys_file)"
      echo "export ACQUIRER_TOKEN=dev-acquirer-token-not-secret"
      ;;
    pid)
      (($# >= 1)) || ha_usage
      case "$1" in
        kafka-*) kafka_ha_pid "$@" ;;
        redis-*) redis_ha_pid "$@" ;;
        postgres-* | haproxy) postgres_ha_pid "$@" ;;
        *) ha_usage ;;
      esac
      ;;
    promote)
      [[ ${1:-} == postgres ]] || ha_usage
      take_lock
      postgres_ha_promote
      ;;
    *) ha_usage ;;
  esac
}

# haproxy fronts Postgres; openssl makes the CA. Debian packages, installed when missing.
install_ha_packages() {
  local missing=()
  command -v haproxy >/dev/null || missing+=(haproxy)
  command -v openssl >/dev/null || missing+=(openssl)
  ((${#missing[@]} == 0)) && return 0
  ((EUID == 0)) || die "missing packages: ${missing[*]} (install them or run as root)"
  local apt_log="$STACK_DIR/apt-ha.log" lock=(-o DPkg::Lock::Timeout=300)
  log "installing ${missing[*]} via apt-get (log: $apt_log)"
  { apt-get "${lock[@]}" update -q && DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install \
      -y -q --no-install-recommends "${missing[@]}"; } >"$apt_log" 2>&1 ||
    { tail_logs "$apt_log"; die "apt-get failed"; }
  # The packaged haproxy service must not hold a port or restart at boot.
  if [[ -d /run/systemd/system ]]; then
    systemctl disable --now haproxy >/dev/null 2>&1 || true
  else
    service haproxy stop >/dev/null 2>&1 || true
    update-rc.d haproxy disable >/dev/null 2>&1 || true
  fi
}
