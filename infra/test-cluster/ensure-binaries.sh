#!/usr/bin/env bash
# Makes sure the binaries of the test cluster (tests/support/kube-cluster.ts) exist:
#   - etcd            Debian package etcd-server (/usr/bin/etcd)
#   - kube-apiserver  v1.20, built from Debian bookworm's `kubernetes` source package (with the patches
#                     below) and cached OUTSIDE the repository at
#                       ${BERTH_CACHE_DIR:-$HOME/.cache/berth}/kube-apiserver-1.20/<source version>-<patch level>/kube-apiserver
#                     with the link .../kube-apiserver-1.20/kube-apiserver -> <that folder>/kube-apiserver
#
# Idempotent and unattended: a second run takes ~0.3 s; only a new machine, a new Debian source version
# or a new PATCH_LEVEL pays for the build: 5 min on an idle 2-core machine, 11 min on a busy one.
# Concurrent callers serialize on a flock, so the build happens once. Runs as root or with passwordless sudo.
#
# Usage: bash infra/test-cluster/ensure-binaries.sh [--check]
#   --check   only report; exit 1 if a binary is missing (installs and builds nothing)
# Env:   BERTH_CACHE_DIR   cache root (default $HOME/.cache/berth)
#        BERTH_REBUILD=1   rebuild kube-apiserver even if cached
# Prints `etcd=<path>` and `kube-apiserver=<path>` on stdout; progress and timings on stderr.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C.UTF-8

CHECK_ONLY=0
[[ "${1:-}" == "--check" ]] && CHECK_ONLY=1

CACHE_DIR="${BERTH_CACHE_DIR:-${HOME:-/root}/.cache/berth}"
KAS_DIR="$CACHE_DIR/kube-apiserver-1.20"
KAS_LINK="$KAS_DIR/kube-apiserver"
SRC_PACKAGE=kubernetes
SRC_SUITE=bookworm
# Bump whenever the patches applied to the source change: the cache folder is <source version>-<PATCH_LEVEL>,
# so every machine holding an older build rebuilds on its next run. Keep in sync with
# KUBE_APISERVER_PATCH_LEVEL in tests/support/kube-cluster.ts.
#   (none)  reflect2 1.0.2
#   berth2  + go-openapi/validate zero-value fix ("" in a custom resource was refused as null)
PATCH_LEVEL=berth2
T0=$(date +%s)

log() { printf '[ensure-binaries +%ss] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
trap 'log "ERROR: command failed (exit $?) at line $LINENO: $BASH_COMMAND"' ERR

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || die "must run as root (or with sudo) to install Debian packages"
  SUDO=(sudo -n)
fi

etcd_path() {
  if [[ -x /usr/bin/etcd ]]; then echo /usr/bin/etcd; else command -v etcd || true; fi
}

kas_ok() { # $1: binary
  [[ -x "$1" ]] && "$1" --version 2>/dev/null | grep -q '^Kubernetes v1\.20\.'
}

# The link points at a build of the current PATCH_LEVEL (older builds lack fixes the tests rely on).
link_current() {
  [[ "$(readlink "$KAS_LINK" 2>/dev/null)" == *"-$PATCH_LEVEL/kube-apiserver" ]] && kas_ok "$KAS_LINK"
}

report() {
  local etcd
  etcd=$(etcd_path)
  echo "etcd=${etcd}"
  echo "kube-apiserver=${KAS_LINK}"
  log "etcd: ${etcd} ($("$etcd" --version 2>/dev/null | head -1))"
  log "kube-apiserver: ${KAS_LINK} -> $(readlink "$KAS_LINK") ($("$KAS_LINK" --version))"
  log "done in $(($(date +%s) - T0))s"
}

if [[ $CHECK_ONLY == 1 ]]; then
  ok=1
  [[ -n "$(etcd_path)" ]] || { log "etcd missing"; ok=0; }
  if ! kas_ok "$KAS_LINK"; then
    log "kube-apiserver missing at $KAS_LINK"; ok=0
  elif ! link_current; then
    log "kube-apiserver at $KAS_LINK -> $(readlink "$KAS_LINK") is an outdated build (want patch level $PATCH_LEVEL)"; ok=0
  fi
  [[ $ok == 1 ]] || exit 1
  report
  exit 0
fi

mkdir -p "$KAS_DIR"
exec 9>"$CACHE_DIR/ensure-binaries.lock"
if ! flock -n 9; then
  log "another ensure-binaries.sh holds $CACHE_DIR/ensure-binaries.lock; waiting for it"
  flock 9
  log "lock acquired"
fi

# ---- apt helpers (apt_update, apt_install, cleanup_policy) ----------------------------------------
source "$(dirname "$0")/../test-tools/apt.sh"

WORK=""
cleanup() {
  cleanup_policy
  if [[ -n "$WORK" ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

# ---- etcd ------------------------------------------------------------------------------------------
if [[ -z "$(etcd_path)" ]]; then
  apt_install etcd-server
  [[ -n "$(etcd_path)" ]] || die "etcd-server installed but no etcd binary found"
fi

# ---- kube-apiserver -------------------------------------------------------------------------------
has_deb_src() {
  # `|| true`: grep exits 2 when /etc/apt/sources.list does not exist (deb822-only images), which
  # pipefail would turn into "no deb-src" even when it matched in sources.list.d.
  { grep -rhsE '^[[:space:]]*(deb-src[[:space:]]|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null || true; } | grep -q .
}

# The source version apt knows (local lists only, no network); empty without deb-src lists.
src_version() {
  { apt-cache showsrc "$SRC_PACKAGE" 2>/dev/null || true; } | awk '/^Version:/ {print $2}' | sort -V | tail -1
}

add_deb_src() {
  # Reuse the Debian mirror (and keyring) apt already uses for deb lines.
  local uri="" keyring=""
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    uri=$(awk '/^URIs:/ && !/security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
    keyring=$(awk '/^Signed-By:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [[ -z "$uri" ]]; then
    uri=$(grep -hsE '^deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      grep -v security | grep -oE '(https?|mirror)[^[:space:]]*debian/?' | head -1 || true)
  fi
  uri=${uri:-http://deb.debian.org/debian}
  if [[ -z "$keyring" && -f /usr/share/keyrings/debian-archive-keyring.gpg ]]; then
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  fi
  log "adding deb-src $uri $SRC_SUITE main (/etc/apt/sources.list.d/berth-deb-src.sources)"
  {
    echo "Types: deb-src"
    echo "URIs: $uri"
    echo "Suites: $SRC_SUITE"
    echo "Components: main"
    if [[ -n "$keyring" ]]; then echo "Signed-By: $keyring"; fi
  } | "${SUDO[@]}" tee /etc/apt/sources.list.d/berth-deb-src.sources >/dev/null
  APT_UPDATED=0
}

link_cached() { # $1: cache key (<source version>-<patch level>)
  ln -sfn "$1/kube-apiserver" "$KAS_LINK.tmp"
  mv -Tf "$KAS_LINK.tmp" "$KAS_LINK"
}

# Builds of this source version made with older patches are superseded: free their ~110 MB.
# (A running apiserver keeps its deleted executable; nothing else refers to these folders.)
prune_superseded() { # $1: source version
  local d
  for d in "$KAS_DIR/$1" "$KAS_DIR/$1"-*; do
    [[ -d "$d" && "$d" != "$KAS_DIR/$1-$PATCH_LEVEL" ]] || continue
    log "removing superseded build $d"
    rm -rf "$d"
  done
}

need_build=1
SRCVER=""
if [[ "${BERTH_REBUILD:-0}" != 1 ]]; then
  SRCVER=$(src_version)
  if [[ -n "$SRCVER" ]]; then
    if kas_ok "$KAS_DIR/$SRCVER-$PATCH_LEVEL/kube-apiserver"; then
      [[ "$(readlink "$KAS_LINK" 2>/dev/null)" == "$SRCVER-$PATCH_LEVEL/kube-apiserver" ]] || link_cached "$SRCVER-$PATCH_LEVEL"
      need_build=0
    fi
  elif link_current; then
    # No deb-src lists here: trust the cached build (if it has the current patches) rather than
    # touching the network.
    need_build=0
  fi
fi

if [[ $need_build == 1 ]]; then
  T_BUILD=$(date +%s)
  has_deb_src || add_deb_src
  if [[ -z "$(src_version)" ]]; then APT_UPDATED=0; apt_update; fi
  SRCVER=$(src_version)
  [[ -n "$SRCVER" ]] || die "apt knows no source package '$SRC_PACKAGE' (deb-src for $SRC_SUITE missing?)"
  KEY="$SRCVER-$PATCH_LEVEL"
  if [[ "${BERTH_REBUILD:-0}" != 1 ]] && kas_ok "$KAS_DIR/$KEY/kube-apiserver"; then
    link_cached "$KEY"
  else
    log "building kube-apiserver from Debian source $SRC_PACKAGE $SRCVER, patch level $PATCH_LEVEL (5-11 min on 2 cores)"
    # golang-go: Debian's Go (1.19 on bookworm); reflect2 1.0.2 replaces the vendored 1.0.1, which
    # panics under Go >= 1.18 as soon as a CRD object is decoded; dpkg-dev for apt-get source.
    apt_install golang-go golang-github-modern-go-reflect2-dev dpkg-dev make rsync
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/berth-kube-apiserver-build.XXXXXX")
    chmod 755 "$WORK"
    T=$(date +%s)
    (cd "$WORK" && "${SUDO[@]}" apt-get source -qq "$SRC_PACKAGE=$SRCVER" >"$WORK/apt-source.log" 2>&1) ||
      { apt_update; (cd "$WORK" && "${SUDO[@]}" apt-get source -qq "$SRC_PACKAGE=$SRCVER" >"$WORK/apt-source.log" 2>&1); } ||
      { cat "$WORK/apt-source.log" >&2; die "apt-get source $SRC_PACKAGE=$SRCVER failed"; }
    [[ -z "${SUDO[*]}" ]] || "${SUDO[@]}" chown -R "$(id -u):$(id -g)" "$WORK"
    SRC=$(find "$WORK" -mindepth 1 -maxdepth 1 -type d -name "${SRC_PACKAGE}-*" | head -1)
    [[ -n "$SRC" && -d "$SRC/vendor" ]] || die "unpacked source not found in $WORK"
    log "source unpacked in $(($(date +%s) - T))s: $SRC"

    # reflect2 fix.
    R2=/usr/share/gocode/src/github.com/modern-go/reflect2
    [[ -f "$R2/go_above_118.go" ]] || die "$R2 is not reflect2 >= 1.0.2"
    rm -rf "$SRC/vendor/github.com/modern-go/reflect2"
    cp -r "$R2" "$SRC/vendor/github.com/modern-go/reflect2"
    sed -i 's#github.com/modern-go/reflect2 v1\.0\.1#github.com/modern-go/reflect2 v1.0.2#g' "$SRC/go.mod" "$SRC/vendor/modules.txt"
    grep -q 'reflect2 v1.0.2' "$SRC/vendor/modules.txt" || die "could not bump reflect2 in vendor/modules.txt"

    # go-openapi/validate zero-value fix (go-openapi/validate#138, kube-openapi#230, kubernetes#99804).
    # typeValidator treats a value as null when
    #   reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data))
    # which compares the two reflect.Value headers, pointers included. Before Go 1.16 reflect.Zero
    # allocated, so that was never true; since Go 1.16 (golang.org/cl/192331) it returns the runtime's
    # shared zero buffer, which is also where an interface holding "" points. So with Go 1.19 every ""
    # in a custom resource (and every `default: ""`) fails "must be of type string: \"null\"". Upstream
    # (Kubernetes >= 1.21) keeps only the nil check; so does this. The kube-openapi copy is not linked
    # into 1.20's apiserver but carries the same line: patch both so no path keeps the bug.
    ZERO_CHECK='if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {'
    for f in vendor/github.com/go-openapi/validate/type.go vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go; do
      [[ -f "$SRC/$f" ]] || { [[ $f == *kube-openapi* ]] && continue; die "$f missing from the source"; }
      grep -qF "$ZERO_CHECK" "$SRC/$f" || die "$f: zero-value check not found (source changed? review the patch)"
      sed -i 's/^\tif data == nil || reflect\.DeepEqual(reflect\.Zero(reflect\.TypeOf(data)), reflect\.ValueOf(data)) {$/\tif data == nil { \/\/ berth: zero-value check removed, see infra\/test-cluster\/ensure-binaries.sh/' "$SRC/$f"
      ! grep -qF "$ZERO_CHECK" "$SRC/$f" || die "$f: could not patch the zero-value check"
    done

    # Upstream version (make takes it from the values `git archive` wrote into hack/lib/version.sh;
    # the go build fallback stamps it with -ldflags).
    UPSTREAM=${SRCVER#*really}; UPSTREAM=${UPSTREAM%%-*}; UPSTREAM=${UPSTREAM%%+*}
    [[ "$UPSTREAM" =~ ^1\.20\. ]] || die "source version $SRCVER is not Kubernetes 1.20 ($UPSTREAM)"
    export GOCACHE="$WORK/gocache" GOPATH="$WORK/gopath" CGO_ENABLED=0 GOTOOLCHAIN=local
    export PATH="/usr/lib/go/bin:$PATH"
    log "go: $(go version)"

    T=$(date +%s)
    BIN=""
    if (cd "$SRC" && make WHAT=cmd/kube-apiserver >"$WORK/make.log" 2>&1); then
      BIN="$SRC/_output/bin/kube-apiserver"
      log "make WHAT=cmd/kube-apiserver: $(($(date +%s) - T))s"
    else
      tail -20 "$WORK/make.log" >&2
      log "make failed after $(($(date +%s) - T))s; falling back to go build (GOPATH mode, vendored deps, like make)"
      # Kubernetes 1.20 builds in GOPATH mode (hack/lib/init.sh sets GO111MODULE=off); module mode
      # with -mod=vendor stops on "updates to go.mod needed". Needs the generated files (e.g.
      # pkg/generated/openapi/zz_generated.openapi.go) that make's first step writes.
      T=$(date +%s)
      mkdir -p "$WORK/gopath/src/k8s.io"
      ln -sfn "$SRC" "$WORK/gopath/src/k8s.io/kubernetes"
      V=k8s.io/kubernetes/vendor/k8s.io/component-base/version
      LDFLAGS="-s -w -X $V.gitVersion=v$UPSTREAM -X $V.gitMajor=1 -X $V.gitMinor=20 -X $V.gitCommit=debian-$SRCVER"
      LDFLAGS+=" -X $V.gitTreeState=clean -X $V.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
      (cd "$WORK/gopath/src/k8s.io/kubernetes" && GO111MODULE=off GOFLAGS='' GOPATH="$WORK/gopath" \
        go build -ldflags "$LDFLAGS" -o "$WORK/kube-apiserver" ./cmd/kube-apiserver) >&2
      BIN="$WORK/kube-apiserver"
      log "go build: $(($(date +%s) - T))s"
    fi
    kas_ok "$BIN" || die "built $BIN but '$BIN --version' is not v1.20: $("$BIN" --version 2>&1 || true)"

    mkdir -p "$KAS_DIR/$KEY"
    cp "$BIN" "$KAS_DIR/$KEY/kube-apiserver.tmp"
    mv -f "$KAS_DIR/$KEY/kube-apiserver.tmp" "$KAS_DIR/$KEY/kube-apiserver"
    {
      echo "source: $SRC_PACKAGE $SRCVER (Debian $SRC_SUITE)"
      echo "patch level: $PATCH_LEVEL: reflect2 1.0.2 vendored; go-openapi/validate zero-value check removed"
      echo "go: $(go version)"
      echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(($(date +%s) - T_BUILD))s on $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    } >"$KAS_DIR/$KEY/BUILD-INFO"
    link_cached "$KEY"
    log "kube-apiserver built and cached in $(($(date +%s) - T_BUILD))s"
  fi
  prune_superseded "$SRCVER"
fi

kas_ok "$KAS_LINK" || die "kube-apiserver at $KAS_LINK does not run"
report
