# Warning flags for hardact's own targets (tests, bench, examples): -Wall -Wextra on host and
# device code, as errors when HARDACT_WARNINGS_AS_ERRORS is ON.
option(HARDACT_WARNINGS_AS_ERRORS "Treat warnings in hardact's own targets as errors" ON)

function(hardact_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Wreorder>
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
  if(HARDACT_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>
      $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
