# cmake -DSRC=<folder with the Makefile> -DBIN=<scratch folder> -DPREFIX=<installed cudyn>
#       [-DINSTALL_FROM=<build>] -DLINK=shared|static -P pkg_config_test.cmake
# Installs (if asked), then builds consumer_<LINK> with make and pkg-config alone, runs it, and
# checks it links libcudyn.so (shared) or carries cudyn in itself (static). Without pkg-config
# or make it prints "SKIP:" (the test's SKIP_REGULAR_EXPRESSION).
find_program(PKG_CONFIG NAMES pkg-config pkgconf)
find_program(MAKE_PROGRAM NAMES gmake make)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/needed.cmake)  # READELF, cudyn_check_needed
foreach(tool PKG_CONFIG MAKE_PROGRAM READELF)
  if(NOT ${tool})
    message(STATUS "SKIP: no ${tool} on this machine (pkg-config/pkgconf, make and readelf are needed)")
    return()
  endif()
endforeach()

if(INSTALL_FROM)
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${INSTALL_FROM} --prefix ${PREFIX}
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install into ${PREFIX} failed")
  endif()
endif()
file(GLOB pcs ${PREFIX}/*/pkgconfig/cudyn.pc ${PREFIX}/*/*/pkgconfig/cudyn.pc)
if(NOT pcs)
  message(FATAL_ERROR "no cudyn.pc under ${PREFIX}")
endif()
list(GET pcs 0 pc)
get_filename_component(pcdir ${pc} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} "${pcdir}")

# cudyn.pc names the prefix it was configured for; an install moved with --prefix (or carried to
# another machine) is elsewhere. pkg-config's --define-prefix takes the prefix from the .pc's
# place instead; only use it when the file needs it, and say so.
set(pkg_config ${PKG_CONFIG})
execute_process(COMMAND ${PKG_CONFIG} --variable=prefix cudyn OUTPUT_VARIABLE pc_prefix OUTPUT_STRIP_TRAILING_WHITESPACE)
get_filename_component(pc_prefix_real "${pc_prefix}" REALPATH)
get_filename_component(prefix_real "${PREFIX}" REALPATH)
if(NOT pc_prefix_real STREQUAL prefix_real)
  message(STATUS "NOTE: cudyn.pc says prefix=${pc_prefix} but lies in ${PREFIX}: using pkg-config --define-prefix")
  set(pkg_config "${PKG_CONFIG} --define-prefix")
endif()
foreach(q "--cflags" "--libs" "--static --libs")
  separate_arguments(qargs UNIX_COMMAND "${pkg_config} ${q} cudyn")
  execute_process(COMMAND ${qargs} OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE)
  message(STATUS "pkg-config ${q} cudyn: ${flags}")
endforeach()

file(REMOVE_RECURSE ${BIN})
file(MAKE_DIRECTORY ${BIN})
set(exe consumer_${LINK})
execute_process(COMMAND ${MAKE_PROGRAM} -C ${BIN} -f ${SRC}/Makefile "PKG_CONFIG=${pkg_config}" ${exe}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make ${exe} failed")
endif()
# No LD_LIBRARY_PATH: the shared one finds libcudyn.so through its rpath.
execute_process(COMMAND ${BIN}/${exe} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${exe}: ${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${exe} exited ${rc}")
endif()

string(TOUPPER "${LINK}" kind)
cudyn_check_needed(${BIN}/${exe} CUDYN ${kind} NO_CUDA)
