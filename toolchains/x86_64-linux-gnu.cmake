# x86-64 Linux against the Debian 13 amd64 sysroot (tools/sysroot/make-sysroot.sh amd64).
# Binaries get the sysroot's loader and an RPATH into the sysroot, so they run directly on a
# Debian 12 host; CMAKE_CROSSCOMPILING_EMULATOR runs them through the sysroot loader as well.
set(TERN_SYSROOT_ARCH amd64)
set(TERN_TRIPLET x86_64-linux-gnu)
set(TERN_PROCESSOR x86_64)

set(CMAKE_C_COMPILER x86_64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER x86_64-linux-gnu-g++)

include("${CMAKE_CURRENT_LIST_DIR}/sysroot-common.cmake")

set(_l "${TERN_SYSROOT}/usr/lib/x86_64-linux-gnu")
# RPATH, not RUNPATH (--disable-new-dtags): RUNPATH does not apply to indirect dependencies
# such as libcpuinfo, which would then come from the host.
set(_rt "-Wl,--dynamic-linker=${_l}/ld-linux-x86-64.so.2 -Wl,-rpath,${_l} -Wl,--disable-new-dtags")
foreach(_kind EXE SHARED MODULE)
  string(APPEND CMAKE_${_kind}_LINKER_FLAGS_INIT " ${_rt}")
endforeach()
set(CMAKE_CROSSCOMPILING_EMULATOR "${_l}/ld-linux-x86-64.so.2;--inhibit-cache;--library-path;${_l}")
unset(_l)
unset(_rt)
unset(_kind)
