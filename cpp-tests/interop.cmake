# The GPU interop suite (needs nvcc to build its device code and test program).
if(NOT CUDYN_HAVE_NVCC)
  return()
endif()
cudyn_device_code(INTEROP_FATBIN kernels/interop_kernels.cu FATBIN)
cudyn_device_code(INTEROP_CUBIN kernels/interop_kernels.cu CUBIN ARCH 90)
cudyn_device_code(INTEROP_CUBIN100A kernels/interop_kernels.cu CUBIN ARCH 100a)
cudyn_device_code(INTEROP_PTX kernels/interop_kernels.cu PTX)
# interop's arch_pick case: plain sm_90 and sm_90a SASS of one source, in either order.
set(ARCH_PICK_SRC ${CMAKE_CURRENT_SOURCE_DIR}/kernels/arch_pick_kernels.cu)
set(ARCH_PICK_PLAIN_FIRST ${CMAKE_CURRENT_BINARY_DIR}/device/arch_pick.sm_90.sm_90a.fatbin)
set(ARCH_PICK_A_FIRST ${CMAKE_CURRENT_BINARY_DIR}/device/arch_pick.sm_90a.sm_90.fatbin)
add_custom_command(OUTPUT ${ARCH_PICK_PLAIN_FIRST} ${ARCH_PICK_A_FIRST}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/device
  COMMAND ${CMAKE_CUDA_COMPILER} -fatbin -gencode arch=compute_90,code=sm_90
          -gencode arch=compute_90a,code=sm_90a -o ${ARCH_PICK_PLAIN_FIRST} ${ARCH_PICK_SRC}
  COMMAND ${CMAKE_CUDA_COMPILER} -fatbin -gencode arch=compute_90a,code=sm_90a
          -gencode arch=compute_90,code=sm_90 -o ${ARCH_PICK_A_FIRST} ${ARCH_PICK_SRC}
  DEPENDS ${ARCH_PICK_SRC}
  COMMENT "nvcc FATBIN arch_pick (sm_90 and sm_90a, both orders)"
  VERBATIM)
add_custom_target(device_arch_pick ALL DEPENDS ${ARCH_PICK_PLAIN_FIRST} ${ARCH_PICK_A_FIRST})

# A C++17 (or CUDA) test program using cudyn and, for device memory, the static CUDA runtime.
function(cudyn_gpu_program name source)
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE cudyn::cudyn CUDA::cudart_static)
  target_include_directories(${name} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  set_target_properties(${name} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
                                           CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
endfunction()

cudyn_gpu_program(interop interop.cu)
target_compile_definitions(interop PRIVATE
  FATBIN_PATH="${INTEROP_FATBIN}" CUBIN_PATH="${INTEROP_CUBIN}"
  CUBIN_OTHER_ARCH_PATH="${INTEROP_CUBIN100A}" PTX_PATH="${INTEROP_PTX}"
  ARCH_PICK_PLAIN_FIRST="${ARCH_PICK_PLAIN_FIRST}" ARCH_PICK_A_FIRST="${ARCH_PICK_A_FIRST}")

foreach(case runtime_load_driver_launch driver_load_runtime_launch same_api_both_ways
             both_launches_one_stream foreign_handles handle_identity enumeration_and_params
             argument_mismatch cluster_launch cooperative_launch library_global contexts two_gpus
             bad_images wrong_arch arch_pick use_after_unload files_ptx_attributes cuda_errors)
  cudyn_add_test(interop.${case} interop ${case})
endforeach()

# Compile + link + load on the GPU (NVRTC and nvJitLink through cudyn).
cudyn_gpu_program(compile_gpu compile_gpu.cpp)
foreach(case lto_link_and_launch load_source_each_api ptx_from_nvrtc)
  cudyn_add_test(compile.${case} compile_gpu ${case})
endforeach()

# Concurrency soak: 16 threads x 1000 iterations (a shorter run under compute-sanitizer).
cudyn_gpu_program(stress stress.cpp)
cudyn_add_test(stress.16x1000 stress 16 1000)
# It bounds the growth of the device's memory in use, which counts every process on the GPU:
# under `ctest -j` another test's context (hundreds of MiB) lands in its figure. It runs alone.
set_tests_properties(stress.16x1000 PROPERTIES RUN_SERIAL TRUE)

# Hostile images: 10,000 mutants through cudyn (both APIs); the raw comparison runs by hand
# (mutants <cubin> <fatbin> 10000 --raw), it takes minutes and crashes on purpose.
cudyn_gpu_program(mutants mutants.cpp)
cudyn_add_test(hostile.mutants_10000 mutants ${INTEROP_CUBIN} ${INTEROP_FATBIN} 10000)
# The same 10,000 mutants through cudyn's checks alone: runs everywhere, no GPU needed.
add_test(NAME hostile.mutants_validate COMMAND mutants ${INTEROP_CUBIN} ${INTEROP_FATBIN} 10000 --validate-only)

# Handles: address reuse by cudyn, raw runtime and raw driver loads with kernels of different
# layouts at one address; use after unload; double unload; 8 threads; stream capture; the
# special streams; queries and launches racing an unload and a reload (3,000 rounds per kind).
cudyn_device_code(HANDLES_TWO kernels/handles_two.cu FATBIN)
cudyn_device_code(HANDLES_FOUR kernels/handles_four.cu FATBIN)
cudyn_gpu_program(handles_gpu handles_gpu.cu)
target_compile_definitions(handles_gpu PRIVATE TWO_PATH="${HANDLES_TWO}" FOUR_PATH="${HANDLES_FOUR}")
foreach(case reuse_by_cudyn_load reuse_by_runtime_load reuse_by_driver_load cudyn_load_after_foreign
             dead_handles eight_threads stream_capture special_streams query_unload_race
             raw_lookups_die_with_the_unload)
  cudyn_add_test(handles.${case} handles_gpu ${case})
endforeach()

# Load options: JIT options and logs, managed variables, globals per device.
cudyn_device_code(LOADOPT_FATBIN kernels/load_options_kernels.cu FATBIN)
cudyn_device_code(LOADOPT_PTX kernels/load_options_kernels.cu PTX)
cudyn_gpu_program(load_options_gpu load_options_gpu.cu)
target_compile_definitions(load_options_gpu PRIVATE FATBIN_PATH="${LOADOPT_FATBIN}" PTX_PATH="${LOADOPT_PTX}")
foreach(case ptx_error_log jit_options managed_variable global_per_device)
  cudyn_add_test(load_options.${case} load_options_gpu ${case})
endforeach()
