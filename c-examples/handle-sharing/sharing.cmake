# Kernel handles shared between CUDA runtime instances: the scenario of NVIDIA's "Dynamic
# Loading in the CUDA Runtime". Two libraries with their own static runtimes hand out kernel
# handles; a third, linked with cudyn only, launches them through the runtime and the driver.
# See handle-sharing/sharing.c. Included from c-examples/CMakeLists.txt.
if(NOT CUDYN_HAVE_NVCC)
  return()
endif()
set(_hs ${CMAKE_CURRENT_LIST_DIR})
set(_hs_bin ${CMAKE_CURRENT_BINARY_DIR}/handle-sharing)

# libmatrix_mul's device code: a fatbin (SASS for CUDYN_TEST_ARCHS + PTX of the first), turned
# into a C array and linked into the library.
set(_hs_fatbin ${_hs_bin}/matrix_mul_kernel.fatbin)
set(_hs_embed ${_hs_bin}/matrix_mul_fatbin.c)
set(_hs_gencode)
foreach(a ${CUDYN_TEST_ARCHS})
  list(APPEND _hs_gencode -gencode arch=compute_${a},code=sm_${a})
endforeach()
list(GET CUDYN_TEST_ARCHS 0 _hs_first)
list(APPEND _hs_gencode -gencode arch=compute_${_hs_first},code=compute_${_hs_first})
add_custom_command(OUTPUT ${_hs_fatbin}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${_hs_bin}
  COMMAND ${CMAKE_CUDA_COMPILER} -fatbin ${_hs_gencode} -o ${_hs_fatbin} ${_hs}/matrix_mul_kernel.cu
  DEPENDS ${_hs}/matrix_mul_kernel.cu ${_hs}/matrix_mul.h
  COMMENT "nvcc FATBIN handle-sharing/matrix_mul_kernel.cu"
  VERBATIM)
add_custom_command(OUTPUT ${_hs_embed}
  COMMAND ${CMAKE_COMMAND} -DIN=${_hs_fatbin} -DOUT=${_hs_embed} -DNAME=matrix_mul_fatbin
          -P ${_hs}/embed_fatbin.cmake
  DEPENDS ${_hs_fatbin} ${_hs}/embed_fatbin.cmake
  COMMENT "Embedding matrix_mul_kernel.fatbin"
  VERBATIM)

# Each library keeps what it links statically (its CUDA runtime above all) to itself
# (--exclude-libs; CUDA 13's archive hides its symbols already, the check below holds for any
# toolkit), and resolves every symbol at link time (-z defs).
set(_hs_link_options LINKER:--exclude-libs,ALL LINKER:-z,defs)

# libmatrix_mul: C++, its own static runtime (CUDA::cudart_static is what CUDA_RUNTIME_LIBRARY
# Static links into a CUDA target; this one has no CUDA sources), loads through cudyn.
add_library(sharing_matrix_mul SHARED ${_hs}/matrix_mul.cpp ${_hs_embed})
target_link_libraries(sharing_matrix_mul PRIVATE cudyn::cudyn CUDA::cudart_static)
target_include_directories(sharing_matrix_mul PUBLIC ${_hs} ${CUDAToolkit_INCLUDE_DIRS})
target_compile_options(sharing_matrix_mul PRIVATE ${CUDYN_C_WARNINGS})
target_link_options(sharing_matrix_mul PRIVATE ${_hs_link_options})
set_target_properties(sharing_matrix_mul PROPERTIES OUTPUT_NAME matrix_mul LIBRARY_OUTPUT_DIRECTORY ${_hs_bin}
  CXX_STANDARD 17 CXX_VISIBILITY_PRESET hidden C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)

# libvector_add: compiled by nvcc, its own static runtime, a static __global__ kernel.
add_library(sharing_vector_add SHARED ${_hs}/vector_add.cu)
target_include_directories(sharing_vector_add PUBLIC ${_hs} ${CUDAToolkit_INCLUDE_DIRS})
target_compile_options(sharing_vector_add PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Werror>)
target_link_options(sharing_vector_add PRIVATE ${_hs_link_options})
set_target_properties(sharing_vector_add PROPERTIES OUTPUT_NAME vector_add LIBRARY_OUTPUT_DIRECTORY ${_hs_bin}
  CUDA_RUNTIME_LIBRARY Static CUDA_VISIBILITY_PRESET hidden)

# libcommon: plain C, cudyn only.
add_library(sharing_common SHARED ${_hs}/common.c)
target_link_libraries(sharing_common PUBLIC cudyn::cudyn)
target_include_directories(sharing_common PUBLIC ${_hs})
target_compile_options(sharing_common PRIVATE ${CUDYN_C_WARNINGS})
target_link_options(sharing_common PRIVATE LINKER:-z,defs)
set_target_properties(sharing_common PROPERTIES OUTPUT_NAME common LIBRARY_OUTPUT_DIRECTORY ${_hs_bin}
  C_STANDARD 99 C_STANDARD_REQUIRED ON C_VISIBILITY_PRESET hidden)

# The program: takes both handles, has libcommon launch each through both APIs, checks them.
# Its own static runtime is for memory only.
add_executable(sharing_test ${_hs}/sharing.c)
target_link_libraries(sharing_test PRIVATE sharing_matrix_mul sharing_vector_add sharing_common
                      CUDA::cudart_static m)
target_include_directories(sharing_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(sharing_test PRIVATE ${CUDYN_C_WARNINGS})
set_target_properties(sharing_test PROPERTIES OUTPUT_NAME handle_sharing RUNTIME_OUTPUT_DIRECTORY ${_hs_bin}
  C_STANDARD 99 C_STANDARD_REQUIRED ON)

cudyn_add_test(sharing.handles sharing_test)
set_tests_properties(sharing.handles PROPERTIES FAIL_REGULAR_EXPRESSION "WRONG|FAILED")

# CPU checks: libcommon links no CUDA library and has no undefined CUDA symbol; no piece,
# static runtimes included, needs a CUDA library at load time; the two libraries with a static
# runtime export none of it.
add_test(NAME sharing.no_cuda_needed
  COMMAND ${CMAKE_COMMAND}
          "-DFILES=$<TARGET_FILE:sharing_common>;$<TARGET_FILE:sharing_matrix_mul>;$<TARGET_FILE:sharing_vector_add>;$<TARGET_FILE:sharing_test>"
          "-DNO_UNDEF=$<TARGET_FILE:sharing_common>"
          -P ${PROJECT_SOURCE_DIR}/cmake/check_needed.cmake)
add_test(NAME sharing.private_runtimes
  COMMAND ${CMAKE_COMMAND}
          "-DFILES=$<TARGET_FILE:sharing_matrix_mul>;$<TARGET_FILE:sharing_vector_add>"
          "-DEXPORTS=matrix_mul_kernel;vector_add_kernel"
          -P ${_hs}/check_private_runtime.cmake)
