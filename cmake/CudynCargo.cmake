# Build the crate with cargo and wrap its outputs as imported targets; install them with a
# relocatable package config and a pkg-config file.
find_program(CUDYN_CARGO cargo HINTS $ENV{HOME}/.cargo/bin REQUIRED)
set(CUDYN_CARGO_PROFILE release CACHE STRING "cargo profile used to build cudyn")
# cargo's target folder. An outside project that adds cudyn as a subproject can point this at
# a folder already built (the consumer tests do) so cargo only checks that it is up to date.
set(CUDYN_CARGO_TARGET_DIR "${CMAKE_CURRENT_BINARY_DIR}/cargo" CACHE PATH "cargo target folder for building cudyn")
set(_target_dir "${CUDYN_CARGO_TARGET_DIR}")
if(CUDYN_CARGO_PROFILE STREQUAL "dev")
  set(_out "${_target_dir}/debug")
else()
  set(_out "${_target_dir}/${CUDYN_CARGO_PROFILE}")
endif()
set(CUDYN_SHARED_FILE "${_out}/libcudyn.so")
set(CUDYN_STATIC_FILE "${_out}/libcudyn.a")
set(_link_dir "${CMAKE_CURRENT_BINARY_DIR}/cudyn-lib")

file(GLOB_RECURSE _rs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/*.rs")
add_custom_command(
  OUTPUT "${_link_dir}/libcudyn.so.${PROJECT_VERSION}" "${_link_dir}/libcudyn.a"
  COMMAND ${CMAKE_COMMAND} -E env CARGO_TARGET_DIR=${_target_dir}
          ${CUDYN_CARGO} build --profile ${CUDYN_CARGO_PROFILE} --lib
          --manifest-path ${CMAKE_CURRENT_SOURCE_DIR}/Cargo.toml
  # The soname is libcudyn.so.0: lay out the usual versioned file and links.
  COMMAND ${CMAKE_COMMAND} -E make_directory ${_link_dir}
  COMMAND ${CMAKE_COMMAND} -E copy ${CUDYN_SHARED_FILE} ${_link_dir}/libcudyn.so.${PROJECT_VERSION}
  COMMAND ${CMAKE_COMMAND} -E create_symlink libcudyn.so.${PROJECT_VERSION} ${_link_dir}/libcudyn.so.${CUDYN_SOVERSION}
  COMMAND ${CMAKE_COMMAND} -E create_symlink libcudyn.so.${CUDYN_SOVERSION} ${_link_dir}/libcudyn.so
  COMMAND ${CMAKE_COMMAND} -E copy ${CUDYN_STATIC_FILE} ${_link_dir}/libcudyn.a
  DEPENDS ${_rs} ${CMAKE_CURRENT_SOURCE_DIR}/Cargo.toml ${CMAKE_CURRENT_SOURCE_DIR}/build.rs
  COMMENT "Building cudyn with cargo (${CUDYN_CARGO_PROFILE})"
  USES_TERMINAL
  VERBATIM)
add_custom_target(cudyn_cargo_build ALL DEPENDS "${_link_dir}/libcudyn.so.${PROJECT_VERSION}" "${_link_dir}/libcudyn.a")

# The `cudyn` command (cli/, a package of its own whose dependencies the library never needs):
# built and installed into bin/ by default when cudyn is the top-level project; a project that
# adds cudyn as a subproject gets only the library unless it asks.
option(CUDYN_BUILD_CLI "Build and install the cudyn command (cargo fetches clap)" ${PROJECT_IS_TOP_LEVEL})
if(CUDYN_BUILD_CLI)
  set(CUDYN_CLI_FILE "${_out}/cudyn")
  file(GLOB_RECURSE _cli_rs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/cli/src/*.rs")
  add_custom_command(
    OUTPUT "${CUDYN_CLI_FILE}"
    COMMAND ${CMAKE_COMMAND} -E env CARGO_TARGET_DIR=${_target_dir}
            ${CUDYN_CARGO} build --profile ${CUDYN_CARGO_PROFILE} --package cudyn-cli --bin cudyn
            --manifest-path ${CMAKE_CURRENT_SOURCE_DIR}/Cargo.toml
    # cargo leaves an up-to-date binary alone: touch it so this rule does not run every build.
    COMMAND ${CMAKE_COMMAND} -E touch_nocreate "${CUDYN_CLI_FILE}"
    DEPENDS ${_rs} ${_cli_rs} ${CMAKE_CURRENT_SOURCE_DIR}/cli/Cargo.toml ${CMAKE_CURRENT_SOURCE_DIR}/Cargo.toml
            ${CMAKE_CURRENT_SOURCE_DIR}/build.rs cudyn_cargo_build
    COMMENT "Building the cudyn command with cargo (${CUDYN_CARGO_PROFILE})"
    USES_TERMINAL
    VERBATIM)
  add_custom_target(cudyn_cli_build ALL DEPENDS "${CUDYN_CLI_FILE}")
  add_executable(cudyn::cli IMPORTED GLOBAL)
  set_target_properties(cudyn::cli PROPERTIES IMPORTED_LOCATION "${CUDYN_CLI_FILE}")
  add_dependencies(cudyn::cli cudyn_cli_build)
endif()

# What a Rust staticlib needs from the system (cargo's native-static-libs for this target).
set(CUDYN_STATIC_DEPS "-lgcc_s;-lutil;-lrt;-lpthread;-lm;-ldl;-lc")

add_library(cudyn_shared SHARED IMPORTED GLOBAL)
set_target_properties(cudyn_shared PROPERTIES
  IMPORTED_LOCATION "${_link_dir}/libcudyn.so.${PROJECT_VERSION}"
  IMPORTED_SONAME "libcudyn.so.${CUDYN_SOVERSION}"
  INTERFACE_INCLUDE_DIRECTORIES "${CMAKE_CURRENT_SOURCE_DIR}/include")
add_dependencies(cudyn_shared cudyn_cargo_build)
add_library(cudyn_static_lib STATIC IMPORTED GLOBAL)
set_target_properties(cudyn_static_lib PROPERTIES
  IMPORTED_LOCATION "${_link_dir}/libcudyn.a"
  INTERFACE_INCLUDE_DIRECTORIES "${CMAKE_CURRENT_SOURCE_DIR}/include"
  INTERFACE_LINK_LIBRARIES "${CUDYN_STATIC_DEPS}")
add_dependencies(cudyn_static_lib cudyn_cargo_build)
add_library(cudyn::cudyn ALIAS cudyn_shared)
add_library(cudyn::cudyn_static ALIAS cudyn_static_lib)

# Install: libraries, headers, licences and changelog, package config, pkg-config.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(FILES "${_link_dir}/libcudyn.so.${PROJECT_VERSION}" "${_link_dir}/libcudyn.so.${CUDYN_SOVERSION}"
              "${_link_dir}/libcudyn.so" "${_link_dir}/libcudyn.a"
        DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/cudyn.h include/cudyn.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(CUDYN_BUILD_CLI)
  install(PROGRAMS "${CUDYN_CLI_FILE}" DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# Both licence texts travel with the binaries (MIT OR Apache-2.0 lets a user pick either).
install(FILES LICENSE-MIT LICENSE-APACHE CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
configure_package_config_file(cmake/cudynConfig.cmake.in "${CMAKE_CURRENT_BINARY_DIR}/cudynConfig.cmake"
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cudyn
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/cudynConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/cudynConfig.cmake" "${CMAKE_CURRENT_BINARY_DIR}/cudynConfigVersion.cmake"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cudyn)
string(REPLACE ";" " " CUDYN_STATIC_DEPS_PC "${CUDYN_STATIC_DEPS}")
# Relocatable: the prefix is found from the .pc file's own folder, wherever the install moved.
file(RELATIVE_PATH CUDYN_PC_TO_PREFIX "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
configure_file(cmake/cudyn.pc.in "${CMAKE_CURRENT_BINARY_DIR}/cudyn.pc" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/cudyn.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
