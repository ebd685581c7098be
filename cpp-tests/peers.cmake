# Kernels by C++ name and eager preload (src/names.rs, src/preload.rs): the C++ wrapper's calls
# without a GPU (with and without exceptions), then C and C++ on every GPU of the machine
# against an nvcc fatbin of kernels/peers_kernels.cu. Included by cpp-tests/CMakeLists.txt
# after wrapper.cmake (for _wrapper_cxx_target).
add_executable(peers_cpu peers_cpu.cpp)
_wrapper_cxx_target(peers_cpu)
add_test(NAME peers_cpu COMMAND peers_cpu)
add_executable(peers_cpu_noexcept peers_cpu.cpp)
_wrapper_cxx_target(peers_cpu_noexcept)
target_compile_options(peers_cpu_noexcept PRIVATE -fno-exceptions -fno-rtti)
add_test(NAME peers_cpu_noexcept COMMAND peers_cpu_noexcept)
set_tests_properties(peers_cpu peers_cpu_noexcept PROPERTIES PASS_REGULAR_EXPRESSION "PASS")

if(NOT CUDYN_HAVE_NVCC)
  return()
endif()
cudyn_device_code(_peers_fatbin kernels/peers_kernels.cu FATBIN)

add_executable(peers_gpu_c peers_gpu.c)
target_link_libraries(peers_gpu_c PRIVATE cudyn::cudyn CUDA::cudart_static)
target_include_directories(peers_gpu_c PRIVATE ${CUDAToolkit_INCLUDE_DIRS} ${PROJECT_SOURCE_DIR}/c-examples)
set_target_properties(peers_gpu_c PROPERTIES C_STANDARD 99)
target_compile_options(peers_gpu_c PRIVATE ${CUDYN_C_WARNINGS})
add_dependencies(peers_gpu_c device_peers_kernels_FATBIN)
cudyn_add_test(peers.c_name_and_preload peers_gpu_c ${_peers_fatbin})

add_executable(peers_gpu peers_gpu.cpp)
target_link_libraries(peers_gpu PRIVATE cudyn::cudyn CUDA::cudart_static)
target_include_directories(peers_gpu PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
set_target_properties(peers_gpu PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_compile_options(peers_gpu PRIVATE ${CUDYN_C_WARNINGS})
add_dependencies(peers_gpu device_peers_kernels_FATBIN)
cudyn_add_test(peers.cxx_name_and_preload peers_gpu ${_peers_fatbin})
