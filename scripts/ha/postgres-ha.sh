#!/usr/bin/env bash
# The HA topology's postgres (sourced by stack-ha.sh). Stub: filled in by issue 39's work.

postgres_ha_start() { die "postgres HA: not built yet"; }
postgres_ha_stop() { :; }
postgres_ha_status() { printf '%-9s %s\n' "postgres-ha" "not built yet"; return 3; }
postgres_ha_env() { :; }
postgres_ha_pid() { return 3; }
postgres_ha_promote() { die "postgres HA: not built yet"; }
