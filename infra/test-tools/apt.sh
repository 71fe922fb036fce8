# Debian package helpers shared by the test-tool scripts (sourced, not run). Expects log() and die() and an
# array SUDO (empty as root, `sudo -n` otherwise) from the caller.
#
# apt_install PKG...   installs the packages that are missing (one apt-get call), never starting their
#                      daemons; runs `apt-get update` first only when the install needs it. Waits for another
#                      apt/dpkg (a parallel run) instead of failing on its lock.

APT_UPDATED=0
apt_update() {
  if [[ $APT_UPDATED == 0 ]]; then
    log "apt-get update"
    "${SUDO[@]}" apt-get update -qq -o Acquire::Retries=3 -o DPkg::Lock::Timeout=600 >&2 || die "apt-get update failed"
    APT_UPDATED=1
  fi
}

POLICY_RC=/usr/sbin/policy-rc.d
POLICY_RC_OURS=0
cleanup_policy() { if [[ $POLICY_RC_OURS == 1 ]]; then "${SUDO[@]}" rm -f "$POLICY_RC"; POLICY_RC_OURS=0; fi; }

apt_missing() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
  done
}

apt_install() {
  local missing
  mapfile -t missing < <(apt_missing "$@")
  [[ ${#missing[@]} -eq 0 ]] && return 0
  log "apt-get install ${missing[*]}"
  # Keep package scripts from starting daemons (etcd-server and openssh-server ship services).
  if [[ ! -e $POLICY_RC ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$POLICY_RC" >/dev/null
    "${SUDO[@]}" chmod 755 "$POLICY_RC"
    POLICY_RC_OURS=1
  fi
  local opts=(-y -qq --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold
    -o Acquire::Retries=3 -o DPkg::Lock::Timeout=600)
  local out
  out=$(mktemp)
  if ! "${SUDO[@]}" apt-get install "${opts[@]}" "${missing[@]}" >"$out" 2>&1; then
    apt_update
    "${SUDO[@]}" apt-get install "${opts[@]}" "${missing[@]}" >"$out" 2>&1 || { cat "$out" >&2; rm -f "$out"; cleanup_policy; die "apt-get install ${missing[*]} failed"; }
  fi
  rm -f "$out"
  cleanup_policy
}
