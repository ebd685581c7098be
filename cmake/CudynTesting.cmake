# Helpers for the ctest suite: CUDA detection (nvcc and headers are optional; tests that need
# them are only defined when found), GPU tests that skip with exit code 77, device code built
# with nvcc into fatbins/cubins that tests load at run time.
include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(CUDYN_HAVE_NVCC ON)
  message(STATUS "cudyn tests: nvcc ${CMAKE_CUDA_COMPILER_VERSION}, CUDA headers in ${CUDAToolkit_INCLUDE_DIRS}")
else()
  set(CUDYN_HAVE_NVCC OFF)
  find_package(CUDAToolkit QUIET)
  message(STATUS "cudyn tests: no nvcc; tests that need device code are not built")
endif()

# Architectures the test fatbins carry as SASS (+ PTX of the first).
set(CUDYN_TEST_ARCHS "90" CACHE STRING "SASS architectures for the test fatbins")

# Programs that need a GPU print "SKIP: ..." and exit 77 without one; ctest shows them as
# skipped. With CUDYN_REQUIRE_GPU=1 in the environment (the GPU script sets it) they fail instead.
function(cudyn_add_test name)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
endfunction()

# cudyn_device_code(<out-var> <source.cu> FATBIN|CUBIN|PTX [ARCH sm] [NAME base]) -> path of
# the built file, ${CMAKE_CURRENT_BINARY_DIR}/device/<base>.<ext> (base: the source's name
# unless NAME gives one). The source is absolute or relative to the current source folder.
function(cudyn_device_code out src kind)
  cmake_parse_arguments(A "" "ARCH;NAME" "" ${ARGN})
  get_filename_component(base ${src} NAME_WE)
  get_filename_component(path ${src} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  if(A_NAME)
    set(base ${A_NAME})
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/device)
  if(kind STREQUAL "FATBIN")
    set(file ${dir}/${base}.fatbin)
    set(flags -fatbin)
    foreach(a ${CUDYN_TEST_ARCHS})
      list(APPEND flags -gencode arch=compute_${a},code=sm_${a})
    endforeach()
    list(GET CUDYN_TEST_ARCHS 0 first)
    list(APPEND flags -gencode arch=compute_${first},code=compute_${first})
  elseif(kind STREQUAL "CUBIN")
    if(NOT A_ARCH)
      list(GET CUDYN_TEST_ARCHS 0 A_ARCH)
    endif()
    set(file ${dir}/${base}.sm_${A_ARCH}.cubin)
    set(flags -cubin -arch=sm_${A_ARCH})
  elseif(kind STREQUAL "PTX")
    list(GET CUDYN_TEST_ARCHS 0 first)
    set(file ${dir}/${base}.ptx)
    set(flags -ptx -arch=compute_${first})
  else()
    message(FATAL_ERROR "cudyn_device_code: unknown kind ${kind}")
  endif()
  add_custom_command(OUTPUT ${file}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${CMAKE_CUDA_COMPILER} ${flags} -o ${file} ${path}
    DEPENDS ${path}
    COMMENT "nvcc ${kind} ${src}"
    VERBATIM)
  add_custom_target(device_${base}_${kind}${A_ARCH} ALL DEPENDS ${file})
  set(${out} ${file} PARENT_SCOPE)
endfunction()

# Warnings-as-errors for everything the suite compiles itself.
set(CUDYN_C_WARNINGS -Wall -Wextra -Wpedantic -Werror)
