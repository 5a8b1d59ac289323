#!/usr/bin/env bash
# CI only: makes a fresh Debian 12 machine (as root) able to run docker-compose.yml and the suite's
# container mode although it cannot pull any image. Idempotent and non-interactive:
#   1. apt-get installs the Debian package of each program it runs when that program is missing
#      (dockerd: docker.io, debootstrap, mvn: maven, ...), and a Go toolchain from the Go module
#      proxy when Compose must be built and no Go >= 1.21 is installed;
#   2. starts dockerd --storage-driver=vfs in the background when `docker info` does not answer;
#   3. builds Docker Compose v2 from the Go module proxy when `docker compose` is missing
#      (in the background, while the images build);
#   4. debootstraps a Debian bookworm base image (the rootfs tarball is cached);
#   5. builds the stand-ins tagged with the official names (postgres:15, redis:7,
#      apache/kafka:3.9.1, node:20-bookworm-slim) when missing or when their inputs changed
#      (label org.payments-ci.inputs holds a hash of the inputs).
# A second run only checks, in a few seconds. Usage: bash .ci/images/prepare.sh
# Environment: PAYMENTS_CI_CACHE (default /var/cache/payments-ci): rootfs tarball, Kafka jars,
# Compose binary, build contexts and logs.
set -Eeuo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="${PAYMENTS_CI_CACHE:-/var/cache/payments-ci}"
LOGS="$CACHE/logs"
BASE_IMAGE=payments-ci/bookworm-base:1 # bump the tag when the base recipe below changes
BASE_TAR="$CACHE/bookworm-minbase.tar"
COMPOSE_VERSION=v2.29.7
KAFKA_VERSION=3.9.1 # the tag docker-compose.yml uses; jars of the same version
KAFKA_LIBS="$CACHE/kafka-$KAFKA_VERSION/libs"
INPUTS_LABEL=org.payments-ci.inputs
# name:tag of every stand-in; the build context is .ci/images/<name>.
IMAGES=(postgres:postgres:15 redis:redis:7 kafka:apache/kafka:3.9.1 node:node:20-bookworm-slim)

started=$SECONDS
log() { printf '[prepare %4ss] %s\n' "$((SECONDS - started))" "$*"; }
die() {
  printf '[prepare] error: %s\n' "$*" >&2
  exit 1
}
# timed LABEL CMD...: runs CMD and prints how long it took.
timed() {
  local label=$1 t0=$SECONDS
  shift
  "$@"
  log "$label: done in $((SECONDS - t0))s"
}
tail_log() { [[ -f $1 ]] && tail -n 40 "$1" | sed 's/^/    /' >&2 || true; }

mkdir -p "$CACHE" "$LOGS"

# ------------------------------------------------------------------ 1. packages
# Each program this script runs, with the Debian package that provides it. Checked by the program,
# not by a neighbour: this kind of machine ships a docker CLI (/usr/local/bin/docker) without an
# engine, so `docker` being there says nothing about dockerd. dockerd runs containerd and runc and
# programs iptables (without them it exits at once); the others come with essential packages on
# Debian, checked anyway so that a missing one is installed up front, not met half-way.
PROGRAMS=(
  dockerd:docker.io docker:docker.io containerd:containerd runc:runc iptables:iptables
  debootstrap:debootstrap mvn:maven
  setsid:util-linux timeout:coreutils sha256sum:coreutils tar:tar awk:mawk xargs:findutils
)
COMPOSE_PLUGIN=/usr/local/lib/docker/cli-plugins/docker-compose
# Compose v2.29.7's go.mod says go 1.21.0; Debian 12's golang-go is 1.19, too old. So Go is the
# machine's (/usr/local/go on this kind of machine), else this toolchain, which the Go module proxy
# serves as the module golang.org/toolchain (as `go` itself fetches it for GOTOOLCHAIN).
GO_MIN_MINOR=21
GO_TOOLCHAIN=go1.22.12
GO_CACHED="$CACHE/go-$GO_TOOLCHAIN/bin/go"
GO=

compose_present() { [[ -x $COMPOSE_PLUGIN ]] || timeout 10 docker compose version >/dev/null 2>&1; }

# Sets GO to the first Go >= 1.$GO_MIN_MINOR found; false when there is none.
find_go() {
  local go v
  for go in "$(command -v go || true)" /usr/local/go/bin/go "$GO_CACHED"; do
    [[ -n $go && -x $go ]] || continue
    v="$("$go" env GOVERSION 2>/dev/null || true)" # go1.22.12
    [[ $v =~ ^go1\.([0-9]+) ]] && ((BASH_REMATCH[1] >= GO_MIN_MINOR)) || continue
    GO=$go
    return 0
  done
  return 1
}

need_packages() {
  local missing=() spec
  for spec in "${PROGRAMS[@]}"; do
    command -v "${spec%%:*}" >/dev/null || missing+=("${spec#*:}")
  done
  # The Go toolchain's download needs curl and unzip (only when Compose is to be built without Go).
  if ! compose_present && ! find_go; then
    command -v curl >/dev/null || missing+=(curl ca-certificates)
    command -v unzip >/dev/null || missing+=(unzip)
  fi
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u | sed '/^$/d')
  [[ ${#missing[@]} -eq 0 ]] && {
    log "packages: dockerd, debootstrap, mvn and the rest present"
    return 0
  }
  [[ $(id -u) == 0 ]] || die "run as root (to apt-get install ${missing[*]})"
  log "packages: apt-get install ${missing[*]}"
  timeout 600 apt-get -o DPkg::Lock::Timeout=300 update -qq >"$LOGS/apt.log" 2>&1 ||
    { tail_log "$LOGS/apt.log"; die "apt-get update failed"; }
  DEBIAN_FRONTEND=noninteractive timeout 1200 apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
    --no-install-recommends "${missing[@]}" >>"$LOGS/apt.log" 2>&1 ||
    { tail_log "$LOGS/apt.log"; die "apt-get install ${missing[*]} failed"; }
  # A package that installed without bringing its program is named here, not by a later
  # "command not found" (as `nohup: failed to run command 'dockerd'` was).
  for spec in "${PROGRAMS[@]}"; do
    command -v "${spec%%:*}" >/dev/null || die "${spec%%:*} still missing after apt-get install ${spec#*:}"
  done
}

# The toolchain module's zip holds golang.org/toolchain@VERSION/{bin,pkg,src,...} without file
# modes (module zips have none): the executables are made executable again, as `go` does.
install_go_toolchain() {
  local proxy url zip dir="$CACHE/go-$GO_TOOLCHAIN" arch
  arch="$(dpkg --print-architecture)"
  proxy="$(go_proxy)"
  url="$proxy/golang.org/toolchain/@v/v0.0.1-$GO_TOOLCHAIN.linux-$arch.zip"
  zip="$CACHE/go-toolchain.zip"
  log "compose: no Go >= 1.$GO_MIN_MINOR here; fetching $GO_TOOLCHAIN from $proxy (log: $LOGS/go.log)"
  timeout 900 curl -fsSL --retry 3 -o "$zip" "$url" >"$LOGS/go.log" 2>&1 ||
    { tail_log "$LOGS/go.log"; die "download of $url failed"; }
  rm -rf "$dir" "$CACHE/go.tmp"
  mkdir -p "$CACHE/go.tmp"
  unzip -q "$zip" -d "$CACHE/go.tmp" >>"$LOGS/go.log" 2>&1 || { tail_log "$LOGS/go.log"; die "unzip $zip failed"; }
  mv "$CACHE/go.tmp/golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.linux-$arch" "$dir"
  rm -rf "$CACHE/go.tmp" "$zip"
  chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/*
  "$GO_CACHED" version >/dev/null || die "$GO_CACHED does not run"
}

# The first proxy of GOPROXY (as the machine's Go or the environment sets it), else the public one.
go_proxy() {
  local p="${GOPROXY:-https://proxy.golang.org}" entry
  for entry in ${p//[,|]/ }; do
    [[ $entry == http* ]] && { printf '%s' "${entry%/}"; return 0; }
  done
  printf 'https://proxy.golang.org'
}

# ------------------------------------------------------------------ 2. docker engine
docker_answers() { timeout 10 docker info --format '{{.ServerVersion}}' >/dev/null 2>&1; }

need_dockerd() {
  if docker_answers; then
    log "docker: engine $(timeout 10 docker info --format '{{.ServerVersion}} ({{.Driver}})') answers"
    return 0
  fi
  [[ $(id -u) == 0 ]] || die "docker does not answer and starting dockerd needs root"
  log "docker: starting dockerd --storage-driver=vfs (log: $LOGS/dockerd.log)"
  setsid nohup dockerd --storage-driver=vfs </dev/null >>"$LOGS/dockerd.log" 2>&1 &
  local i
  for ((i = 0; i < 60; i++)); do
    docker_answers && return 0
    sleep 1
  done
  tail_log "$LOGS/dockerd.log"
  die "dockerd did not answer within 60 s"
}

# ------------------------------------------------------------------ 3. compose v2 (background)
compose_pid=
compose_t0=0

start_compose_build() {
  if timeout 10 docker compose version >/dev/null 2>&1; then
    log "compose: $(timeout 10 docker compose version) present"
    return 0
  fi
  find_go || { install_go_toolchain && find_go; } || die "no Go >= 1.$GO_MIN_MINOR to build Compose with"
  local go=$GO
  log "compose: building $COMPOSE_VERSION with $("$go" env GOVERSION) from the Go module proxy in the background (log: $LOGS/compose.log)"
  compose_t0=$SECONDS
  # Its own process group, so that a failure elsewhere in this script stops it (trap below).
  (
    cd "$CACHE"
    GOBIN="$CACHE/bin" GOFLAGS=-buildvcs=false exec setsid timeout 1800 "$go" install \
      -ldflags "-X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
      "github.com/docker/compose/v2/cmd@$COMPOSE_VERSION"
  ) >"$LOGS/compose.log" 2>&1 &
  compose_pid=$!
  trap stop_compose_build EXIT
}

stop_compose_build() {
  [[ -n $compose_pid ]] && kill -0 "$compose_pid" 2>/dev/null || return 0
  log "compose: stopping the unfinished build"
  kill -- "-$compose_pid" 2>/dev/null || kill "$compose_pid" 2>/dev/null || true
}

finish_compose_build() {
  [[ -n $compose_pid ]] || return 0
  log "compose: waiting for the build"
  local status=0
  wait "$compose_pid" || status=$?
  compose_pid=
  [[ $status -eq 0 ]] || { tail_log "$LOGS/compose.log"; die "building Docker Compose $COMPOSE_VERSION failed"; }
  mkdir -p "$(dirname "$COMPOSE_PLUGIN")"
  install -m 0755 "$CACHE/bin/cmd" "$COMPOSE_PLUGIN"
  log "compose: $(timeout 10 docker compose version) installed as $COMPOSE_PLUGIN in $((SECONDS - compose_t0))s"
}

# ------------------------------------------------------------------ 4. base image
image_exists() { timeout 30 docker image inspect "$1" >/dev/null 2>&1; }

# The mirror apt uses on this machine (deb822 or one-line format), else deb.debian.org.
debian_mirror() {
  local m=
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    m="$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
      /etc/apt/sources.list.d/debian.sources)"
  fi
  if [[ -z $m && -f /etc/apt/sources.list ]]; then
    m="$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' \
      /etc/apt/sources.list)"
  fi
  printf '%s' "${m:-http://deb.debian.org/debian}"
}

build_rootfs_tar() {
  [[ $(id -u) == 0 ]] || die "debootstrap needs root"
  local mirror dir
  mirror="$(debian_mirror)"
  dir="$CACHE/rootfs.tmp"
  rm -rf "$dir"
  log "base: debootstrap --variant=minbase bookworm from $mirror (log: $LOGS/debootstrap.log)"
  timeout 1200 debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$LOGS/debootstrap.log" 2>&1 ||
    { tail_log "$LOGS/debootstrap.log"; die "debootstrap failed"; }
  # As the official debian image: updates and security suites, no recommends, no apt caches.
  rm -f "$dir/etc/apt/sources.list"
  cat >"$dir/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cat >"$dir/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
    >"$dir/etc/apt/apt.conf.d/docker-no-recommends"
  printf 'Acquire::Languages "none";\n' >"$dir/etc/apt/apt.conf.d/docker-no-languages"
  rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb
  tar -C "$dir" --numeric-owner -cf "$BASE_TAR.tmp" .
  mv "$BASE_TAR.tmp" "$BASE_TAR"
  rm -rf "$dir"
}

need_base() {
  if image_exists "$BASE_IMAGE"; then
    log "base: $BASE_IMAGE present"
    return 0
  fi
  [[ -f $BASE_TAR ]] || timed "base: debootstrap" build_rootfs_tar
  log "base: docker import $BASE_TAR as $BASE_IMAGE"
  timeout 600 docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' "$BASE_TAR" "$BASE_IMAGE" >/dev/null
}

# ------------------------------------------------------------------ 5. stand-ins
need_kafka_jars() {
  if [[ -f $KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar ]]; then
    log "kafka jars: $KAFKA_VERSION present in $KAFKA_LIBS"
    return 0
  fi
  log "kafka jars: mvn dependency:copy-dependencies -Dkafka.version=$KAFKA_VERSION (log: $LOGS/mvn.log)"
  rm -rf "$KAFKA_LIBS.tmp"
  # scripts/kafka/pom.xml is the native stack's dependency list; only the version differs.
  timeout 900 mvn -q -B -f "$REPO/scripts/kafka/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$KAFKA_LIBS.tmp" \
    >"$LOGS/mvn.log" 2>&1 || { tail_log "$LOGS/mvn.log"; die "maven download of Kafka $KAFKA_VERSION failed"; }
  [[ -f $KAFKA_LIBS.tmp/kafka_2.13-$KAFKA_VERSION.jar ]] || die "kafka_2.13-$KAFKA_VERSION.jar missing after mvn"
  rm -rf "$KAFKA_LIBS"
  mv "$KAFKA_LIBS.tmp" "$KAFKA_LIBS"
}

# The host's Node (the stand-in's content): binary, headers, npm, corepack.
NODE_BIN="$(command -v node || true)"
NODE_MODULES=/usr/lib/node_modules

# Everything an image is built from, hashed: the base image's id, the files of its directory,
# and the extra inputs staged into its context (jar list, Node version).
inputs_hash() {
  local name=$1
  {
    timeout 30 docker image inspect -f '{{.Id}}' "$BASE_IMAGE"
    (cd "$HERE/$name" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
    case "$name" in
      kafka) (cd "$KAFKA_LIBS" && find . -type f -printf '%P %s\n' | sort) ;;
      node)
        "$NODE_BIN" --version
        sha256sum "$NODE_BIN" | cut -d' ' -f1
        cat "$NODE_MODULES/npm/package.json" "$NODE_MODULES/corepack/package.json" | sha256sum
        ;;
    esac
  } | sha256sum | cut -c1-16
}

# Build context: the image's directory plus the staged inputs.
stage_context() {
  local name=$1 ctx="$CACHE/context/$1"
  rm -rf "$ctx"
  mkdir -p "$ctx"
  cp -a "$HERE/$name/." "$ctx/"
  case "$name" in
    kafka) cp -a "$KAFKA_LIBS" "$ctx/libs" ;;
    node)
      [[ -x $NODE_BIN && -d $NODE_MODULES/npm ]] || die "the node stand-in copies the host's Node 20: node or npm not found"
      mkdir -p "$ctx/node/bin" "$ctx/node/lib/node_modules" "$ctx/node/include"
      cp -a "$(readlink -f "$NODE_BIN")" "$ctx/node/bin/node"
      cp -a "$NODE_MODULES/npm" "$NODE_MODULES/corepack" "$ctx/node/lib/node_modules/"
      [[ ! -d /usr/include/node ]] || cp -a /usr/include/node "$ctx/node/include/"
      ;;
  esac
  printf '%s' "$ctx"
}

# `docker build` containers use the bridge network; when it cannot reach the mirror, the builds
# use the host's network instead.
build_network=
choose_build_network() {
  [[ -z $build_network ]] || return 0
  if timeout 120 docker run --rm "$BASE_IMAGE" apt-get update -qq >"$LOGS/network-check.log" 2>&1; then
    build_network=default
  else
    build_network=host
  fi
  log "images: build network: $build_network (bridge reaches the mirror: $([[ $build_network == default ]] && echo yes || echo no))"
}

smoke() {
  local tag=$1
  case "$tag" in
    postgres:*) timeout 120 docker run --rm --entrypoint postgres "$tag" --version ;;
    redis:*) timeout 120 docker run --rm "$tag" redis-server --version ;;
    apache/kafka:*) timeout 120 docker run --rm "$tag" /opt/kafka/bin/kafka-topics.sh --version ;;
    node:*)
      # shellcheck disable=SC2016 # expanded by the container's shell
      timeout 120 docker run --rm "$tag" sh -c 'echo "node $(node --version), npm $(npm --version)"'
      ;;
  esac
}

need_image() {
  local name=$1 tag=$2 hash current old_id ctx t0=$SECONDS
  [[ $name != kafka ]] || need_kafka_jars
  hash="$(inputs_hash "$name")"
  current="$(timeout 30 docker image inspect -f "{{index .Config.Labels \"$INPUTS_LABEL\"}}" "$tag" 2>/dev/null || true)"
  old_id="$(timeout 30 docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)"
  if [[ $current == "$hash" ]]; then
    log "image $tag: up to date ($INPUTS_LABEL=$hash)"
    return 0
  fi
  choose_build_network
  log "image $tag: building (inputs $hash, was ${current:-missing}; log: $LOGS/build-$name.log)"
  ctx="$(stage_context "$name")"
  DOCKER_BUILDKIT=0 timeout 1800 docker build --network "$build_network" --label "$INPUTS_LABEL=$hash" \
    -t "$tag" "$ctx" >"$LOGS/build-$name.log" 2>&1 ||
    { tail_log "$LOGS/build-$name.log"; die "docker build of $tag failed"; }
  rm -rf "$ctx"
  # The previous build of this tag, now untagged (kept while a container or an image uses it).
  [[ -z $old_id ]] || timeout 120 docker rmi "$old_id" >/dev/null 2>&1 || true
  local out
  if ! out="$(smoke "$tag" 2>&1)"; then
    printf '%s\n' "$out" >&2
    timeout 120 docker rmi "$tag" >/dev/null 2>&1 || true # not "up to date" on the next run
    die "image $tag does not run"
  fi
  log "image $tag: runs: $(tail -n 1 <<<"$out")"
  log "image $tag: built in $((SECONDS - t0))s"
}

# ------------------------------------------------------------------ main
timed "packages" need_packages
timed "docker engine" need_dockerd
start_compose_build
timed "base image" need_base
for spec in "${IMAGES[@]}"; do
  name=${spec%%:*}
  need_image "$name" "${spec#*:}"
done
finish_compose_build
log "images:"
timeout 30 docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' |
  grep -E '^(postgres:15|redis:7|apache/kafka:3.9.1|node:20-bookworm-slim|payments-ci/bookworm-base:1) ' |
  sed 's/^/    /' || true
log "done in $((SECONDS - started))s"
