#!/usr/bin/env bash
# kafka-run-class.sh CLASS [ARGS]: runs a class from /opt/kafka/libs with the settings Kafka's own
# script reads (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS, KAFKA_OPTS, KAFKA_LOG4J_OPTS).
set -Eeuo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 CLASS [ARGS]" >&2; exit 2; }
base=/opt/kafka
heap=${KAFKA_HEAP_OPTS:--Xmx256M}
perf=${KAFKA_JVM_PERFORMANCE_OPTS:--server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true}
log4j=${KAFKA_LOG4J_OPTS:--Dlog4j.configuration=file:$base/config/tools-log4j.properties}
# shellcheck disable=SC2086 # the *_OPTS variables are lists of JVM options
exec java $heap $perf $log4j ${KAFKA_OPTS:-} -cp "$base/libs/*" "$@"
