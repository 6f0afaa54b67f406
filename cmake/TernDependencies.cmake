# Third-party dependencies of tern, all at their Debian 13 (trixie) versions.
#
# Works in two set-ups:
#  - Debian 12 host + toolchains/<triplet>.cmake: everything is found inside the trixie
#    sysroot (CMAKE_SYSROOT / CMAKE_FIND_ROOT_PATH); flatc is the sysroot's, run through a
#    wrapper (TERN_FLATC, set by the toolchain file).
#  - Debian 13 host, no toolchain file: the system packages (libxnnpack-dev,
#    libflatbuffers-dev, flatbuffers-compiler, libcatch2-dev, libsentencepiece-dev).
#
# Defines:
#   tern::xnnpack               libXNNPACK + pthreadpool + cpuinfo (if TERN_WITH_XNNPACK)
#   flatbuffers::flatbuffers    FlatBuffers 23.5.26 headers + library
#   flatbuffers::flatc          flatc 23.5.26, runnable on the build host
#   tern_flatbuffers_generate(<target> <file.fbs> [FLATC_ARGS ...])
#                               INTERFACE library <target> whose include dir holds
#                               <name>_generated.h
#   Catch2::Catch2WithMain      (if TERN_BUILD_TESTS) + include(Catch) for catch_discover_tests
#   tern::sentencepiece         libsentencepiece
include_guard(GLOBAL)

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

# --- XNNPACK ---------------------------------------------------------------------------------
if(TERN_WITH_XNNPACK)
  find_path(TERN_XNNPACK_INCLUDE_DIR xnnpack.h)
  find_library(TERN_XNNPACK_LIBRARY XNNPACK)
  find_library(TERN_PTHREADPOOL_LIBRARY pthreadpool)
  find_library(TERN_CPUINFO_LIBRARY cpuinfo)
  foreach(_v TERN_XNNPACK_INCLUDE_DIR TERN_XNNPACK_LIBRARY TERN_PTHREADPOOL_LIBRARY
             TERN_CPUINFO_LIBRARY)
    if(NOT ${_v})
      message(FATAL_ERROR "tern: ${_v} not found. Install libxnnpack-dev (Debian 13) or "
                          "configure with a toolchain file from toolchains/ (Debian 12).")
    endif()
  endforeach()
  # Debian 12's XNNPACK (2022) lacks the operators we use: refuse it early and clearly.
  file(STRINGS "${TERN_XNNPACK_INCLUDE_DIR}/xnnpack.h" _qd8
       REGEX "xnn_create_fully_connected_nc_qd8_f32_qc8w")
  if(NOT _qd8)
    message(FATAL_ERROR "tern: ${TERN_XNNPACK_INCLUDE_DIR}/xnnpack.h is too old (no qd8 fully "
                        "connected); use the Debian 13 sysroot via toolchains/.")
  endif()
  if(NOT TARGET tern::xnnpack)
    add_library(tern::xnnpack UNKNOWN IMPORTED)
    set_target_properties(tern::xnnpack PROPERTIES
      IMPORTED_LOCATION "${TERN_XNNPACK_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${TERN_XNNPACK_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES
        "${TERN_PTHREADPOOL_LIBRARY};${TERN_CPUINFO_LIBRARY};Threads::Threads")
  endif()
  message(STATUS "tern: XNNPACK ${TERN_XNNPACK_LIBRARY}")
endif()

# --- FlatBuffers -----------------------------------------------------------------------------
set(TERN_FLATBUFFERS_VERSION 23.5.26)
find_package(flatbuffers ${TERN_FLATBUFFERS_VERSION} EXACT CONFIG QUIET)
if(NOT TARGET flatbuffers::flatbuffers)
  # No usable CMake package: headers (+ library if there) by hand.
  find_path(TERN_FLATBUFFERS_INCLUDE_DIR flatbuffers/flatbuffers.h)
  find_library(TERN_FLATBUFFERS_LIBRARY flatbuffers)
  if(NOT TERN_FLATBUFFERS_INCLUDE_DIR)
    message(FATAL_ERROR "tern: FlatBuffers ${TERN_FLATBUFFERS_VERSION} headers not found "
                        "(libflatbuffers-dev).")
  endif()
  add_library(flatbuffers::flatbuffers INTERFACE IMPORTED)
  set_target_properties(flatbuffers::flatbuffers PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${TERN_FLATBUFFERS_INCLUDE_DIR}")
  if(TERN_FLATBUFFERS_LIBRARY)
    set_target_properties(flatbuffers::flatbuffers PROPERTIES
      INTERFACE_LINK_LIBRARIES "${TERN_FLATBUFFERS_LIBRARY}")
  endif()
endif()

# flatc must run on the build host and match the headers exactly (generated code checks it).
# Order: TERN_FLATC (the toolchain's wrapper of the sysroot's flatc), else flatc on PATH.
if(NOT TERN_FLATC AND DEFINED ENV{TERN_FLATC})
  set(TERN_FLATC "$ENV{TERN_FLATC}")
endif()
if(TERN_FLATC AND EXISTS "${TERN_FLATC}")
  set(TERN_FLATC_EXECUTABLE "${TERN_FLATC}")
else()
  find_program(TERN_FLATC_EXECUTABLE flatc NO_CMAKE_FIND_ROOT_PATH)
endif()
if(NOT TERN_FLATC_EXECUTABLE)
  message(FATAL_ERROR "tern: flatc ${TERN_FLATBUFFERS_VERSION} not found (flatbuffers-compiler, "
                      "or TERN_FLATC=<path>; the amd64 sysroot has tern-bin/flatc).")
endif()
execute_process(COMMAND "${TERN_FLATC_EXECUTABLE}" --version
                OUTPUT_VARIABLE _flatc_version ERROR_VARIABLE _flatc_version
                RESULT_VARIABLE _flatc_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _flatc_rc EQUAL 0 OR NOT _flatc_version MATCHES "${TERN_FLATBUFFERS_VERSION}")
  message(FATAL_ERROR "tern: ${TERN_FLATC_EXECUTABLE} must be flatc ${TERN_FLATBUFFERS_VERSION}; "
                      "it says: '${_flatc_version}' (rc ${_flatc_rc}).")
endif()
if(NOT TARGET flatbuffers::flatc)
  add_executable(flatbuffers::flatc IMPORTED)
endif()
# Override what the sysroot's FlatcTargets.cmake points at (a binary needing glibc 2.38).
set_target_properties(flatbuffers::flatc PROPERTIES
  IMPORTED_LOCATION "${TERN_FLATC_EXECUTABLE}"
  IMPORTED_LOCATION_NONE "${TERN_FLATC_EXECUTABLE}"
  IMPORTED_LOCATION_RELEASE "${TERN_FLATC_EXECUTABLE}"
  IMPORTED_LOCATION_DEBUG "${TERN_FLATC_EXECUTABLE}"
  IMPORTED_LOCATION_RELWITHDEBINFO "${TERN_FLATC_EXECUTABLE}"
  IMPORTED_LOCATION_MINSIZEREL "${TERN_FLATC_EXECUTABLE}")
set(FLATBUFFERS_FLATC_EXECUTABLE "${TERN_FLATC_EXECUTABLE}")
message(STATUS "tern: ${_flatc_version} (${TERN_FLATC_EXECUTABLE})")

# tern_flatbuffers_generate(<target> <file.fbs> [FLATC_ARGS <arg>...])
# Runs flatc --cpp on <file.fbs> at build time and makes <target>, an INTERFACE library that
# puts <name>_generated.h on the include path and links flatbuffers::flatbuffers.
function(tern_flatbuffers_generate target fbs)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "FLATC_ARGS")
  get_filename_component(_fbs "${fbs}" ABSOLUTE)
  get_filename_component(_name "${fbs}" NAME_WE)
  set(_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}_include")
  set(_out "${_dir}/${_name}_generated.h")
  # $<TARGET_FILE:...>, not the bare target name: a target name would be prefixed with
  # CMAKE_CROSSCOMPILING_EMULATOR, but flatc is a host program.
  add_custom_command(
    OUTPUT "${_out}"
    COMMAND "$<TARGET_FILE:flatbuffers::flatc>" --cpp ${arg_FLATC_ARGS} -o "${_dir}" "${_fbs}"
    DEPENDS "${_fbs}"
    COMMENT "flatc ${_name}.fbs -> ${_name}_generated.h"
    VERBATIM)
  add_custom_target(${target}_generate DEPENDS "${_out}")
  add_library(${target} INTERFACE)
  target_include_directories(${target} INTERFACE "${_dir}")
  target_link_libraries(${target} INTERFACE flatbuffers::flatbuffers)
  add_dependencies(${target} ${target}_generate)
endfunction()

# --- Catch2 ----------------------------------------------------------------------------------
if(TERN_BUILD_TESTS)
  find_package(Catch2 3 CONFIG REQUIRED)
  # Catch2Config.cmake put its directory on CMAKE_MODULE_PATH. catch_discover_tests runs the
  # test binaries through CMAKE_CROSSCOMPILING_EMULATOR (set by the toolchain files).
  include(Catch)
endif()

# --- SentencePiece ---------------------------------------------------------------------------
# Not through pkg-config: sentencepiece.pc requires protobuf-lite.pc, which is not installed
# (Debian 13's libsentencepiece.so.0 has protobuf-lite built in and needs no libprotobuf).
find_path(TERN_SENTENCEPIECE_INCLUDE_DIR sentencepiece_processor.h)
find_library(TERN_SENTENCEPIECE_LIBRARY sentencepiece)
if(NOT TERN_SENTENCEPIECE_INCLUDE_DIR OR NOT TERN_SENTENCEPIECE_LIBRARY)
  message(FATAL_ERROR "tern: SentencePiece not found (libsentencepiece-dev).")
endif()
if(NOT TARGET tern::sentencepiece)
  add_library(tern::sentencepiece UNKNOWN IMPORTED)
  set_target_properties(tern::sentencepiece PROPERTIES
    IMPORTED_LOCATION "${TERN_SENTENCEPIECE_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${TERN_SENTENCEPIECE_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()

# nlohmann::json (header-only; converter and tools only, never the runtime core).
find_package(nlohmann_json 3.11 CONFIG QUIET)
if(NOT TARGET nlohmann_json::nlohmann_json)
  find_path(TERN_NLOHMANN_INCLUDE_DIR nlohmann/json.hpp REQUIRED)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  set_target_properties(nlohmann_json::nlohmann_json PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${TERN_NLOHMANN_INCLUDE_DIR}")
endif()
