#!/usr/bin/env bash
# The HA topology's redis (sourced by stack-ha.sh). Stub: filled in by issue 39's work.

redis_ha_start() { die "redis HA: not built yet"; }
redis_ha_stop() { :; }
redis_ha_status() { printf '%-9s %s\n' "redis-ha" "not built yet"; return 3; }
redis_ha_env() { :; }
redis_ha_pid() { return 3; }
