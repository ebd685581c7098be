# cudyn_add_kernel_bundle(): compile, at build time and with no GPU, the CUDA C++ sources a
# program compiles at run time, for each architecture, into a bundle installed beside it, so its
# first run compiles nothing (the cache finds `<program>.cudyn-bundle` beside the executable).
#
#   cudyn_add_kernel_bundle(<executable target>
#       SOURCES <file>[=<name>]...     the sources; <name> is the program name the program
#                                      compiles it under (default: the file's name)
#       ARCHS <sm>...                  80 90 (or sm_80 sm_90): one compile per source and arch
#       [OPTIONS <nvrtc option>...]    exactly as the program passes them, without -arch (the
#                                      arch is appended last, where cudyn appends the GPU's)
#       [KIND CUBIN|PTX|LTOIR]         what the program asks for (default CUBIN)
#       [OUTPUT <file>]                default: <target's folder>/<target's file name>.cudyn-bundle
#       [INSTALL_DESTINATION <dir>])   install it there as <target's file name>.cudyn-bundle
#
# Include folders in OPTIONS may differ from the program's at run time (the key names them by
# position, not path): only the headers' contents must be the same. Needs the `cudyn` command
# (cudyn::cli) and NVRTC on the build machine. Every header a compile reads is a dependency.
function(cudyn_add_kernel_bundle target)
  cmake_parse_arguments(PARSE_ARGV 1 _b "" "OUTPUT;INSTALL_DESTINATION;KIND" "SOURCES;ARCHS;OPTIONS")
  if(NOT TARGET cudyn::cli)
    message(FATAL_ERROR "cudyn_add_kernel_bundle(${target}): needs the cudyn command (cudyn::cli): build cudyn with CUDYN_BUILD_CLI=ON, or install it with the library")
  endif()
  if(NOT _b_SOURCES OR NOT _b_ARCHS)
    message(FATAL_ERROR "cudyn_add_kernel_bundle(${target}): SOURCES and ARCHS are required")
  endif()
  get_target_property(_name ${target} OUTPUT_NAME)
  if(NOT _name)
    set(_name ${target})
  endif()
  set(_name "${_name}${CMAKE_EXECUTABLE_SUFFIX}")
  if(NOT _b_OUTPUT)
    get_target_property(_dir ${target} RUNTIME_OUTPUT_DIRECTORY)
    if(NOT _dir)
      if(CMAKE_RUNTIME_OUTPUT_DIRECTORY)
        set(_dir ${CMAKE_RUNTIME_OUTPUT_DIRECTORY})
      else()
        set(_dir ${CMAKE_CURRENT_BINARY_DIR})
      endif()
    endif()
    set(_b_OUTPUT "${_dir}/${_name}.cudyn-bundle")
  endif()
  set(_kind cubin)
  if(_b_KIND)
    string(TOLOWER "${_b_KIND}" _kind)
  endif()
  set(_args)
  set(_deps)
  foreach(_s IN LISTS _b_SOURCES)
    string(FIND "${_s}" "=" _eq)
    if(_eq GREATER -1)
      string(SUBSTRING "${_s}" 0 ${_eq} _file)
      math(EXPR _after "${_eq} + 1")
      string(SUBSTRING "${_s}" ${_after} -1 _prog)
    else()
      set(_file "${_s}")
      get_filename_component(_prog "${_s}" NAME)
    endif()
    get_filename_component(_file "${_file}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND _args "${_file}=${_prog}")
    list(APPEND _deps "${_file}")
  endforeach()
  foreach(_a IN LISTS _b_ARCHS)
    list(APPEND _args --arch "${_a}")
  endforeach()
  add_custom_command(
    OUTPUT "${_b_OUTPUT}"
    COMMAND cudyn::cli cache bundle -o "${_b_OUTPUT}" --target ${_kind} --depfile "${_b_OUTPUT}.d" ${_args} -- ${_b_OPTIONS}
    DEPENDS ${_deps} cudyn::cli
    DEPFILE "${_b_OUTPUT}.d"
    COMMENT "Compiling the kernels of ${target} into ${_name}.cudyn-bundle (${_b_ARCHS})"
    VERBATIM)
  add_custom_target(${target}_cudyn_bundle ALL DEPENDS "${_b_OUTPUT}")
  add_dependencies(${target} ${target}_cudyn_bundle)
  set_property(TARGET ${target} PROPERTY CUDYN_BUNDLE "${_b_OUTPUT}")
  if(_b_INSTALL_DESTINATION)
    install(FILES "${_b_OUTPUT}" DESTINATION "${_b_INSTALL_DESTINATION}" RENAME "${_name}.cudyn-bundle")
  endif()
endfunction()
