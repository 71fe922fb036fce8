#!/usr/bin/env bash
# Makes sure the real components the tests run exist, built from their own published Go modules:
#   kube-apiserver, kube-controller-manager   k8s.io/kubernetes              (go/kubernetes)
#   etcd                                      go.etcd.io/etcd/server/v3      (go/etcd)
#   source-controller, kustomize-controller,  github.com/fluxcd/...          (go/<name>, one wrapper each)
#   notification-controller, source-watcher
#   helm-controller's CRDs (nothing built)    github.com/fluxcd/helm-controller (go/helm-controller)
#   aso-controller                            github.com/Azure/azure-service-operator/v2   (go/aso)
#   controller-gen                            sigs.k8s.io/controller-tools   (go/controller-gen: writes ASO's CRDs)
#   gitea (not the cluster's: a forge)        code.gitea.io/gitea, `module gitea.dev` (go/gitea; built on demand)
# Each go/<component>/ is a small wrapper module of ours: go.mod names the one version (and copies the
# `replace` lines the upstream module needs), go.sum pins every dependency, build.env says what to build.
#
# Cache, outside the repository, keyed by version and by the wrapper's content:
#   ${BERTH_CACHE_DIR:-$HOME/.cache/berth}/test-cluster/<component>/<version>-<hash>/   binaries, crds/, BUILD-INFO
#   ${BERTH_CACHE_DIR:-$HOME/.cache/berth}/test-cluster/<component>/current             link to the build in use
# The hash is over the wrapper folder's files, so a changed go.sum or build.env builds anew (tests/support/
# test-cluster-binaries.ts computes the same key). Go's own module and build caches are the defaults.
#
# A component's CRDs (and the module folders it reads) are in its folder before its programs are built, marked by
# CRDS-READY; BUILD-INFO marks the whole build. So `aso:crds` gives every cluster test ASO's CRDs in a minute, and
# the tests that do not run ASO can start while its controller (most of a cold build) compiles (scripts/run.mjs).
#
# Idempotent and unattended: a second run takes about a second. Concurrent callers serialize on a flock.
# Usage: bash infra/test-cluster/ensure-binaries.sh [--check] [component[:crds] ...]
#   no component, or `cluster`: every component of the test cluster (ALL below); gitea only when named
#   cluster-but-aso    all of them but ASO's controller (ASO's CRDs included)
#   <component>:crds   only its CRDs (ASO's: generated), not its programs
#   --check   only report; exit 1 if a component is missing or outdated (builds nothing)
# Env:   BERTH_CACHE_DIR   cache root (default $HOME/.cache/berth)
#        BERTH_REBUILD=1   build even if cached
# Progress and timings on stderr; one `<component>=<folder>` line per component on stdout.
set -euo pipefail
export LC_ALL=C.UTF-8

HERE=$(cd "$(dirname "$0")" && pwd)
GO_DIR="$HERE/go"
CACHE_ROOT="${BERTH_CACHE_DIR:-${HOME:-/root}/.cache/berth}/test-cluster"
# The cluster's components, in build order: the apiserver first (every cluster test needs it), ASO last (by far the
# longest). Gitea is not one of them: only the tests of a forge need it (`// needs: gitea`), so it builds when named.
ALL=(kubernetes etcd source-controller kustomize-controller notification-controller source-watcher helm-controller controller-gen aso)
T0=$(date +%s)

log() { printf '[ensure-binaries +%ss] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

CHECK_ONLY=0
COMPONENTS=()
for arg in "$@"; do
  case "$arg" in
    --check) CHECK_ONLY=1 ;;
    -*) die "unknown option $arg" ;;
    cluster) COMPONENTS+=("${ALL[@]}") ;;
    # Every cluster component but ASO's controller: with ASO's CRDs, what every test of the cluster but ASO's needs.
    cluster-but-aso) for c in "${ALL[@]}"; do [[ $c == aso ]] && COMPONENTS+=(aso:crds) || COMPONENTS+=("$c"); done ;;
    *) [[ -d "$GO_DIR/${arg%:crds}" ]] || die "no component ${arg%:crds} (folders of $GO_DIR)"; COMPONENTS+=("$arg") ;;
  esac
done
[[ ${#COMPONENTS[@]} -gt 0 ]] || COMPONENTS=("${ALL[@]}")
# ASO's CRDs are written by controller-gen.
if [[ " ${COMPONENTS[*]} " == *" aso"[\ :]* && " ${COMPONENTS[*]} " != *" controller-gen "* ]]; then COMPONENTS=(controller-gen "${COMPONENTS[@]}"); fi

# The same key tests/support/test-cluster-binaries.ts computes: sha256 over "<file name>\0<content>\0" of the
# wrapper's files in name order, first 12 hex digits. Comment lines (`//`, `#`) do not count: rewording one must not
# rebuild ASO.
wrapper_hash() { # $1: component
  local f
  (cd "$GO_DIR/$1" && for f in $(ls -1 | LC_ALL=C sort); do
    [[ -f "$f" ]] && printf '%s\0' "$f" && { grep -vE '^[[:space:]]*(//|#)' "$f" || true; } && printf '\0'
  done) | sha256sum | cut -c1-12
}
module_version() { # $1: component, $2: module; read from go.mod, no network
  awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) { print ($1 == "require" ? $3 : $2); exit }' "$GO_DIR/$1/go.mod"
}
build_dir() { # $1: component
  local MAIN_MODULE PROGRAMS
  # shellcheck disable=SC1090
  source "$GO_DIR/$1/build.env"
  echo "$CACHE_ROOT/$1/$(module_version "$1" "$MAIN_MODULE")-$(wrapper_hash "$1")"
}
is_built() { # $1: component
  local dir; dir=$(build_dir "$1")
  [[ -f "$dir/BUILD-INFO" ]]
}
has_crds() { # $1: component; its CRDs are in place (the whole build, or its first part)
  local dir; dir=$(build_dir "$1")
  [[ -f "$dir/BUILD-INFO" || -f "$dir/CRDS-READY" ]]
}
is_current() { # $1: component
  is_built "$1" && [[ "$(readlink "$CACHE_ROOT/$1/current" 2>/dev/null)" == "$(basename "$(build_dir "$1")")" ]]
}

if [[ $CHECK_ONLY == 1 ]]; then
  ok=1
  for c in "${COMPONENTS[@]}"; do
    if [[ $c == *:crds ]]; then
      if has_crds "${c%:crds}"; then echo "$c=$(build_dir "${c%:crds}")"; else log "$c: missing or outdated"; ok=0; fi
    elif is_current "$c"; then echo "$c=$(build_dir "$c")"; else log "$c: missing or outdated (want $(build_dir "$c"))"; ok=0; fi
  done
  [[ $ok == 1 ]] || exit 1
  exit 0
fi

command -v go >/dev/null || die "no \`go\` on PATH: these machines come with Go 1.26 (/usr/local/go/bin); install it first"
# The machine's Go builds everything (the wrappers' go.mod files say 1.26.0); never download a toolchain.
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly
log "$(go version); GOMODCACHE=$(go env GOMODCACHE); GOCACHE=$(go env GOCACHE)"

mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.lock"
if ! flock -n 9; then
  log "another ensure-binaries.sh holds $CACHE_ROOT/.lock; waiting for it"
  flock 9
fi

WORK=""
trap '[[ -z "$WORK" ]] || rm -rf "$WORK"' EXIT

# Writes the CRDs and webhook configurations of ASO's API groups from the module's types (as ASO's own
# `task controller:generate-crds` does), with the controller-gen built above.
generate_aso_manifests() { # $1: module dir, $2: out dir, $3...: api folders
  local module_dir=$1 out=$2; shift 2
  local gen; gen="$(readlink -f "$CACHE_ROOT/controller-gen/current")/controller-gen"
  [[ -x "$gen" ]] || die "controller-gen is not built (it writes ASO's CRDs)"
  local paths=() d
  for d in "$@"; do paths+=("paths=$MAIN_MODULE/$d/..."); done
  (cd "$GO_DIR/aso" && "$gen" crd:crdVersions=v1,allowDangerousTypes=true webhook "${paths[@]}" \
    output:crd:dir="$out/crds" output:webhook:dir="$out/webhooks") >&2 || die "controller-gen failed on $module_dir"
}

# Resident memory (KiB) of a process and all its descendants (go build runs the compiler and the linker as children).
tree_rss_kb() { # $1: root pid
  local pids=("$1") total=0 i=0 p rss kids
  while ((i < ${#pids[@]})); do
    p=${pids[i]}; i=$((i + 1))
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null) || rss=0
    total=$((total + ${rss:-0}))
    kids=$(cat /proc/"$p"/task/*/children 2>/dev/null) || kids=""
    # shellcheck disable=SC2206
    pids+=($kids)
  done
  echo "$total"
}

# Runs a command in a folder, sampling its process tree's memory each second; PEAK_KB keeps the highest sum seen.
PEAK_KB=0
sampled_in() { # $1: folder, $2...: command
  local in=$1; shift
  (cd "$in" && exec "$@") >&2 &
  local pid=$! now
  while kill -0 "$pid" 2>/dev/null; do
    now=$(tree_rss_kb "$pid")
    ((now > PEAK_KB)) && PEAK_KB=$now
    sleep 1
  done
  wait "$pid"
}

build() { # $1: component, $2: `crds` to stop once its CRDs are in place
  local c=$1 only=${2:-} MAIN_MODULE="" PROGRAMS="" CRDS="" GENERATE_FROM="" MODULE_DIRS=""
  unset -f version_ldflags
  # shellcheck disable=SC1090
  source "$GO_DIR/$c/build.env"
  local version dir ts
  version=$(module_version "$c" "$MAIN_MODULE")
  [[ -n "$version" ]] || die "$c: go.mod does not require $MAIN_MODULE"
  dir=$(build_dir "$c")
  ts=$(date +%s)
  PEAK_KB=0
  # First what the cluster needs before any program runs: the CRDs, webhooks and module folders, published at once.
  if [[ ! -f "$dir/CRDS-READY" ]]; then
    WORK=$(mktemp -d "$CACHE_ROOT/.build-$c.XXXXXX")
    local module_dir
    (cd "$GO_DIR/$c" && go mod download "$MAIN_MODULE") >&2 || die "$c: go mod download $MAIN_MODULE failed"
    module_dir=$(cd "$GO_DIR/$c" && go list -m -f '{{.Dir}}' "$MAIN_MODULE")
    [[ -n "$module_dir" ]] || die "$c: $MAIN_MODULE is not in the module cache"
    if [[ -n "$CRDS" ]]; then
      mkdir -p "$WORK/crds"
      cp "$module_dir/$CRDS"/*.yaml "$WORK/crds/"
      chmod 644 "$WORK/crds"/*.yaml
    fi
    # Folders of the module the program reads at run time (Gitea's options/ and templates/ without `bindata`), copied
    # writable (the module cache's are read-only, and a superseded build must be removable).
    local d
    for d in $MODULE_DIRS; do
      cp -R "$module_dir/$d" "$WORK/$d"
      chmod -R u+w,go+rX "$WORK/$d"
    done
    # shellcheck disable=SC2086
    if [[ -n "$GENERATE_FROM" ]]; then generate_aso_manifests "$module_dir" "$WORK" $GENERATE_FROM; fi
    touch "$WORK/CRDS-READY"
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    chmod 755 "$WORK"
    mv "$WORK" "$dir"
    WORK=""
    log "$c: CRDs and module folders in place after $(($(date +%s) - ts)) s -> $dir"
  fi
  [[ $only != crds ]] || return 0
  local ldflags="-s -w"
  if declare -F version_ldflags >/dev/null; then ldflags+=" $(version_ldflags "$version")"; fi
  local prog name pkg
  for prog in $PROGRAMS; do
    name=${prog%%=*}; pkg=${prog#*=}
    log "$c: go build $pkg@$version -> $name"
    # Under a temporary name: a test that finds the program finds all of it.
    sampled_in "$GO_DIR/$c" go build -trimpath -ldflags "$ldflags" -o "$dir/.$name.partial" "$pkg" || die "$c: go build $pkg failed"
    mv "$dir/.$name.partial" "$dir/$name"
  done
  {
    echo "module: $MAIN_MODULE $version"
    echo "wrapper: infra/test-cluster/go/$c ($(basename "$dir"))"
    echo "go: $(go version)"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(($(date +%s) - ts)) s on $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    echo "peak memory: $((PEAK_KB / 1024)) MiB (go build with its compiler and linker processes, sampled each second)"
  } >"$dir/.BUILD-INFO.partial"
  mv "$dir/.BUILD-INFO.partial" "$dir/BUILD-INFO"
  log "$c: built in $(($(date +%s) - ts)) s, peak memory $((PEAK_KB / 1024)) MiB -> $dir"
}

for c in "${COMPONENTS[@]}"; do
  if [[ $c == *:crds ]]; then
    c=${c%:crds}
    has_crds "$c" || build "$c" crds
    echo "$c:crds=$(build_dir "$c")"
    continue
  fi
  if [[ "${BERTH_REBUILD:-0}" == 1 ]]; then rm -rf "$(build_dir "$c")"; fi
  is_built "$c" || build "$c"
  dir=$(build_dir "$c")
  if [[ "$(readlink "$CACHE_ROOT/$c/current" 2>/dev/null)" != "$(basename "$dir")" ]]; then
    ln -sfn "$(basename "$dir")" "$CACHE_ROOT/$c/current.tmp"
    mv -Tf "$CACHE_ROOT/$c/current.tmp" "$CACHE_ROOT/$c/current"
    # Older builds of this component are superseded (a running process keeps its deleted executable).
    for old in "$CACHE_ROOT/$c"/*; do
      [[ -L "$old" || "$old" == "$dir" ]] || { log "$c: removing superseded build $old"; rm -rf "$old"; }
    done
  fi
  echo "$c=$dir"
done
log "done in $(($(date +%s) - T0)) s"
