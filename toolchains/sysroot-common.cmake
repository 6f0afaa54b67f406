# Shared logic of the tern toolchain files: build with Debian 12's gcc against a Debian 13
# (trixie) sysroot made by tools/sysroot/make-sysroot.sh.
#
# The including toolchain file sets, before including this file:
#   TERN_SYSROOT_ARCH   Debian architecture: amd64 | arm64 | armhf
#   TERN_TRIPLET        GNU triplet: x86_64-linux-gnu | aarch64-linux-gnu | arm-linux-gnueabihf
#   TERN_PROCESSOR      CMAKE_SYSTEM_PROCESSOR value
#
# Inputs (cache variable, else environment variable of the same name, else the default):
#   TERN_SYSROOT        the sysroot (default: env TERN_SYSROOT_DIR, as make-sysroot.sh uses it,
#                       else /var/cache/tern/sysroot/trixie-<arch>)
#   TERN_FLATC          a flatc 23.5.26 runnable on the build host (default: the flatc wrapper
#                       of the amd64 sysroot, TERN_HOST_SYSROOT/tern-bin/flatc)
#   TERN_HOST_SYSROOT   the amd64 sysroot (default: TERN_SYSROOT for amd64, else
#                       /var/cache/tern/sysroot/trixie-amd64)

# try_compile projects re-read this file: hand our inputs to them.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES TERN_SYSROOT TERN_FLATC TERN_HOST_SYSROOT)

macro(_tern_input name default)
  if(NOT DEFINED ${name} OR "${${name}}" STREQUAL "")
    if(DEFINED ENV{${name}} AND NOT "$ENV{${name}}" STREQUAL "")
      set(${name} "$ENV{${name}}")
    else()
      set(${name} "${default}")
    endif()
  endif()
  set(${name} "${${name}}" CACHE PATH "tern toolchain input ${name}" FORCE)
  # Exported so try_compile / sub-projects inherit it even without the cache.
  set(ENV{${name}} "${${name}}")
endmacro()

if(DEFINED ENV{TERN_SYSROOT_DIR} AND NOT "$ENV{TERN_SYSROOT_DIR}" STREQUAL "")
  set(_default "$ENV{TERN_SYSROOT_DIR}")  # the variable make-sysroot.sh reads
else()
  set(_default "/var/cache/tern/sysroot/trixie-${TERN_SYSROOT_ARCH}")
endif()
_tern_input(TERN_SYSROOT "${_default}")
if(TERN_SYSROOT_ARCH STREQUAL "amd64")
  _tern_input(TERN_HOST_SYSROOT "${TERN_SYSROOT}")
else()
  _tern_input(TERN_HOST_SYSROOT "/var/cache/tern/sysroot/trixie-amd64")
endif()
unset(_default)
_tern_input(TERN_FLATC "${TERN_HOST_SYSROOT}/tern-bin/flatc")

set(_s "${TERN_SYSROOT}")
set(_libdir "${_s}/usr/lib/${TERN_TRIPLET}")
if(NOT EXISTS "${_libdir}/libc.so.6")
  message(FATAL_ERROR
    "tern: no ${TERN_SYSROOT_ARCH} sysroot at ${_s}. "
    "Run: tools/sysroot/make-sysroot.sh ${TERN_SYSROOT_ARCH}  (or set TERN_SYSROOT)")
endif()

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR "${TERN_PROCESSOR}")
set(CMAKE_LIBRARY_ARCHITECTURE "${TERN_TRIPLET}")
set(CMAKE_SYSROOT "${_s}")

set(CMAKE_FIND_ROOT_PATH "${_s}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# -B/-L: without them gcc silently takes Debian 12's crt files and libraries (libstdc++,
# the old libXNNPACK) from its own search dirs before the sysroot's.
set(_link "-B${_libdir}/ -L${_libdir}")
if(TERN_EXTRA_LINK_FLAGS)
  string(APPEND _link " ${TERN_EXTRA_LINK_FLAGS}")
endif()
foreach(_kind EXE SHARED MODULE)
  set(CMAKE_${_kind}_LINKER_FLAGS_INIT "${_link}")
endforeach()
if(TERN_EXTRA_COMPILE_FLAGS)
  set(CMAKE_C_FLAGS_INIT "${TERN_EXTRA_COMPILE_FLAGS}")
  set(CMAKE_CXX_FLAGS_INIT "${TERN_EXTRA_COMPILE_FLAGS}")
endif()

# pkg-config (if anyone uses it) must look only into the sysroot.
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${_s}")
set(ENV{PKG_CONFIG_LIBDIR} "${_libdir}/pkgconfig:${_s}/usr/share/pkgconfig")
unset(_s)
unset(_kind)
unset(_link)
