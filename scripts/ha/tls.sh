#!/usr/bin/env bash
# The HA topology's CA and the one server certificate every engine presents (CN localhost,
# SANs localhost and 127.0.0.1), made once under $HA_DIR/tls and kept. Sourced by stack-ha.sh.
#   ca.pem          the CA certificate: clients trust it (KAFKA_SSL_CA_FILE, sslrootcert, ...)
#   ca.key          the CA's key (never leaves this folder)
#   server.pem      the server certificate, signed by the CA
#   server.key      its key, PKCS#8, unencrypted, mode 0600
#   server-full.pem server.key + server.pem in one file (Kafka's PEM keystore)

TLS_DIR="$HA_DIR/tls"
TLS_DAYS=825

tls_ensure_quiet() { [[ -s $TLS_DIR/ca.pem && -s $TLS_DIR/server.pem ]] || tls_ensure; }

tls_ensure() {
  [[ -s $TLS_DIR/ca.pem && -s $TLS_DIR/server.pem && -s $TLS_DIR/server-full.pem ]] && return 0
  command -v openssl >/dev/null || die "openssl is missing (scripts/stack.sh start installs it)"
  local tmp
  # shellcheck disable=SC2174 # the mode is meant for the last component only
  mkdir -p -m 755 "$HA_DIR"
  tmp="$(mktemp -d "$HA_DIR/.tls.XXXXXX")"
  chmod 755 "$tmp"
  log "making the HA topology's CA and server certificate in $TLS_DIR"
  {
    openssl req -x509 -newkey rsa:2048 -nodes -days "$TLS_DAYS" -subj "/CN=payments-stack-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -keyout "$tmp/ca.key" -out "$tmp/ca.pem" &&
      openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$tmp/server.key" &&
      openssl req -new -key "$tmp/server.key" -subj "/CN=localhost" -out "$tmp/server.csr" &&
      printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n' \
        >"$tmp/server.ext" &&
      openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
        -CAcreateserial -days "$TLS_DAYS" -extfile "$tmp/server.ext" -out "$tmp/server.pem"
  } >"$tmp/openssl.log" 2>&1 || { tail_logs "$tmp/openssl.log"; rm -rf "$tmp"; die "openssl failed"; }
  cat "$tmp/server.key" "$tmp/server.pem" >"$tmp/server-full.pem"
  chmod 600 "$tmp/ca.key" "$tmp/server.key" "$tmp/server-full.pem"
  chmod 644 "$tmp/ca.pem" "$tmp/server.pem"
  rm -f "$tmp/server.csr" "$tmp/server.ext" "$tmp/ca.srl" "$tmp/openssl.log"
  rm -rf "$TLS_DIR"
  mv "$tmp" "$TLS_DIR"
}
