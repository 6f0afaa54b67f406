# AArch64 Linux against the Debian 13 arm64 sysroot (tools/sysroot/make-sysroot.sh arm64).
# Needs crossbuild-essential-arm64 and qemu-user (tools/setup-host.sh arm); binaries run
# under `qemu-aarch64 -L <sysroot>` (binfmt_misc is not assumed). flatc comes from the amd64
# sysroot (TERN_FLATC / TERN_HOST_SYSROOT).
set(TERN_SYSROOT_ARCH arm64)
set(TERN_TRIPLET aarch64-linux-gnu)
set(TERN_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

include("${CMAKE_CURRENT_LIST_DIR}/sysroot-common.cmake")

set(CMAKE_CROSSCOMPILING_EMULATOR "qemu-aarch64;-L;${TERN_SYSROOT}")
