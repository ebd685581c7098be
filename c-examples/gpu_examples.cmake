# Examples that load device code; built where nvcc (and so the CUDA headers and runtime) is.
if(NOT CUDYN_HAVE_NVCC)
  return()
endif()
# build/c-examples/device/example_kernels.fatbin: scripts/demo.sh passes it to the examples.
cudyn_device_code(_fatbin ${PROJECT_SOURCE_DIR}/cpp-tests/kernels/interop_kernels.cu FATBIN NAME example_kernels)

foreach(ex load_and_launch interop_cast saxpy_nvrtc cub_reduce)
  add_executable(${ex} ${ex}.c)
  target_link_libraries(${ex} PRIVATE cudyn::cudyn CUDA::cudart_static)
  target_include_directories(${ex} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  set_target_properties(${ex} PROPERTIES C_STANDARD 99)
  target_compile_options(${ex} PRIVATE -Wall -Wextra -Werror)
endforeach()
cudyn_add_test(example.load_and_launch load_and_launch ${_fatbin})
cudyn_add_test(example.interop_cast interop_cast ${_fatbin})
cudyn_add_test(example.saxpy_nvrtc saxpy_nvrtc)
cudyn_add_test(example.cub_reduce cub_reduce)
