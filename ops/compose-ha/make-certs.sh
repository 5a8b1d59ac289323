#!/bin/sh
# docker-compose.yml's ha-certs service (profile ha): the HA topology's CA and one server
# certificate, made once with the postgres:15 image's openssl and kept in volumes, so that each
# container mounts only what it needs:
#   /tls-ca        ca.pem                              every client and server (read-only)
#   /tls-private   ca.key                              this service only
#   /tls-postgres  ca.pem server.pem server.key        postgres (uid 999), 0600 as it demands
#   /tls-redis     ca.pem server.pem server.key        redis (uid 999)
#   /tls-kafka     ca.pem server-full.pem              the brokers: key + certificate, PEM keystore
# The certificate names every service of the profile (verify-full / hostname checks pass on any).
# Idempotent: an existing CA is kept. POSIX sh.
set -eu

names="kafka-1 kafka-2 kafka-3 redis-1 redis-2 sentinel-1 sentinel-2 sentinel-3 pg-1 pg-2 pg-proxy localhost"
days=825

if [ -s /tls-ca/ca.pem ] && [ -s /tls-postgres/server.key ] && [ -s /tls-redis/server.key ] &&
  [ -s /tls-kafka/server-full.pem ]; then
  echo "ha-certs: certificates already made"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
san="IP:127.0.0.1"
for name in $names; do san="$san,DNS:$name"; done

openssl req -x509 -newkey rsa:2048 -nodes -days "$days" -subj "/CN=payments-compose-ha-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -keyout "$work/ca.key" -out "$work/ca.pem"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/server.key"
openssl req -new -key "$work/server.key" -subj "/CN=payments-compose-ha" -out "$work/server.csr"
printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n' \
  "$san" >"$work/server.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
  -CAcreateserial -days "$days" -extfile "$work/server.ext" -out "$work/server.pem"

install -m 0644 "$work/ca.pem" /tls-ca/ca.pem
install -m 0600 "$work/ca.key" /tls-private/ca.key
for engine in postgres redis; do
  install -m 0644 -o 999 -g 999 "$work/ca.pem" "$work/server.pem" "/tls-$engine/"
  install -m 0600 -o 999 -g 999 "$work/server.key" "/tls-$engine/server.key"
done
# The brokers run as the kafka image's appuser; the volume is mounted into the brokers only.
install -m 0644 "$work/ca.pem" /tls-kafka/ca.pem
cat "$work/server.key" "$work/server.pem" >"$work/server-full.pem"
install -m 0644 "$work/server-full.pem" /tls-kafka/server-full.pem
echo "ha-certs: CA and server certificate made for: $names"
