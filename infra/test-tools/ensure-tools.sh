#!/usr/bin/env bash
# Installs the Debian packages the tests need (debian-packages.txt beside this script) when any is missing.
# Idempotent: a second run only asks dpkg (well under a second). Runs as root or with passwordless sudo;
# without either it says which packages are missing and fails, so no test silently skips.
#
# Usage: bash infra/test-tools/ensure-tools.sh [--check]
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
HERE=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s)
log() { printf '[ensure-tools +%ss] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

mapfile -t PACKAGES < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$HERE/debian-packages.txt" | grep -v '^$' || true)
[[ ${#PACKAGES[@]} -eq 0 ]] && exit 0

SUDO=()
source "$HERE/apt.sh"
mapfile -t MISSING < <(apt_missing "${PACKAGES[@]}")
[[ ${#MISSING[@]} -eq 0 ]] && exit 0
[[ "${1:-}" == "--check" ]] && die "missing Debian packages: ${MISSING[*]}"
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null && sudo -n true 2>/dev/null || die "missing Debian packages ${MISSING[*]}: run as root or with passwordless sudo"
  SUDO=(sudo -n)
fi
trap cleanup_policy EXIT
apt_install "${MISSING[@]}"
log "installed ${MISSING[*]}"
