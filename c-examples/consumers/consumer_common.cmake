# Shared by the outside projects that add cudyn's source tree (add_subdirectory, FetchContent):
# the consumer program, linked with cudyn::cudyn or cudyn::cudyn_static (CONSUMER_LINK), and a
# check that cudyn, not being the top-level project, built none of its own tests.
set(CONSUMER_LINK shared CACHE STRING "link cudyn::cudyn (shared) or cudyn::cudyn_static (static)")
if(CUDYN_BUILD_TESTS OR TARGET versions)
  message(FATAL_ERROR "cudyn built its test suite as a subproject: CUDYN_BUILD_TESTS should follow PROJECT_IS_TOP_LEVEL")
endif()
if(NOT TARGET cudyn::cudyn OR NOT TARGET cudyn::cudyn_static)
  message(FATAL_ERROR "cudyn::cudyn and cudyn::cudyn_static should exist after adding cudyn")
endif()
add_executable(consumer ${CMAKE_CURRENT_LIST_DIR}/main.c)
if(CONSUMER_LINK STREQUAL "static")
  target_link_libraries(consumer PRIVATE cudyn::cudyn_static)
else()
  target_link_libraries(consumer PRIVATE cudyn::cudyn)
endif()
target_compile_definitions(consumer PRIVATE "CONSUMER_HOW=\"${CONSUMER_HOW} (${CONSUMER_LINK})\"")
target_compile_options(consumer PRIVATE -Wall -Wextra -Werror)
