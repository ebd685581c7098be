# The surface suite (issue 23): contexts, launch attributes, occupancy, JIT options, interop.
# Needs nvcc for its device code and test program (cudyn_gpu_program comes from interop.cmake).
if(NOT CUDYN_HAVE_NVCC)
  return()
endif()
cudyn_device_code(SURFACE_FATBIN kernels/surface_kernels.cu FATBIN)
cudyn_device_code(SURFACE_PTX kernels/surface_kernels.cu PTX)
cudyn_gpu_program(surface_gpu surface_gpu.cu)
target_compile_definitions(surface_gpu PRIVATE FATBIN_PATH="${SURFACE_FATBIN}" PTX_PATH="${SURFACE_PTX}")
foreach(case contexts launch_attributes occupancy jit_options interop)
  cudyn_add_test(surface.${case} surface_gpu ${case})
endforeach()
# The contexts case reads device 0's primary-context state, which another test's process on
# the same GPU does not change, but a context this process's runtime made would: it runs alone.
set_tests_properties(surface.contexts PROPERTIES RUN_SERIAL TRUE)

# The same program with the shared runtime, so that cudaGetKernel through cudyn (which opens the
# shared libcudart) knows the program's kernels.
add_executable(surface_gpu_shared_rt surface_gpu.cu)
target_link_libraries(surface_gpu_shared_rt PRIVATE cudyn::cudyn CUDA::cudart)
target_include_directories(surface_gpu_shared_rt PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
# The toolkit's library folder on the run path: the program must start (and skip) where the
# loader would not find libcudart.so.13 by itself.
set_target_properties(surface_gpu_shared_rt PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CUDA_STANDARD 17
                                                       CUDA_STANDARD_REQUIRED ON CUDA_RUNTIME_LIBRARY Shared
                                                       BUILD_RPATH "${CUDAToolkit_LIBRARY_DIR}")
target_compile_definitions(surface_gpu_shared_rt PRIVATE FATBIN_PATH="${SURFACE_FATBIN}" PTX_PATH="${SURFACE_PTX}")
cudyn_add_test(surface.kernel_of_shared surface_gpu_shared_rt kernel_of_shared)
