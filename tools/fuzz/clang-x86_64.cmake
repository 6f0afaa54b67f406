# Clang (Debian 12's clang-14) against the Debian 13 amd64 sysroot, for the libFuzzer targets
# (tests/fuzz/). Same recipe as toolchains/x86_64-linux-gnu.cmake, except the compiler:
#   --sysroot=<trixie>        glibc 2.41 headers and libraries, XNNPACK, FlatBuffers, ...
#   --gcc-toolchain=/usr      the C++ headers of the host's g++ 12 (the sysroot has no libstdc++
#                             headers; g++ 12 builds use the same ones) and its crtbegin/crtend.
#                             libstdc++.so.6 itself is the sysroot's (GCC 14), found first via -L.
# Binaries get the sysroot's loader and an RPATH into it, so they run directly on Debian 12.
set(TERN_SYSROOT_ARCH amd64)
set(TERN_TRIPLET x86_64-linux-gnu)
set(TERN_PROCESSOR x86_64)

if(NOT TERN_FUZZ_CLANG)
  set(TERN_FUZZ_CLANG clang-14)
endif()
set(CMAKE_C_COMPILER ${TERN_FUZZ_CLANG})
string(REPLACE "clang" "clang++" _cxx "${TERN_FUZZ_CLANG}")
set(CMAKE_CXX_COMPILER ${_cxx})
unset(_cxx)

set(TERN_EXTRA_COMPILE_FLAGS "--gcc-toolchain=/usr")
set(TERN_EXTRA_LINK_FLAGS "--gcc-toolchain=/usr")
include("${CMAKE_CURRENT_LIST_DIR}/../../toolchains/sysroot-common.cmake")

set(_l "${TERN_SYSROOT}/usr/lib/x86_64-linux-gnu")
set(_rt "-Wl,--dynamic-linker=${_l}/ld-linux-x86-64.so.2 -Wl,-rpath,${_l} -Wl,--disable-new-dtags")
foreach(_kind EXE SHARED MODULE)
  string(APPEND CMAKE_${_kind}_LINKER_FLAGS_INIT " ${_rt}")
endforeach()
set(CMAKE_CROSSCOMPILING_EMULATOR "${_l}/ld-linux-x86-64.so.2;--inhibit-cache;--library-path;${_l}")
unset(_l)
unset(_rt)
unset(_kind)
