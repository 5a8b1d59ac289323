#!/bin/sh
# docker-compose.yml's kafka-1..3 (profile ha), in the apache/kafka image: one KRaft node, broker
# and controller, of three. Clients and brokers talk SASL_SSL with SCRAM-SHA-512 on 29092; the
# controllers talk mutual TLS on 9093 (KRaft keeps SCRAM credentials in its own log, so the
# controller link cannot use them). The SCRAM users (admin for the brokers, payments for the
# service) are written when the storage is formatted. RF 3, min ISR 2, unclean election off.
# Environment: HA_KAFKA_NODE_ID, HA_KAFKA_CLUSTER_ID, HA_KAFKA_ADMIN_PASSWORD,
# HA_KAFKA_PAYMENTS_PASSWORD. POSIX sh.
set -eu

id=${HA_KAFKA_NODE_ID:?}
dir=/tmp/kafka-ha
mkdir -p "$dir/data"
jaas="org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"$HA_KAFKA_ADMIN_PASSWORD\";"

cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=$id
controller.quorum.voters=1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093
listeners=SASL_SSL://0.0.0.0:29092,CONTROLLER://0.0.0.0:9093
advertised.listeners=SASL_SSL://kafka-$id:29092
listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:SSL
controller.listener.names=CONTROLLER
inter.broker.listener.name=SASL_SSL
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=$jaas
listener.name.controller.ssl.client.auth=required
ssl.keystore.type=PEM
ssl.keystore.location=/tls/server-full.pem
ssl.truststore.type=PEM
ssl.truststore.location=/tls/ca.pem
log.dirs=$dir/data
num.partitions=12
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
unclean.leader.election.enable=false
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0
PROPS

# What the healthcheck (and an operator: kafka-topics.sh --command-config) connects with.
cat >"$dir/client.properties" <<PROPS
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=$jaas
ssl.truststore.type=PEM
ssl.truststore.location=/tls/ca.pem
PROPS

/opt/kafka/bin/kafka-storage.sh format --ignore-formatted -t "$HA_KAFKA_CLUSTER_ID" \
  -c "$dir/server.properties" \
  --add-scram "SCRAM-SHA-512=[name=admin,password=$HA_KAFKA_ADMIN_PASSWORD]" \
  --add-scram "SCRAM-SHA-512=[name=payments,password=$HA_KAFKA_PAYMENTS_PASSWORD]"
exec /opt/kafka/bin/kafka-server-start.sh "$dir/server.properties"
