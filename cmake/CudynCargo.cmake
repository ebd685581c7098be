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

# What a Rust staticlib needs from the system is what rustc says when it links libcudyn.a
# (`--print=native-static-libs`), recorded by cmake/cargo_build.cmake at build time: the build
# tree links it through a linker response file, and the installed cudyn.pc and
# cudynConfig.cmake are filled with it after each build.
set(_rsp "${_link_dir}/native-static-libs.rsp")
set(_fill_pc_in "${CMAKE_CURRENT_BINARY_DIR}/cudyn.pc.in")
set(_fill_cfg_in "${CMAKE_CURRENT_BINARY_DIR}/cudynConfig.cmake.in")
set(_pc "${CMAKE_CURRENT_BINARY_DIR}/cudyn.pc")
set(_cfg "${CMAKE_CURRENT_BINARY_DIR}/cudynConfig.cmake")

# cargo decides what to rebuild; these are what can change its outputs (the sources, the
# manifest and lock file, the build script, the header's settings and the C layout proofs).
file(GLOB_RECURSE _rs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/*.rs")
add_custom_command(
  OUTPUT "${_link_dir}/libcudyn.so.${PROJECT_VERSION}" "${_link_dir}/libcudyn.a" "${_rsp}" "${_pc}" "${_cfg}"
  COMMAND ${CMAKE_COMMAND} -DCARGO=${CUDYN_CARGO} -DPROFILE=${CUDYN_CARGO_PROFILE}
          -DMANIFEST=${CMAKE_CURRENT_SOURCE_DIR}/Cargo.toml -DTARGET_DIR=${_target_dir} -DOUT=${_out}
          -DLINK_DIR=${_link_dir} "-DFILL=${_fill_pc_in}>${_pc}|${_fill_cfg_in}>${_cfg}"
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/cargo_build.cmake
  # The soname is libcudyn.so.0: lay out the usual versioned file and links.
  COMMAND ${CMAKE_COMMAND} -E make_directory ${_link_dir}
  COMMAND ${CMAKE_COMMAND} -E copy ${CUDYN_SHARED_FILE} ${_link_dir}/libcudyn.so.${PROJECT_VERSION}
  COMMAND ${CMAKE_COMMAND} -E create_symlink libcudyn.so.${PROJECT_VERSION} ${_link_dir}/libcudyn.so.${CUDYN_SOVERSION}
  COMMAND ${CMAKE_COMMAND} -E create_symlink libcudyn.so.${CUDYN_SOVERSION} ${_link_dir}/libcudyn.so
  COMMAND ${CMAKE_COMMAND} -E copy ${CUDYN_STATIC_FILE} ${_link_dir}/libcudyn.a
  DEPENDS ${_rs} ${CMAKE_CURRENT_SOURCE_DIR}/Cargo.toml ${CMAKE_CURRENT_SOURCE_DIR}/Cargo.lock
          ${CMAKE_CURRENT_SOURCE_DIR}/build.rs ${CMAKE_CURRENT_SOURCE_DIR}/cbindgen.toml
          ${CMAKE_CURRENT_SOURCE_DIR}/tests/layout/layout_proofs.c
          ${CMAKE_CURRENT_SOURCE_DIR}/cmake/cargo_build.cmake "${_fill_pc_in}" "${_fill_cfg_in}"
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
            ${CMAKE_CURRENT_SOURCE_DIR}/Cargo.lock            ${CMAKE_CURRENT_SOURCE_DIR}/build.rs cudyn_cargo_build
    COMMENT "Building the cudyn command with cargo (${CUDYN_CARGO_PROFILE})"
    USES_TERMINAL
    VERBATIM)
  add_custom_target(cudyn_cli_build ALL DEPENDS "${CUDYN_CLI_FILE}")
  add_executable(cudyn::cli IMPORTED GLOBAL)
  set_target_properties(cudyn::cli PROPERTIES IMPORTED_LOCATION "${CUDYN_CLI_FILE}")
  add_dependencies(cudyn::cli cudyn_cli_build)
endif()

# cudyn_add_kernel_bundle() for this build (installed beside the package config below).
include(${CMAKE_CURRENT_LIST_DIR}/CudynBundle.cmake)

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
  # ld reads the -l options from the response file, in order, after libcudyn.a.
  INTERFACE_LINK_LIBRARIES "-Wl,@${_rsp}")
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
# Both are configured here with @CUDYN_NATIVE_STATIC_LIBS@ left in; the build fills it.
set(CUDYN_STATIC_DEPS "@CUDYN_NATIVE_STATIC_LIBS_LIST@")
configure_package_config_file(cmake/cudynConfig.cmake.in "${_fill_cfg_in}"
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cudyn
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/cudynConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${_cfg}" "${CMAKE_CURRENT_BINARY_DIR}/cudynConfigVersion.cmake" "${CMAKE_CURRENT_LIST_DIR}/CudynBundle.cmake"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cudyn)
set(CUDYN_STATIC_DEPS_PC "@CUDYN_NATIVE_STATIC_LIBS@")
# Relocatable: the prefix is found from the .pc file's own folder, wherever the install moved.
file(RELATIVE_PATH CUDYN_PC_TO_PREFIX "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
configure_file(cmake/cudyn.pc.in "${_fill_pc_in}" @ONLY)
install(FILES "${_pc}" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
