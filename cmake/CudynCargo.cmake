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

# The test suite builds with dev-header (the header drift test and the C layout proofs); a plain
# install or a subproject does not, and so needs neither cbindgen nor the CUDA headers.
if(CUDYN_BUILD_TESTS)
  set(_features dev-header)
else()
  set(_features "")
endif()
# Compressed fatbin entries decoded by libzstd and liblz4 (the reference decoders, built from
# source into libcudyn; 4-14x faster first loads of CUDA 13 images than the pure-Rust decoder).
if(CUDYN_C_DECODERS)
  list(APPEND _features c-decoders)
endif()

# cargo decides what to rebuild; these are what can change its outputs (the sources, the
# manifest and lock file, the build script, the header's settings and the C layout proofs).
file(GLOB_RECURSE _rs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/*.rs")
add_custom_command(
  OUTPUT "${_link_dir}/libcudyn.so.${PROJECT_VERSION}" "${_link_dir}/libcudyn.a" "${_rsp}" "${_pc}" "${_cfg}"
  COMMAND ${CMAKE_COMMAND} -DCARGO=${CUDYN_CARGO} -DPROFILE=${CUDYN_CARGO_PROFILE}
          -DMANIFEST=${CMAKE_CURRENT_SOURCE_DIR}/Cargo.toml -DTARGET_DIR=${_target_dir} -DOUT=${_out}
          -DLINK_DIR=${_link_dir} "-DFILL=${_fill_pc_in}>${_pc}|${_fill_cfg_in}>${_cfg}" "-DFEATURES=${_features}"
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
  # Its manual page and shell completions, made by the command from its own definition.
  set(_cli_docs "${CMAKE_CURRENT_BINARY_DIR}/cli-docs")
  add_custom_command(
    OUTPUT "${_cli_docs}/cudyn.1" "${_cli_docs}/cudyn.bash" "${_cli_docs}/_cudyn" "${_cli_docs}/cudyn.fish"
    COMMAND ${CMAKE_COMMAND} -DCLI=${CUDYN_CLI_FILE} -DOUT=${_cli_docs} -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/cli_docs.cmake
    DEPENDS "${CUDYN_CLI_FILE}" ${CMAKE_CURRENT_SOURCE_DIR}/cmake/cli_docs.cmake
    COMMENT "The cudyn command's manual page and completions"
    VERBATIM)
  add_custom_target(cudyn_cli_docs ALL DEPENDS "${_cli_docs}/cudyn.1")
endif()

# What is installed carries no debug info (10 MB of a 1.4 MB libcudyn.so, 21 MB of libcudyn.a,
# 14 MB of the command): the build tree keeps it. CUDYN_INSTALL_DEBUG_INFO installs it apart,
# in .debug folders beside the libraries and the command, where gdb finds it by the
# .gnu_debuglink it leaves in them.
option(CUDYN_STRIP "Install libcudyn and the cudyn command without debug info" ON)
option(CUDYN_INSTALL_DEBUG_INFO "With CUDYN_STRIP, install the debug info in .debug folders beside them" OFF)
if(CUDYN_STRIP AND NOT CMAKE_OBJCOPY)
  message(WARNING "cudyn: no objcopy found: installing with debug info (set CMAKE_OBJCOPY, or -DCUDYN_STRIP=OFF)")
  set(CUDYN_STRIP OFF)
endif()
set(_ship_dir "${_link_dir}/ship")
set(_ship_so "${_link_dir}/libcudyn.so.${PROJECT_VERSION}")
set(_ship_a "${_link_dir}/libcudyn.a")
set(_ship_cli "${CUDYN_CLI_FILE}")
if(CUDYN_STRIP)
  set(_debug_args)
  set(_ship_so "${_ship_dir}/libcudyn.so.${PROJECT_VERSION}")
  set(_ship_a "${_ship_dir}/libcudyn.a")
  set(_outputs "${_ship_so}" "${_ship_a}")
  set(_so_debug)
  if(CUDYN_INSTALL_DEBUG_INFO)
    set(_so_debug "-DDEBUG_OUT=${_ship_dir}/debug/libcudyn.so.${PROJECT_VERSION}.debug")
  endif()
  add_custom_command(
    OUTPUT ${_outputs}
    COMMAND ${CMAKE_COMMAND} -DOBJCOPY=${CMAKE_OBJCOPY} -DINPUT=${_link_dir}/libcudyn.so.${PROJECT_VERSION}
            -DOUTPUT=${_ship_so} ${_so_debug} -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/strip_debug.cmake
    COMMAND ${CMAKE_COMMAND} -DOBJCOPY=${CMAKE_OBJCOPY} -DINPUT=${_link_dir}/libcudyn.a -DOUTPUT=${_ship_a}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/strip_debug.cmake
    DEPENDS "${_link_dir}/libcudyn.so.${PROJECT_VERSION}" "${_link_dir}/libcudyn.a"
            ${CMAKE_CURRENT_SOURCE_DIR}/cmake/strip_debug.cmake
    COMMENT "libcudyn without debug info, for the install"
    VERBATIM)
  add_custom_target(cudyn_ship ALL DEPENDS ${_outputs})
  if(CUDYN_BUILD_CLI)
    set(_ship_cli "${_ship_dir}/cudyn")
    set(_cli_debug)
    if(CUDYN_INSTALL_DEBUG_INFO)
      set(_cli_debug "-DDEBUG_OUT=${_ship_dir}/debug/cudyn.debug")
    endif()
    add_custom_command(
      OUTPUT "${_ship_cli}"
      COMMAND ${CMAKE_COMMAND} -DOBJCOPY=${CMAKE_OBJCOPY} -DINPUT=${CUDYN_CLI_FILE} -DOUTPUT=${_ship_cli} ${_cli_debug}
              -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/strip_debug.cmake
      DEPENDS "${CUDYN_CLI_FILE}" ${CMAKE_CURRENT_SOURCE_DIR}/cmake/strip_debug.cmake
      COMMENT "The cudyn command without debug info, for the install"
      VERBATIM)
    add_custom_target(cudyn_ship_cli ALL DEPENDS "${_ship_cli}")
  endif()
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
install(PROGRAMS "${_ship_so}" DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES "${_link_dir}/libcudyn.so.${CUDYN_SOVERSION}" "${_link_dir}/libcudyn.so" "${_ship_a}"
        DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/cudyn.h include/cudyn.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(CUDYN_BUILD_CLI)
  install(PROGRAMS "${_ship_cli}" DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES "${_cli_docs}/cudyn.1" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES "${_cli_docs}/cudyn.bash" DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
          RENAME cudyn)
  install(FILES "${_cli_docs}/_cudyn" DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)
  install(FILES "${_cli_docs}/cudyn.fish" DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
endif()
if(CUDYN_STRIP AND CUDYN_INSTALL_DEBUG_INFO)
  install(FILES "${_ship_dir}/debug/libcudyn.so.${PROJECT_VERSION}.debug" DESTINATION ${CMAKE_INSTALL_LIBDIR}/.debug)
  if(CUDYN_BUILD_CLI)
    install(FILES "${_ship_dir}/debug/cudyn.debug" DESTINATION ${CMAKE_INSTALL_BINDIR}/.debug)
  endif()
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

# Everything `cmake --install` copies, built without the tests (scripts/install-prefix.sh).
add_custom_target(cudyn_install_files)
add_dependencies(cudyn_install_files cudyn_cargo_build)
foreach(t cudyn_cli_build cudyn_cli_docs cudyn_ship cudyn_ship_cli)
  if(TARGET ${t})
    add_dependencies(cudyn_install_files ${t})
  endif()
endforeach()

# `cmake --build <build> --target uninstall` removes what the last `cmake --install` of this
# build wrote (install_manifest.txt). As a subproject the target is cudyn_uninstall, so that it
# does not clash with the including project's own.
if(PROJECT_IS_TOP_LEVEL)
  set(_uninstall uninstall)
else()
  set(_uninstall cudyn_uninstall)
endif()
if(NOT TARGET ${_uninstall})
  add_custom_target(${_uninstall}
    COMMAND ${CMAKE_COMMAND} -DMANIFEST=${CMAKE_BINARY_DIR}/install_manifest.txt
            -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/uninstall.cmake
    COMMENT "Removing the files cmake --install put in place"
    VERBATIM)
endif()
