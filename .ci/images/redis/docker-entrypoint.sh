#!/usr/bin/env bash
# Entrypoint of the CI stand-in for redis:7 (the official image's contract):
#   `redis-server [config-file] [--option value ...]`, options alone imply redis-server.
# Debian's redis-server is built with protected mode on; the official image builds it off. So
# without a config file, and unless the options set it, `--protected-mode no` is added last.
# Without a config file Redis already binds all interfaces, stays in the foreground and logs to
# stdout (the compiled-in defaults; Debian's /etc/redis/redis.conf is not read).
set -Eeuo pipefail

if [[ ${1:-} == -* || ${1:-} == *.conf ]]; then
  set -- redis-server "$@"
fi

if [[ ${1:-} == redis-server && $(id -u) == 0 ]]; then
  find . \! -user redis -exec chown redis '{}' +
  exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi

if [[ ${1:-} == redis-server && ${2:-} != *.conf && ! -f ${2:-/nonexistent} && " $* " != *" --protected-mode "* ]]; then
  set -- "$@" --protected-mode no
fi

if [[ $(umask) == 0022 ]]; then
  umask 0077
fi

exec "$@"
