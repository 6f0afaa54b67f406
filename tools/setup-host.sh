#!/usr/bin/env bash
# setup-host.sh [test] [arm]  -- install what a Debian 12 build host needs (run as root).
#
# Base: compilers and build tools for the x86-64 build against the trixie sysroot.
# "arm":  also the ARM cross compilers (crossbuild-essential-arm64/armhf: gcc 12, binutils,
#         libc6-dev for the target) and qemu-user, which runs the aarch64 and armv7 test
#         binaries (`make test` asks for these: it tests both ARM targets).
# "test": also what the test suite itself runs: python3 with Debian's torch, numpy and
#         sentencepiece (the PyTorch references' self-checks, BLEU, the training smoke test, the
#         CLI tests' JSON checks), and node with npm (the tokenizer agreement test; its npm
#         package comes from tools/setup-npm.sh). `make test` asks for these; a missing one
#         fails the run.
# Does nothing (no apt-get update) when every package is already installed, and waits for a
# concurrently running apt/dpkg instead of failing on its lock.
set -euo pipefail

PACKAGES=(cmake ninja-build g++ make git ca-certificates debian-archive-keyring pkg-config)
for arg in "$@"; do
  case "$arg" in
    arm) PACKAGES+=(qemu-user crossbuild-essential-arm64 crossbuild-essential-armhf) ;;
    test)
      PACKAGES+=(python3 python3-torch python3-numpy python3-sentencepiece nodejs)
      # Debian's nodejs comes without npm; a nodejs from elsewhere (NodeSource) may bundle it
      # and conflict with Debian's npm package, so that is asked for only when npm is missing.
      command -v npm >/dev/null || PACKAGES+=(npm)
      ;;
    *) echo "usage: $0 [test] [arm]" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii'; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup-host: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "setup-host: installing ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi
# Wait up to 20 minutes for another apt/dpkg to release its locks.
LOCK_WAIT=(-o DPkg::Lock::Timeout=1200)
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get "${LOCK_WAIT[@]}" -q update
$SUDO apt-get "${LOCK_WAIT[@]}" -q install -y --no-install-recommends "${missing[@]}"
