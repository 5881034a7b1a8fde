# Picks CMAKE_CUDA_ARCHITECTURES before CUDA is enabled: what the user set, else the
# architectures of the GPUs on this machine (via nvidia-smi), else 90 (Hopper, the H100), and then
# remembers that choice in HARDACT_ARCHITECTURES_WITHOUT_GPU.
function(hardact_default_cuda_architectures)
  if(DEFINED CMAKE_CUDA_ARCHITECTURES OR DEFINED ENV{CUDAARCHS})
    return()
  endif()
  set(_architectures "")
  find_program(_hardact_nvidia_smi nvidia-smi)
  if(_hardact_nvidia_smi)
    execute_process(
      COMMAND ${_hardact_nvidia_smi} --query-gpu=compute_cap --format=csv,noheader
      OUTPUT_VARIABLE _capabilities RESULT_VARIABLE _result ERROR_QUIET
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(_result EQUAL 0)
      string(REPLACE "\n" ";" _capabilities "${_capabilities}")
      foreach(_capability IN LISTS _capabilities)
        string(STRIP "${_capability}" _capability)
        if(_capability MATCHES "^([0-9]+)\\.([0-9]+)$")
          list(APPEND _architectures "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
        endif()
      endforeach()
      list(REMOVE_DUPLICATES _architectures)
    endif()
  endif()
  # HARDACT_ARCHITECTURES_WITHOUT_GPU: the architectures chosen when no GPU was found to choose for
  # (the device tests are then built only to prove they compile, see tests/CMakeLists.txt), else empty.
  set(_without_gpu "")
  if(NOT _architectures)
    set(_architectures 90)
    set(_without_gpu 90)
  endif()
  set(HARDACT_ARCHITECTURES_WITHOUT_GPU "${_without_gpu}" CACHE INTERNAL "CUDA architectures chosen with no GPU found")
  message(STATUS "hardact: CUDA architectures ${_architectures} (override with -DCMAKE_CUDA_ARCHITECTURES=...)")
  set(CMAKE_CUDA_ARCHITECTURES "${_architectures}" CACHE STRING "CUDA architectures to build for")
endfunction()
