# The GPU interop suite (needs nvcc to build its device code and test program).
if(NOT CUDYN_HAVE_NVCC)
  return()
endif()
cudyn_device_code(INTEROP_FATBIN kernels/interop_kernels.cu FATBIN)
cudyn_device_code(INTEROP_CUBIN kernels/interop_kernels.cu CUBIN ARCH 90)
cudyn_device_code(INTEROP_CUBIN100A kernels/interop_kernels.cu CUBIN ARCH 100a)
cudyn_device_code(INTEROP_PTX kernels/interop_kernels.cu PTX)

add_executable(interop interop.cu)
target_link_libraries(interop PRIVATE cudyn::cudyn CUDA::cudart_static)
target_include_directories(interop PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
set_target_properties(interop PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
target_compile_definitions(interop PRIVATE
  FATBIN_PATH="${INTEROP_FATBIN}" CUBIN_PATH="${INTEROP_CUBIN}"
  CUBIN_OTHER_ARCH_PATH="${INTEROP_CUBIN100A}" PTX_PATH="${INTEROP_PTX}")

foreach(case runtime_load_driver_launch driver_load_runtime_launch same_api_both_ways
             both_launches_one_stream foreign_handles handle_identity enumeration_and_params
             argument_mismatch cluster_launch cooperative_launch library_global contexts two_gpus
             bad_images wrong_arch use_after_unload files_ptx_attributes cuda_errors)
  cudyn_add_test(interop.${case} interop ${case})
endforeach()

# Compile + link + load on the GPU (NVRTC and nvJitLink through cudyn).
add_executable(compile_gpu compile_gpu.cpp)
target_link_libraries(compile_gpu PRIVATE cudyn::cudyn CUDA::cudart_static)
target_include_directories(compile_gpu PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
set_target_properties(compile_gpu PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
foreach(case lto_link_and_launch load_source_each_api ptx_from_nvrtc)
  cudyn_add_test(compile.${case} compile_gpu ${case})
endforeach()

# Concurrency soak: 16 threads x 1000 iterations (a shorter run under compute-sanitizer).
add_executable(stress stress.cpp)
target_link_libraries(stress PRIVATE cudyn::cudyn CUDA::cudart_static)
target_include_directories(stress PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
set_target_properties(stress PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
cudyn_add_test(stress.16x1000 stress 16 1000)

# Hostile images: 10,000 mutants through cudyn (both APIs); the raw comparison runs by hand
# (mutants <cubin> <fatbin> 10000 --raw), it takes minutes and crashes on purpose.
add_executable(mutants mutants.cpp)
target_link_libraries(mutants PRIVATE cudyn::cudyn CUDA::cudart_static)
target_include_directories(mutants PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
set_target_properties(mutants PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
cudyn_add_test(hostile.mutants_10000 mutants ${INTEROP_CUBIN} ${INTEROP_FATBIN} 10000)
# The same 10,000 mutants through cudyn's checks alone: runs everywhere, no GPU needed.
add_test(NAME hostile.mutants_validate COMMAND mutants ${INTEROP_CUBIN} ${INTEROP_FATBIN} 10000 --validate-only)
