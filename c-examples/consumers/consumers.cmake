# Outside projects that use cudyn, each a ctest test that configures, builds and runs one, shared
# and static: add_subdirectory of the source tree, FetchContent of it, and a plain Makefile with
# pkg-config against an install. (find_package against an install is consumer_find_package.)
# Included from c-examples/CMakeLists.txt.
set(_cs ${CMAKE_CURRENT_LIST_DIR})

# As a subproject, cudyn builds the crate with cargo: only where cargo is, so not with
# CUDYN_USE_INSTALLED. cargo works in this build's target folder, already built, so it only
# checks that it is up to date (and takes cargo's lock if two of these run at once).
if(NOT CUDYN_USE_INSTALLED)
  foreach(_how add_subdirectory fetchcontent)
    foreach(_link shared static)
      string(TOUPPER ${_link} _kind)
      add_test(NAME consumer_${_how}_${_link}
        COMMAND ${CMAKE_COMMAND} -DSRC=${_cs}/${_how} -DBIN=${CMAKE_BINARY_DIR}/consumers/${_how}-${_link}
                -DGENERATOR=${CMAKE_GENERATOR}
                "-DEXTRA=-DCUDYN_SOURCE_DIR=${PROJECT_SOURCE_DIR};-DCONSUMER_LINK=${_link};-DCUDYN_CARGO=${CUDYN_CARGO};-DCUDYN_CARGO_PROFILE=${CUDYN_CARGO_PROFILE};-DCUDYN_CARGO_TARGET_DIR=${CUDYN_CARGO_TARGET_DIR}"
                -DRUN=consumer -D${_kind}_EXES=consumer
                -P ${PROJECT_SOURCE_DIR}/cmake/consumer_test.cmake)
      set_tests_properties(consumer_${_how}_${_link} PROPERTIES TIMEOUT 900)
    endforeach()
  endforeach()
endif()

# pkg-config with a Makefile, against an install of this build (its own prefix per test, so
# tests running at once do not install over each other) or the installed package in use.
if(CUDYN_USE_INSTALLED)
  get_filename_component(_cs_prefix "${cudyn_DIR}/../../.." ABSOLUTE)
endif()
foreach(_link shared static)
  if(CUDYN_USE_INSTALLED)
    set(_cs_args -DPREFIX=${_cs_prefix})
  else()
    set(_cs_args -DPREFIX=${CMAKE_BINARY_DIR}/consumers/prefix-pkg-config-${_link} -DINSTALL_FROM=${CMAKE_BINARY_DIR})
  endif()
  add_test(NAME consumer_pkg_config_${_link}
    COMMAND ${CMAKE_COMMAND} -DSRC=${_cs}/pkg-config -DBIN=${CMAKE_BINARY_DIR}/consumers/pkg-config-${_link}
            ${_cs_args} -DLINK=${_link} -P ${_cs}/pkg_config_test.cmake)
  set_tests_properties(consumer_pkg_config_${_link} PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP: ")
endforeach()
