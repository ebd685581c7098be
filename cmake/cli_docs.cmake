# cmake -DCLI=<cudyn> -DOUT=<folder> -P cli_docs.cmake
# The cudyn command's manual page and shell completions, printed by the command itself from
# its own argument definitions (`cudyn man`, `cudyn completions SHELL`), for the install.
foreach(v CLI OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "cli_docs.cmake: ${v} is not set")
  endif()
endforeach()
file(MAKE_DIRECTORY "${OUT}")
foreach(pair "man;cudyn.1" "completions;bash;cudyn.bash" "completions;zsh;_cudyn" "completions;fish;cudyn.fish")
  list(POP_BACK pair file)
  execute_process(COMMAND "${CLI}" ${pair} OUTPUT_FILE "${OUT}/${file}.tmp" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cudyn ${pair} failed (${rc})")
  endif()
  file(RENAME "${OUT}/${file}.tmp" "${OUT}/${file}")
endforeach()
