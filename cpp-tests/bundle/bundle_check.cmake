# bundle.relocated: the program, its bundle, its source and header copied to a fresh folder
# (another path than the build's), run with an empty cache: a hit, no NVRTC; then without the
# bundle: a compile. Arguments: APP, BUNDLE, SRC (the source folder), WORK.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/app" "${WORK}/share/include")
get_filename_component(_name "${APP}" NAME)
file(COPY "${APP}" DESTINATION "${WORK}/app")
file(COPY_FILE "${BUNDLE}" "${WORK}/app/${_name}.cudyn-bundle")
file(COPY "${SRC}/kernel.cu" DESTINATION "${WORK}/share")
file(COPY "${SRC}/include/bundle_values.h" DESTINATION "${WORK}/share/include")
foreach(_case hit compiled)
  file(REMOVE_RECURSE "${WORK}/cache")
  if(_case STREQUAL "compiled")
    file(REMOVE "${WORK}/app/${_name}.cudyn-bundle")
  endif()
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env CUDYN_CACHE_DIR=${WORK}/cache --unset=CUDYN_CACHE_LAYERS
            "LSAN_OPTIONS=suppressions=${SRC}/lsan-nvrtc.supp"
            "${WORK}/app/${_name}" "${WORK}/share/kernel.cu" "${WORK}/share/include" ${_case}
    WORKING_DIRECTORY "${WORK}"
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  message(STATUS "${_case}: ${_out}${_err}")
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "bundle_app (${_case}) failed (${_rc}):\n${_out}${_err}")
  endif()
  if(NOT _out MATCHES "bundle_app: ${_case} ")
    message(FATAL_ERROR "bundle_app: expected '${_case}':\n${_out}${_err}")
  endif()
endforeach()
