# cmake -DOBJCOPY=<objcopy> -DINPUT=<file> -DOUTPUT=<file> [-DDEBUG_OUT=<file>] -P strip_debug.cmake
# The shipped copy of a library or program: INPUT without its debug info (symbols kept, so
# backtraces still name functions). With DEBUG_OUT, the debug info goes there and OUTPUT records
# it by name (.gnu_debuglink; gdb looks for it in a .debug folder beside OUTPUT). Run by the
# build (CudynCargo.cmake); the unstripped files stay in the build tree.
foreach(v OBJCOPY INPUT OUTPUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "strip_debug.cmake: ${v} is not set")
  endif()
endforeach()
get_filename_component(_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${_dir}")
set(_link)
if(DEBUG_OUT)
  get_filename_component(_ddir "${DEBUG_OUT}" DIRECTORY)
  file(MAKE_DIRECTORY "${_ddir}")
  execute_process(COMMAND ${OBJCOPY} --only-keep-debug "${INPUT}" "${DEBUG_OUT}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "objcopy --only-keep-debug ${INPUT} failed (${rc})")
  endif()
  set(_link "--add-gnu-debuglink=${DEBUG_OUT}")
endif()
execute_process(COMMAND ${OBJCOPY} --strip-debug ${_link} "${INPUT}" "${OUTPUT}.tmp" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "objcopy --strip-debug ${INPUT} failed (${rc})")
endif()
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
