# Build the crate with cargo and record what its static archive needs from the system.
# Script mode (cmake -P), run by the build (CudynCargo.cmake):
#   -DCARGO=... -DPROFILE=... -DMANIFEST=... -DTARGET_DIR=... -DOUT=<cargo's profile folder>
#   -DLINK_DIR=<folder for the laid-out libraries> [-DFEATURES=<cargo features, ";"-separated>]
#
# The list comes from rustc itself (`--print=native-static-libs`), never from a hard-coded
# list: rustc prints it only when it links the crate, so it is kept next to the archive
# (OUT/cudyn-native-static-libs.txt) for builds cargo finds fresh. LINK_DIR receives it as a
# linker response file (native-static-libs.rsp) that cudyn::cudyn_static links with.
foreach(v CARGO PROFILE MANIFEST TARGET_DIR OUT LINK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "cargo_build.cmake: ${v} is not set")
  endif()
endforeach()
set(_record "${OUT}/cudyn-native-static-libs.txt")

function(cudyn_cargo_rustc)
  # FEATURES: dev-header when the tests are built (generate cudyn.h and compile the C layout
  # proofs, which need cbindgen, cc and the CUDA headers); none for a plain install, which ships
  # the committed cudyn.h and so needs none of them.
  set(features)
  if(FEATURES)
    string(REPLACE ";" "," f "${FEATURES}")
    set(features --features ${f})
  endif()
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env CARGO_TARGET_DIR=${TARGET_DIR}
            ${CARGO} rustc --profile ${PROFILE} --lib ${features} --manifest-path ${MANIFEST}
            -- --print=native-static-libs
    ERROR_VARIABLE err
    ECHO_ERROR_VARIABLE  # cargo's progress shows as it goes, not minutes later
    RESULT_VARIABLE rc)
  # cargo writes its progress and rustc's notes to stderr: they were shown; read the note.
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cargo failed (${rc})")
  endif()
  if(err MATCHES "native-static-libs: ([^\n]*)")
    string(STRIP "${CMAKE_MATCH_1}" libs)
    file(WRITE "${_record}" "${libs}\n")
  endif()
endfunction()

cudyn_cargo_rustc()
if(NOT EXISTS "${_record}")
  # cargo found the crate fresh, built by something that did not keep rustc's note (another
  # command, or a target folder from before this script): rebuild cudyn alone to hear it.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env CARGO_TARGET_DIR=${TARGET_DIR}
                          ${CARGO} clean --profile ${PROFILE} -p cudyn --manifest-path ${MANIFEST})
  cudyn_cargo_rustc()
  if(NOT EXISTS "${_record}")
    message(FATAL_ERROR "rustc did not print native-static-libs for libcudyn.a")
  endif()
endif()
file(READ "${_record}" libs)
string(STRIP "${libs}" libs)
file(MAKE_DIRECTORY "${LINK_DIR}")
# ld reads options from @file: one -l per line.
string(REPLACE " " "\n" rsp "${libs}")
file(WRITE "${LINK_DIR}/native-static-libs.rsp.tmp" "${rsp}\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${LINK_DIR}/native-static-libs.rsp.tmp"
                        "${LINK_DIR}/native-static-libs.rsp")
file(REMOVE "${LINK_DIR}/native-static-libs.rsp.tmp")
file(WRITE "${LINK_DIR}/native-static-libs.txt" "${libs}\n")

# Installed files that name the list (cudyn.pc, cudynConfig.cmake): configured once by CMake
# with @CUDYN_NATIVE_STATIC_LIBS@ left in, filled here. FILL is "template>output|...".
if(DEFINED FILL)
  set(CUDYN_NATIVE_STATIC_LIBS "${libs}")           # for the .pc: as rustc printed it
  string(REPLACE " " ";" CUDYN_NATIVE_STATIC_LIBS_LIST "${libs}")  # for CMake
  string(REPLACE "|" ";" pairs "${FILL}")
  foreach(pair IN LISTS pairs)
    string(REPLACE ">" ";" io "${pair}")
    list(GET io 0 in)
    list(GET io 1 out)
    configure_file("${in}" "${out}" @ONLY)
  endforeach()
endif()
