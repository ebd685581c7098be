# Examples that load device code; built where nvcc (and so the CUDA headers and runtime) is.
if(NOT CUDYN_HAVE_NVCC)
  return()
endif()
set(_kernels ${PROJECT_SOURCE_DIR}/cpp-tests/kernels/interop_kernels.cu)
set(_fatbin ${CMAKE_CURRENT_BINARY_DIR}/device/example_kernels.fatbin)
set(_gencode)
foreach(a ${CUDYN_TEST_ARCHS})
  list(APPEND _gencode -gencode arch=compute_${a},code=sm_${a})
endforeach()
add_custom_command(OUTPUT ${_fatbin}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/device
  COMMAND ${CMAKE_CUDA_COMPILER} -fatbin ${_gencode} -o ${_fatbin} ${_kernels}
  DEPENDS ${_kernels} VERBATIM)
add_custom_target(example_fatbin ALL DEPENDS ${_fatbin})

foreach(ex load_and_launch interop_cast saxpy_nvrtc)
  add_executable(${ex} ${ex}.c)
  target_link_libraries(${ex} PRIVATE cudyn::cudyn CUDA::cudart_static)
  target_include_directories(${ex} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  set_target_properties(${ex} PROPERTIES C_STANDARD 99)
  target_compile_options(${ex} PRIVATE -Wall -Wextra -Werror)
endforeach()
cudyn_add_test(example.load_and_launch load_and_launch ${_fatbin})
cudyn_add_test(example.interop_cast interop_cast ${_fatbin})
cudyn_add_test(example.saxpy_nvrtc saxpy_nvrtc)
