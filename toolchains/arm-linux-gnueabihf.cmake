# ARMv7 hard-float Linux against the Debian 13 armhf sysroot
# (tools/sysroot/make-sysroot.sh armhf). Debian's armhf default is armv7-a+fp, Thumb; XNNPACK
# picks NEON at run time, so only our own NEON code needs -mfpu=neon-vfpv4.
# Needs crossbuild-essential-armhf and qemu-user; binaries run under `qemu-arm -L <sysroot>`.
set(TERN_SYSROOT_ARCH armhf)
set(TERN_TRIPLET arm-linux-gnueabihf)
set(TERN_PROCESSOR armv7l)

set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
# gcc's note about the GCC 7.1 ABI change of parameter passing is noise here.
set(TERN_EXTRA_COMPILE_FLAGS "-Wno-psabi")

include("${CMAKE_CURRENT_LIST_DIR}/sysroot-common.cmake")

set(CMAKE_CROSSCOMPILING_EMULATOR "qemu-arm;-L;${TERN_SYSROOT}")
