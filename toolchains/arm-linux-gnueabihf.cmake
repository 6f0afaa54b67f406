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

# qemu-arm command line for one CPU model (<CPU> is replaced).
set(TERN_EMULATOR_FOR_CPU "qemu-arm;-cpu;<CPU>;-L;${TERN_SYSROOT}")
# Tests run on qemu's default 32-bit CPU (`max`: ARMv8 AArch32 with NEON).
string(REPLACE "<CPU>" "max" CMAKE_CROSSCOMPILING_EMULATOR "${TERN_EMULATOR_FOR_CPU}")
# tests/CMakeLists.txt runs the runtime tests once more on each of these: cortex-a7 (Raspberry
# Pi 2) is plain ARMv7-A with NEON/VFPv4: no ARMv8 instructions, no fp16 arithmetic.
set(TERN_TEST_EXTRA_CPUS cortex-a7)
