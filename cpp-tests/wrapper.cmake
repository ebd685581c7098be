# cudyn.hpp, the header-only C++17 wrapper: header hygiene, two translation units in one
# program, the error paths without a GPU (with and without exceptions), against CUDA's
# headers, the GPU suite (with nvcc), and the header-only library example in
# c-examples/header-only. Included by cpp-tests/CMakeLists.txt.

get_target_property(_hpp_inc cudyn::cudyn INTERFACE_INCLUDE_DIRECTORIES)
list(GET _hpp_inc 0 _hpp_inc)

# cudyn.hpp builds on its own as C++17 with every warning an error, also with exceptions and
# RTTI off.
add_test(NAME wrapper_header_alone_cxx17
  COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 ${CUDYN_C_WARNINGS} -fsyntax-only -x c++ ${_hpp_inc}/cudyn.hpp)
add_test(NAME wrapper_header_alone_noexcept
  COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 ${CUDYN_C_WARNINGS} -fno-exceptions -fno-rtti -fsyntax-only
          -x c++ ${_hpp_inc}/cudyn.hpp)

function(_wrapper_cxx_target t)
  target_link_libraries(${t} PRIVATE cudyn::cudyn)
  set_target_properties(${t} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
  target_compile_options(${t} PRIVATE ${CUDYN_C_WARNINGS})
endfunction()

# Two translation units, one program: any non-inline definition in the header fails the link.
add_executable(wrapper_two_tus wrapper_tu_a.cpp wrapper_tu_b.cpp)
_wrapper_cxx_target(wrapper_two_tus)
add_test(NAME wrapper_two_tus COMMAND wrapper_two_tus)

# Error paths, launch_config, handle shapes: no GPU needed. Once with exceptions, once without
# (where the throwing API must be absent and the try_ forms carry the status).
add_executable(wrapper_cpu wrapper_cpu.cpp)
_wrapper_cxx_target(wrapper_cpu)
add_test(NAME wrapper_cpu COMMAND wrapper_cpu)
add_executable(wrapper_cpu_noexcept wrapper_cpu.cpp)
_wrapper_cxx_target(wrapper_cpu_noexcept)
target_compile_options(wrapper_cpu_noexcept PRIVATE -fno-exceptions -fno-rtti)
add_test(NAME wrapper_cpu_noexcept COMMAND wrapper_cpu_noexcept)
set_tests_properties(wrapper_cpu wrapper_cpu_noexcept PROPERTIES PASS_REGULAR_EXPRESSION "PASS")

# After cuda.h and cuda_runtime_api.h, by a plain C++ compiler: the is_same proofs, the
# conversions to CUkernel/cudaKernel_t, kernel_of() (compiled, and its error path run).
if(CUDAToolkit_FOUND AND TARGET CUDA::cudart)
  set(_hpp_cuda_inc "")
  foreach(d ${CUDAToolkit_INCLUDE_DIRS})
    list(APPEND _hpp_cuda_inc -isystem ${d})
  endforeach()
  add_test(NAME wrapper_header_alone_cuda_headers
    COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 ${CUDYN_C_WARNINGS} -fsyntax-only ${_hpp_cuda_inc}
            -include cuda.h -include cuda_runtime_api.h -x c++ ${_hpp_inc}/cudyn.hpp)
  add_executable(wrapper_cuda_headers wrapper_cuda_headers.cpp)
  _wrapper_cxx_target(wrapper_cuda_headers)
  target_link_libraries(wrapper_cuda_headers PRIVATE CUDA::cudart)
  add_test(NAME wrapper_cuda_headers COMMAND wrapper_cuda_headers)
  set_tests_properties(wrapper_cuda_headers PROPERTIES PASS_REGULAR_EXPRESSION "PASS")
endif()

# The GPU suite, built by nvcc: from_source with name expressions, from_file/from_data of an
# nvcc fatbin, typed launches through both APIs, kernel_of, globals, enumeration, attributes.
if(CUDYN_HAVE_NVCC)
  cudyn_device_code(_wrapper_fatbin wrapper_device.cu FATBIN)
  add_executable(wrapper_gpu wrapper_gpu.cu wrapper_new_counter.cpp)
  target_link_libraries(wrapper_gpu PRIVATE cudyn::cudyn CUDA::cudart)
  target_include_directories(wrapper_gpu PRIVATE ${PROJECT_SOURCE_DIR}/c-examples)
  target_compile_definitions(wrapper_gpu PRIVATE "WRAPPER_FATBIN=\"${_wrapper_fatbin}\"")
  # One libcudart for the program and cudyn (cudyn opens the one already loaded by its
  # soname). The toolkit's lib folder is an implicit link folder, so CMake adds no RPATH for it.
  set_target_properties(wrapper_gpu PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                                               CUDA_RUNTIME_LIBRARY Shared
                                               BUILD_RPATH "${CUDAToolkit_LIBRARY_DIR}")
  target_compile_options(wrapper_gpu PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Werror>)
  add_dependencies(wrapper_gpu device_wrapper_device_FATBIN)
  cudyn_add_test(wrapper_gpu wrapper_gpu)
endif()

# c-examples/header-only: a header-only library (vecmath.hpp) on cudyn.hpp, compiling its
# kernels from embedded source, used by a program a plain C++ compiler builds without CUDA
# headers, linked against cudyn alone.
set(_hdr_only ${PROJECT_SOURCE_DIR}/c-examples/header-only)
add_executable(header_only_vecmath ${_hdr_only}/main.cpp)
_wrapper_cxx_target(header_only_vecmath)
target_include_directories(header_only_vecmath PRIVATE ${_hdr_only} ${PROJECT_SOURCE_DIR}/c-examples)
target_link_libraries(header_only_vecmath PRIVATE ${CMAKE_DL_LIBS})
cudyn_add_test(header_only_vecmath header_only_vecmath)
add_test(NAME header_only_no_cuda_needed
  COMMAND ${CMAKE_COMMAND} "-DFILES=$<TARGET_FILE:header_only_vecmath>"
          "-DNO_UNDEF=$<TARGET_FILE:header_only_vecmath>"
          -P ${PROJECT_SOURCE_DIR}/cmake/check_needed.cmake)
# vecmath.hpp alone, with exceptions off: the header-only library needs none.
add_test(NAME header_only_vecmath_alone_noexcept
  COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 ${CUDYN_C_WARNINGS} -fno-exceptions -fsyntax-only -I${_hpp_inc}
          -x c++ ${_hdr_only}/vecmath.hpp)
