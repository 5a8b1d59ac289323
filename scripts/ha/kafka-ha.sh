#!/usr/bin/env bash
# The HA topology's kafka (sourced by stack-ha.sh). Stub: filled in by issue 39's work.

kafka_ha_start() { die "kafka HA: not built yet"; }
kafka_ha_stop() { :; }
kafka_ha_status() { printf '%-9s %s\n' "kafka-ha" "not built yet"; return 3; }
kafka_ha_env() { :; }
kafka_ha_pid() { return 3; }
