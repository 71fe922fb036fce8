#!/usr/bin/env bash
# Makes sure the image's base root filesystem exists: Debian bookworm minbase plus the packages of
# base-packages.txt (beside this script), made with mmdebstrap from Debian's packages (no image registry),
# and cached OUTSIDE the repository at
#   ${BERTH_CACHE_DIR:-$HOME/.cache/berth}/image-base/<key>/rootfs
# where <key> hashes base-packages.txt and this script: changing either builds a new base, nothing else does.
#
# Idempotent and unattended like infra/test-cluster/ensure-binaries.sh: a cached base takes well under a
# second; a new one ~2-4 min (downloads ~60 MB of .debs). Concurrent callers serialize on a flock.
# Runs as root (mmdebstrap's root mode: the files keep their owners).
#
# Reproducible: SOURCE_DATE_EPOCH=0 for mmdebstrap (every file's mtime is clamped to 1970-01-01, logs and
# caches that hold dates are removed) and /etc/hostname, /etc/resolv.conf are dropped (the runtime mounts
# its own). The same package versions from the mirror give the same files.
#
# Usage: bash infra/image/ensure-base.sh
# Env:   BERTH_CACHE_DIR           cache root (default $HOME/.cache/berth)
#        BERTH_IMAGE_REBUILD_BASE=1 build a new base even if cached (e.g. to pick up Debian security updates)
# Prints `rootfs=<dir>` and `key=<key>` on stdout; progress and timings on stderr.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
HERE=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s)
log() { printf '[ensure-base +%ss] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root: mmdebstrap's root mode keeps the files' owners (root, shadow, ...)"

CACHE_DIR="${BERTH_CACHE_DIR:-${HOME:-/root}/.cache/berth}"
BASE_DIR="$CACHE_DIR/image-base"
PACKAGES_FILE="$HERE/base-packages.txt"
SUITE=bookworm
KEY=$(cat "$PACKAGES_FILE" "$0" | sha256sum | cut -c1-16)
TARGET="$BASE_DIR/$KEY"

mapfile -t INSTALL < <(awk '$1 == "install" {print $2}' "$PACKAGES_FILE")
mapfile -t PURGE < <(awk '$1 == "purge" {print $2}' "$PACKAGES_FILE")
[[ ${#INSTALL[@]} -gt 0 ]] || die "$PACKAGES_FILE lists no package to install"

report() {
  touch "$TARGET/last-used"
  echo "rootfs=$TARGET/rootfs"
  echo "key=$KEY"
  log "base $KEY: $(head -1 "$TARGET/BUILD-INFO")"
}

# Bases not used for 14 days (another branch's package list) are removed; the current one never is.
prune_unused() {
  local d
  for d in "$BASE_DIR"/*/; do
    d=${d%/}
    [[ "$d" != "$TARGET" && -f "$d/last-used" ]] || continue
    if [[ -n "$(find "$d/last-used" -mtime +14 2>/dev/null)" ]]; then
      log "removing base $d (unused for 14 days)"
      rm -rf "$d"
    fi
  done
}

mkdir -p "$BASE_DIR"
if [[ "${BERTH_IMAGE_REBUILD_BASE:-0}" != 1 && -f "$TARGET/BUILD-INFO" ]]; then
  report
  exit 0
fi

exec 9>"$BASE_DIR/ensure-base.lock"
if ! flock -n 9; then
  log "another ensure-base.sh holds $BASE_DIR/ensure-base.lock; waiting for it"
  flock 9
fi
if [[ "${BERTH_IMAGE_REBUILD_BASE:-0}" != 1 && -f "$TARGET/BUILD-INFO" ]]; then
  report
  exit 0
fi

command -v mmdebstrap >/dev/null || die "mmdebstrap is missing (Debian package mmdebstrap; bash infra/test-tools/ensure-tools.sh installs it)"

# The Debian mirror apt already uses here (no other registry is reachable), else deb.debian.org.
mirror_uri() { # $1: "debian" or "debian-security"
  local uri=""
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    uri=$(awk -v want="$1" '/^URIs:/ { for (i = 2; i <= NF; i++) { n = $i; sub(/\/+$/, "", n); k = n; sub(/.*\//, "", k); if (k == want) { print n; exit } } }' /etc/apt/sources.list.d/debian.sources)
  fi
  echo "${uri:-http://deb.debian.org/$1}"
}
MAIN=$(mirror_uri debian)
SECURITY=$(mirror_uri debian-security)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/berth-image-base.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
log "building base $KEY: mmdebstrap --variant=minbase $SUITE + ${INSTALL[*]} (mirror $MAIN)"
T=$(date +%s)

# Docs, man pages, info and translations are not installed (copyright files are: licenses travel with binaries).
DPKG_OPTS=(
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*'
)
# git's server-side, mail and scalar programs: Berth runs the git client only (builtins, ssh, git-remote-http).
for f in git-daemon git-http-backend git-http-push git-http-fetch git-imap-send git-shell scalar; do
  DPKG_OPTS+=(--dpkgopt="path-exclude=/usr/lib/git-core/$f" --dpkgopt="path-exclude=/usr/bin/$f")
done
# The user the image runs as (uid/gid 65532, as distroless' nonroot): no password, no shell, no login.
# Its home and the git work dir exist for runs without volumes; in a pod both are emptyDir volumes.
HOOKS=(
  --customize-hook='rm -f "$1/etc/hostname" "$1/etc/resolv.conf"'
  --customize-hook='echo "berth:x:65532:65532:Berth:/home/berth:/usr/sbin/nologin" >> "$1/etc/passwd"'
  --customize-hook='echo "berth:x:65532:" >> "$1/etc/group"'
  --customize-hook='echo "berth:!:::::::" >> "$1/etc/shadow"'
  --customize-hook='install -d -o 65532 -g 65532 -m 0750 "$1/home/berth" "$1/var/lib/berth"'
)
if [[ ${#PURGE[@]} -gt 0 ]]; then
  HOOKS+=(--customize-hook="chroot \"\$1\" dpkg --purge --force-depends ${PURGE[*]}")
fi

SOURCE_DATE_EPOCH=0 mmdebstrap --mode=root --format=directory --variant=minbase \
  --include="$(IFS=,; echo "${INSTALL[*]}")" \
  "${DPKG_OPTS[@]}" "${HOOKS[@]}" \
  "$SUITE" "$WORK/rootfs" \
  "deb $MAIN $SUITE main" "deb $MAIN $SUITE-updates main" "deb $SECURITY $SUITE-security main" \
  >"$WORK/mmdebstrap.log" 2>&1 || { tail -30 "$WORK/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
log "mmdebstrap: $(($(date +%s) - T))s"

# dpkg unpacks /usr/bin/git and /usr/lib/git-core/git (and the like) as separate copies: link them, so the
# layer holds each once.
hardlink --ignore-time --quiet "$WORK/rootfs/usr"
# Device nodes are the runtime's business (it mounts /dev); a layer holding them cannot be unpacked rootless.
find "$WORK/rootfs/dev" -mindepth 1 -delete
# What is in it, for the build report and vulnerability scanners' cross-checks (dpkg's status stays too).
chroot "$WORK/rootfs" dpkg-query -W -f='${Package} ${Version}\n' | sort >"$WORK/packages.txt"
for p in "${PURGE[@]}"; do
  ! grep -q "^$p " "$WORK/packages.txt" || die "$p is still installed after the purge"
done

rm -rf "$TARGET"
mkdir -p "$TARGET"
mv "$WORK/rootfs" "$TARGET/rootfs"
mv "$WORK/packages.txt" "$TARGET/packages.txt"
{
  echo "Debian $SUITE minbase + ${INSTALL[*]} - ${PURGE[*]}; $(wc -l <"$TARGET/packages.txt") packages, $(du -sm "$TARGET/rootfs" | cut -f1) MB"
  echo "mirror: $MAIN, $SECURITY"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(($(date +%s) - T))s on $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg))"
} >"$TARGET/BUILD-INFO"
prune_unused
report
