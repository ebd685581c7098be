# ctest tests of the installed or freshly built `cudyn` command (cudyn::cli), included from the
# top-level CMakeLists.txt. They run in the CPU suite (scripts/test.sh) and, from an installed
# prefix, in the GPU suite (scripts/gpu-suite.sh), where CUDYN_REQUIRE_GPU=1 turns "no GPU"
# from a skip into a failure.
set(_cli_check ${CMAKE_CURRENT_LIST_DIR}/cli_check.cmake)

# The compile tools (NVRTC, nvJitLink) are found wherever the suite runs.
add_test(NAME cli.doctor_tools
  COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:cudyn::cli> -DMODE=doctor_tools -P ${_cli_check})
# Everything, GPU included: skipped without a GPU unless CUDYN_REQUIRE_GPU=1.
add_test(NAME cli.doctor
  COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:cudyn::cli> -DMODE=doctor -P ${_cli_check})
set_tests_properties(cli.doctor PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP: ")

if(CUDYN_HAVE_NVCC)
  # A fatbin nvcc built: its entries and kernels, and on a GPU the entry that GPU runs.
  cudyn_device_code(_cli_fatbin ${PROJECT_SOURCE_DIR}/cpp-tests/kernels/interop_kernels.cu FATBIN NAME cli_kernels)
  list(GET CUDYN_TEST_ARCHS 0 _cli_arch)
  add_test(NAME cli.inspect
    COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:cudyn::cli> -DMODE=inspect -DFILE=${_cli_fatbin}
            -DARCH=${_cli_arch} -P ${_cli_check})
  # What inspect reads from the cubin's tables against what CUDA reports for the loaded kernel
  # (registers, static shared and local memory; launch bound >= CUDA's max threads). GPU only.
  cudyn_device_code(_cli_res ${CMAKE_CURRENT_LIST_DIR}/resources_kernels.cu FATBIN NAME cli_resources)
  add_executable(cli_kernel_attributes ${CMAKE_CURRENT_LIST_DIR}/kernel_attributes.c)
  target_link_libraries(cli_kernel_attributes PRIVATE cudyn::cudyn)
  target_compile_options(cli_kernel_attributes PRIVATE ${CUDYN_C_WARNINGS})
  add_test(NAME cli.resources
    COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:cudyn::cli> -DMODE=resources -DFILE=${_cli_res}
            -DATTRS=$<TARGET_FILE:cli_kernel_attributes> -DARCH=${_cli_arch} -P ${_cli_check})
  set_tests_properties(cli.resources PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP: ")
endif()
