#!/usr/bin/env bash
# tools/fuzz/setup.sh -- install what the libFuzzer builds need on a Debian 12 host (as root):
# clang 14 and its compiler-rt (libFuzzer, ASan, UBSan runtimes), llvm-14 for llvm-symbolizer,
# plus everything `make build` needs (tools/setup-host.sh) and the trixie amd64 sysroot.
# Does nothing when all is present.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

"$root/tools/setup-host.sh"
"$root/tools/sysroot/make-sysroot.sh" amd64

PACKAGES=(clang-14 libclang-rt-14-dev llvm-14)
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii'; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "fuzz setup: ${PACKAGES[*]} present"
  exit 0
fi
echo "fuzz setup: installing ${missing[*]}"
SUDO=
[[ $(id -u) -ne 0 ]] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=1200 -q update
$SUDO apt-get -o DPkg::Lock::Timeout=1200 -q install -y --no-install-recommends "${missing[@]}"
