#!/usr/bin/env bash
# kafka-server-start.sh server.properties [--override k=v ...]: the broker in the foreground.
set -Eeuo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 server.properties [--override property=value]*" >&2; exit 2; }
export KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}
export KAFKA_LOG4J_OPTS=${KAFKA_LOG4J_OPTS:--Dlog4j.configuration=file:/opt/kafka/config/log4j.properties}
exec /opt/kafka/bin/kafka-run-class.sh kafka.Kafka "$@"
