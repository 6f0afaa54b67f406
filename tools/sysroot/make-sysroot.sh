#!/usr/bin/env bash
# make-sysroot.sh ARCH  -- assemble a Debian 13 (trixie) sysroot for ARCH (amd64|arm64|armhf).
#
# Uses only the ordinary apt client with a private configuration (own sources list, lists,
# cache and status dirs); /etc/apt is never modified. Packages are fetched with
# `apt-get download` and unpacked with `dpkg-deb -x`.
#
# Result: ${TERN_SYSROOT_DIR:-/var/cache/tern/sysroot/trixie-ARCH} (the sysroot itself, with
# usr/ in it). apt state lives next to it in <dir>.apt. A stamp file holding a hash of the
# inputs makes reruns instant; a partial previous run is discarded and redone.
#
# amd64 also gets <sysroot>/tern-bin/flatc, a wrapper running the sysroot's flatc through the
# sysroot's loader (it needs glibc 2.38, newer than Debian 12's).
set -euo pipefail

usage() { echo "usage: $0 amd64|arm64|armhf" >&2; exit 2; }
[[ $# -eq 1 ]] || usage
ARCH=$1
case "$ARCH" in
  amd64) TRIPLET=x86_64-linux-gnu ;;
  arm64) TRIPLET=aarch64-linux-gnu ;;
  armhf) TRIPLET=arm-linux-gnueabihf ;;
  *) usage ;;
esac

SUITE=trixie
SYSROOT=${TERN_SYSROOT_DIR:-/var/cache/tern/sysroot/$SUITE-$ARCH}
SYSROOT=${SYSROOT%/}
APTDIR=$SYSROOT.apt
STAMP=$SYSROOT/.tern-sysroot-stamp
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg  # bookworm's also holds trixie's keys

# Everything the build links against or runs. libgcc-s1/libstdc++6: the runtime of the trixie
# C++ libraries. (Trixie's libsentencepiece0 carries protobuf-lite inside: no libprotobuf.)
PACKAGES=(
  libc6 libc6-dev linux-libc-dev libcrypt1 libcrypt-dev libgcc-s1 libstdc++6
  libxnnpack0.20241108 libxnnpack-dev libcpuinfo0 libcpuinfo-dev
  libpthreadpool0 libpthreadpool-dev
  libflatbuffers23.5.26 libflatbuffers-dev flatbuffers-compiler flatbuffers-compiler-dev
  libcatch2-dev
  libsentencepiece0 libsentencepiece-dev
  nlohmann-json3-dev
)
SCRIPT_VERSION=1  # bump when the layout produced below changes

# The mirror URI from the host's deb822 sources (first URIs: line), else deb.debian.org.
MIRROR=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
MIRROR=${MIRROR:-http://deb.debian.org/debian}

HASH=$( { echo "v$SCRIPT_VERSION $SUITE $ARCH $MIRROR"; printf '%s\n' "${PACKAGES[@]}"; } |
        sha256sum | cut -d' ' -f1)

summary() {
  local size
  size=$(du -sh "$SYSROOT" 2>/dev/null | cut -f1)
  echo "sysroot $ARCH ($SUITE, $TRIPLET): $SYSROOT [$size] $1"
  if [[ -x $SYSROOT/tern-bin/flatc ]]; then
    echo "  flatc wrapper: $SYSROOT/tern-bin/flatc ($("$SYSROOT/tern-bin/flatc" --version))"
  fi
}

if [[ -f $STAMP && $(cat "$STAMP") == "$HASH" ]]; then
  summary "(up to date)"
  exit 0
fi

start=$(date +%s)
echo "make-sysroot: building $SUITE/$ARCH sysroot in $SYSROOT from $MIRROR"
for tool in apt-get dpkg-deb sha256sum; do
  command -v "$tool" >/dev/null || { echo "make-sysroot: $tool missing" >&2; exit 1; }
done
[[ -r $KEYRING ]] || { echo "make-sysroot: $KEYRING missing (apt-get install debian-archive-keyring)" >&2; exit 1; }

# --- private apt configuration -------------------------------------------------------------
mkdir -p "$APTDIR"/{etc/sources.list.d,etc/preferences.d,etc/apt.conf.d,lists/partial,cache/archives/partial,debs}
touch "$APTDIR/status"
cat >"$APTDIR/etc/sources.list.d/trixie.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE
Components: main
Architectures: $ARCH
Signed-By: $KEYRING
EOF
: >"$APTDIR/etc/sources.list"

APT_OPTS=(
  -o "APT::Architecture=$ARCH"
  -o "APT::Architectures=$ARCH"
  -o "Dir::Etc::SourceList=$APTDIR/etc/sources.list"
  -o "Dir::Etc::SourceParts=$APTDIR/etc/sources.list.d"
  -o "Dir::Etc::Preferences=$APTDIR/etc/preferences"
  -o "Dir::Etc::PreferencesParts=$APTDIR/etc/preferences.d"
  -o "Dir::State=$APTDIR"
  -o "Dir::State::Lists=$APTDIR/lists"
  -o "Dir::State::status=$APTDIR/status"
  -o "Dir::Cache=$APTDIR/cache"
  -o "Dir::Cache::Archives=$APTDIR/cache/archives"
  -o "Dir::Cache::pkgcache=$APTDIR/cache/pkgcache.bin"
  -o "Dir::Cache::srcpkgcache=$APTDIR/cache/srcpkgcache.bin"
  -o "APT::Sandbox::User=root"
  -o "Acquire::Languages=none"
  -o "Acquire::Retries=3"
  -o "Debug::NoLocking=true"
)
APT=(apt-get -q "${APT_OPTS[@]}")

"${APT[@]}" update

# --- download ------------------------------------------------------------------------------
# Fresh download dir each time (a failed earlier run may have left partial .debs).
rm -rf "$APTDIR/debs"
mkdir -p "$APTDIR/debs"
(cd "$APTDIR/debs" && "${APT[@]}" download "${PACKAGES[@]}")

# --- unpack into a fresh tree, then swap it in -------------------------------------------
NEW=$SYSROOT.new
rm -rf "$NEW"
mkdir -p "$NEW/usr/lib" "$NEW/usr/bin" "$NEW/usr/sbin"
ln -s usr/lib "$NEW/lib"
ln -s usr/bin "$NEW/bin"
ln -s usr/sbin "$NEW/sbin"
if [[ $ARCH == amd64 ]]; then
  mkdir -p "$NEW/usr/lib64"
  ln -s usr/lib64 "$NEW/lib64"
fi
for deb in "$APTDIR"/debs/*.deb; do
  dpkg-deb -x "$deb" "$NEW"
done

LIBDIR=$NEW/usr/lib/$TRIPLET
# Every shared library the unpacked libraries and programs need must be in the sysroot too.
missing=$(find "$LIBDIR" "$NEW/usr/bin" -maxdepth 1 -type f \( -name '*.so*' -o -perm -u+x \) \
            -exec sh -c 'LC_ALL=C readelf -d "$1" 2>/dev/null' _ {} \; |
          sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u |
          while read -r so; do [ -e "$LIBDIR/$so" ] || echo "$so"; done)
if [[ -n $missing ]]; then
  echo "make-sysroot: libraries needed but not in the package list: ${missing//$'\n'/ }" >&2
  exit 1
fi
# g++ links -lstdc++; trixie ships only the versioned runtime (libstdc++-14-dev is not wanted:
# we keep g++ 12's own headers).
ln -sfn libstdc++.so.6 "$LIBDIR/libstdc++.so"

if [[ $ARCH == amd64 ]]; then
  mkdir -p "$NEW/tern-bin"
  # The wrapper finds its sysroot relative to itself, so the tree can be moved.
  cat >"$NEW/tern-bin/flatc" <<'EOF'
#!/bin/sh
# Runs the Debian 13 flatc through the sysroot's own loader and libraries (needs glibc 2.38).
S=$(cd "$(dirname "$0")/.." && pwd)
L=$S/usr/lib/x86_64-linux-gnu
exec "$L/ld-linux-x86-64.so.2" --inhibit-cache --library-path "$L" "$S/usr/bin/flatc" "$@"
EOF
  chmod +x "$NEW/tern-bin/flatc"
  "$NEW/tern-bin/flatc" --version >/dev/null
fi

echo "$HASH" >"$NEW/.tern-sysroot-stamp"
rm -rf "$SYSROOT.old"
[[ -e $SYSROOT ]] && mv "$SYSROOT" "$SYSROOT.old"
mv "$NEW" "$SYSROOT"
rm -rf "$SYSROOT.old" "$APTDIR/debs"

summary "(built in $(( $(date +%s) - start )) s)"
