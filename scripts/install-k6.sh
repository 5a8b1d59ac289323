#!/usr/bin/env bash
# Installs k6 (the load generator of k6/*.js) from the Go module proxy: there is no k6 Debian
# package and no binary download on this project's machines, only registries (BRIEF section 10).
# `go install` compiles it, which takes a few minutes on 2 cores from an empty Go cache; the
# binary goes to $K6_BIN_DIR (default <repo>/.stack/bin, git-ignored).
#
# Idempotent: when $K6_BIN_DIR/k6 exists and reports $K6_VERSION, nothing is done.
# Prints the binary's path as its last line, so callers can do K6="$(scripts/install-k6.sh | tail -1)".
#
# Environment: K6_VERSION (v1.8.1), K6_BIN_DIR (<repo>/.stack/bin).
set -euo pipefail

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# v1.8.1 is the newest v1 tag on the Go module proxy when this was written. The v1 line lives at
# module path go.k6.io/k6; v2 moved to go.k6.io/k6/v2, so a bump past v1 changes the path below.
K6_VERSION="${K6_VERSION:-v1.8.1}"
K6_BIN_DIR="${K6_BIN_DIR:-$ROOT_DIR/.stack/bin}"
case "$K6_BIN_DIR" in /*) ;; *) K6_BIN_DIR="$PWD/$K6_BIN_DIR" ;; esac
K6="$K6_BIN_DIR/k6"
GO_MIN_MINOR=25 # k6 v1.x's go.mod needs Go >= 1.25

log() { printf 'install-k6: %s\n' "$*" >&2; }

if [[ -x $K6 ]] && "$K6" version 2>/dev/null | grep -q "k6 ${K6_VERSION}"; then
  log "k6 ${K6_VERSION} already at $K6"
  echo "$K6"
  exit 0
fi

if ! command -v go >/dev/null; then
  log "go is not on PATH; install Go >= 1.${GO_MIN_MINOR} (https://go.dev/dl/) or k6 itself (docs/development.md, section k6)"
  exit 1
fi
go_minor="$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')"
if [[ ! $go_minor =~ ^[0-9]+$ ]] || ((go_minor < GO_MIN_MINOR)); then
  log "k6 ${K6_VERSION} needs Go >= 1.${GO_MIN_MINOR}; found $(go env GOVERSION)"
  exit 1
fi

mkdir -p "$K6_BIN_DIR"
log "building go.k6.io/k6@${K6_VERSION} with $(go env GOVERSION) (a few minutes from an empty Go cache)"
started=$SECONDS
# GOTOOLCHAIN=local: build with the Go found here, never download another toolchain.
# CGO_ENABLED=0: k6 needs no C code, and a static binary does not depend on the C toolchain.
GOBIN="$K6_BIN_DIR" GOTOOLCHAIN=local CGO_ENABLED=0 go install "go.k6.io/k6@${K6_VERSION}"
"$K6" version >&2
log "installed in $((SECONDS - started)) s"
echo "$K6"
