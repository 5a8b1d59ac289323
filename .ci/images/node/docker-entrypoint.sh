#!/bin/sh
# As in the official node image: `docker run node:20-bookworm-slim -e '...'` or a script path
# runs node; any other command runs as given.
set -e
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
