# Benchmarks: programs that print numbers (not tests). Built with the suite where nvcc is.
if(NOT CUDYN_HAVE_NVCC)
  return()
endif()
add_executable(launch_bench bench/launch_bench.cu)
# Shared cudart: the raw runtime calls and cudyn's then go to one runtime instance.
target_link_libraries(launch_bench PRIVATE cudyn::cudyn CUDA::cudart)
set_target_properties(launch_bench PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
target_include_directories(launch_bench PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
set_target_properties(launch_bench PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
target_compile_options(launch_bench PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-O2>)

# Real-world images: no false refusals, and the first-sight load cost (scripts/gpu-corpus.sh).
add_executable(corpus_load bench/corpus_load.cu)
target_link_libraries(corpus_load PRIVATE cudyn::cudyn CUDA::cudart)
set_target_properties(corpus_load PROPERTIES CUDA_RUNTIME_LIBRARY Shared CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
target_include_directories(corpus_load PRIVATE ${CUDAToolkit_INCLUDE_DIRS})

# A first-sight load taken apart (raw, built image, preserved, JIT logs, kernel list, cudyn).
add_executable(load_cost bench/load_cost.cpp)
target_link_libraries(load_cost PRIVATE cudyn::cudyn CUDA::cudart ${CMAKE_DL_LIBS})
target_include_directories(load_cost PRIVATE ${CUDAToolkit_INCLUDE_DIRS})

# The compile cache against jitify2's (benchmark; jitify2 only with -DCUDYN_JITIFY2_DIR=<folder
# holding jitify2.hpp>, which is not part of cudyn: see docs/performance.md).
add_executable(cache_compare bench/cache_compare.cpp)
target_link_libraries(cache_compare PRIVATE cudyn::cudyn CUDA::cudart ${CMAKE_DL_LIBS})
target_compile_features(cache_compare PRIVATE cxx_std_17)
set(CUDYN_JITIFY2_DIR "" CACHE PATH "folder holding jitify2.hpp, for cache_compare's jitify2 rows")
if(CUDYN_JITIFY2_DIR)
  target_include_directories(cache_compare PRIVATE ${CUDYN_JITIFY2_DIR})
  list(GET CUDAToolkit_INCLUDE_DIRS 0 _cudyn_cuda_inc)  # where cuda_runtime.h and cccl/ are
  target_compile_definitions(cache_compare PRIVATE CUDYN_BENCH_JITIFY2 CUDYN_BENCH_CUDA_INCLUDE="${_cudyn_cuda_inc}")
endif()
