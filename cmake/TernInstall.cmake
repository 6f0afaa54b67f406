# Installation: `cmake --install <build> --prefix P` (or `make install PREFIX=P`) installs
#   P/lib/libtern.so        the C API with the runtime, tokenizer and the TERN_PLATFORM file hook
#                           (platforms/) inside; only
#                           tern_* symbols are exported
#   P/include/tern/tern.h   the C API
#   P/include/tern/tern.hpp the C++ API's declarations (Model, Session, Generator, Limits,
#                           options, Status / Result / Span) with the few headers they include,
#                           under P/include/tern/runtime/; no internal class (runtime/models/ is
#                           not installed). libtern.so exports the C API only: a C++ program
#                           links the static libraries of a build tree.
#   P/bin/tern              the command-line tool
#   P/lib/cmake/tern/       find_package(tern) -> target tern::tern
#   P/lib/pkgconfig/tern.pc pkg-config --cflags --libs tern
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

add_library(tern_shared SHARED ${PROJECT_SOURCE_DIR}/runtime/api/c_api.cc
                               ${PROJECT_SOURCE_DIR}/runtime/api/c_generate.cc
                               ${PROJECT_SOURCE_DIR}/runtime/api/c_generate_text.cc)
set_target_properties(tern_shared PROPERTIES
  OUTPUT_NAME tern
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON)
target_link_libraries(tern_shared PRIVATE tern_runtime tern_tokenizer tern_text tern_platform_${TERN_PLATFORM})
target_link_options(tern_shared PRIVATE -Wl,--exclude-libs,ALL)
# P/include for <tern/tern.h>; P/include/tern for the "runtime/..." paths tern.hpp includes.
target_include_directories(tern_shared INTERFACE
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/tern>)

install(TARGETS tern_shared EXPORT ternTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/tern/tern.h
              ${PROJECT_SOURCE_DIR}/runtime/include/tern/tern.hpp
              ${PROJECT_SOURCE_DIR}/runtime/include/tern/limits.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tern)
# What tern.hpp includes, and nothing more: the install test compiles tern.hpp against exactly
# this set, so a new include of an internal header fails there.
foreach(header core/dtype.h core/fp16.h core/result.h core/span.h core/status.h core/tensor.h
               decoding/options.h model/config.h model/config_fields.h model/model.h model/shortlist.h
               kernels/reference/activations.h
               kernels/reference/layer_norm.h kernels/reference/positions.h
               kernels/reference/rotary.h)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/runtime/${header}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tern/runtime/${dir})
endforeach()
if(TARGET tern)
  install(TARGETS tern RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT ternTargets NAMESPACE tern:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tern
        FILE ternTargets.cmake)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/ternConfig.cmake.in
  "@PACKAGE_INIT@\ninclude(\"\${CMAKE_CURRENT_LIST_DIR}/ternTargets.cmake\")\n"
  "if(NOT TARGET tern::tern)\n  add_library(tern::tern ALIAS tern::tern_shared)\nendif()\n")
configure_package_config_file(${CMAKE_CURRENT_BINARY_DIR}/ternConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ternConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tern)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ternConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ternConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/ternConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tern)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/tern.pc.in
  "prefix=\${pcfiledir}/../..\nlibdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}\nincludedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}\n\n"
  "Name: tern\nDescription: Transformer translation runtime for edge CPUs\nVersion: ${PROJECT_VERSION}\n"
  "Libs: -L\${libdir} -ltern\nCflags: -I\${includedir} -I\${includedir}/tern\n")
configure_file(${CMAKE_CURRENT_BINARY_DIR}/tern.pc.in ${CMAKE_CURRENT_BINARY_DIR}/tern.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tern.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
