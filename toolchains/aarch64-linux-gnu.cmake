# AArch64 Linux against the Debian 13 arm64 sysroot (tools/sysroot/make-sysroot.sh arm64).
# Needs crossbuild-essential-arm64 and qemu-user (tools/setup-host.sh arm); binaries run
# under `qemu-aarch64 -L <sysroot>` (binfmt_misc is not assumed). flatc comes from the amd64
# sysroot (TERN_FLATC / TERN_HOST_SYSROOT).
set(TERN_SYSROOT_ARCH arm64)
set(TERN_TRIPLET aarch64-linux-gnu)
set(TERN_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian 12's aarch64-linux-gnu-g++ 12.2 crashes (internal compiler error in
# vect_transform_reduction, tree-vect-loop.cc:7457) at -O3 on an fmax/fmin reduction whose
# argument is widened, e.g. `double m; const float* x; ... m = std::fmax(m, x[i]);` in a loop
# (tests/runtime/kernels/reference/softmax_test.cc, tests/converter/quantize_test.cc).
# The mixed-type std::fmax calls ::fmax, and -fno-builtin-fmax/fmin make exactly that call a
# libm call, so such a loop is not vectorized. Same-type std::fmax (__builtin_fmax) and all
# other loops are vectorized as before. (armhf's gcc does not have the bug.)
set(TERN_EXTRA_COMPILE_FLAGS "-fno-builtin-fmax -fno-builtin-fmin")

include("${CMAKE_CURRENT_LIST_DIR}/sysroot-common.cmake")

# qemu-aarch64 command line for one CPU model (<CPU> is replaced).
set(TERN_EMULATOR_FOR_CPU "qemu-aarch64;-cpu;<CPU>;-L;${TERN_SYSROOT}")
# Tests run on `max`: every feature qemu has, so fp16 arithmetic, dotprod and i8mm (XNNPACK's
# fast paths). pauth=off: Debian 13's arm64 libraries are built with pointer authentication
# (PACIASP/AUTIASP in every function), and qemu 7.2 emulates the QARMA5 algorithm so slowly that
# the suite runs 10x longer (pauth-impdef=on: still 1.5x). Those instructions are hints, no-ops
# on cores without PAuth, such as the Cortex-A53/A72/A76 of Raspberry Pi-class boards.
string(REPLACE "<CPU>" "max,pauth=off" CMAKE_CROSSCOMPILING_EMULATOR "${TERN_EMULATOR_FOR_CPU}")
# tests/CMakeLists.txt runs the runtime tests once more on each of these: cortex-a72 (Raspberry
# Pi 4) is ARMv8.0: no fp16 arithmetic, no dot product, so the fallback paths run.
set(TERN_TEST_EXTRA_CPUS cortex-a72)
