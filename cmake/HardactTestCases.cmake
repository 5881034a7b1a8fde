# Run by ctest (via the TEST_INCLUDE_FILES hardact_discover_tests registers): lists the GoogleTest
# cases of one executable and adds them as entries of up to `cases_per_entry` consecutive cases,
# each run by one process with --gtest_filter=SuiteA.Case1:SuiteA.Case2:SuiteB.Case3 (the filter
# GoogleTest prints first in the entry's output, "Note: Google Test filter = ..."). An entry is
# named after its executable and its share of the cases: NAME[k/n], or NAME when one entry holds
# them all, so names stay short whatever the cases are called; it is labelled `labels` (host or
# device) and with the suites it runs (typed suites without their "/float"), so
# `ctest -L <Suite>` runs the entries that hold a suite. Device test processes share entries
# because every one creates a CUDA context, and the driver creates them one at a time (0.3 s
# alone, 3.3 s each when 16 start at once on the H100).
# Inputs: executable, name, labels, properties (more test properties), cases_per_entry,
# case_cost (tenths of a second one case takes in a parallel run; an entry's COST is its cases
# times that, so ctest starts the longest entries first) and serial_cases: a regular expression;
# the Suite.Case names it matches get an entry each, which holds the RESOURCE_LOCK
# hardact_large_case (one such entry at a time) and starts first. Listing happens whenever ctest
# reads the test list (a few milliseconds per executable), so the entries always match the program
# that will run.
if(NOT EXISTS "${executable}")
  # Not built (e.g. only some targets were built): one entry that fails and says so.
  add_test("${name}[NOT_BUILT]" "${executable}")
  set_tests_properties("${name}[NOT_BUILT]" PROPERTIES LABELS "${labels}" ${properties})
  return()
endif()

execute_process(COMMAND "${executable}" --gtest_list_tests
                OUTPUT_VARIABLE listing ERROR_VARIABLE listing_errors RESULT_VARIABLE listing_status
                TIMEOUT 60)
if(NOT listing_status EQUAL 0)
  message(FATAL_ERROR "hardact: '${executable} --gtest_list_tests' failed (${listing_status}):\n${listing}${listing_errors}")
endif()

string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
if(NOT cases_per_entry GREATER 0)
  set(cases_per_entry 1)
endif()
if(NOT case_cost GREATER 0)
  set(case_cost 1)
endif()

# First the entries, as entry_<i>_filter, entry_<i>_suites, entry_<i>_size and entry_<i>_serial;
# then their names, once their number is known.
set(suite "")
set(entries 0)
set(entry_size 0)
set(count 0)
# Closes the pending entry.
macro(hardact_close_entry)
  if(entry_size GREATER 0)
    set(entry_${entries}_size ${entry_size})
    set(entry_size 0)
  endif()
endmacro()
foreach(line IN LISTS lines)
  # Drop the "  # TypeParam = ..." / "  # GetParam() = ..." comments GoogleTest appends.
  string(REGEX REPLACE " *#.*$" "" line "${line}")
  if(line MATCHES "^  +([^ ]+)$")
    set(case_name "${CMAKE_MATCH_1}")
    set(serial FALSE)
    if(NOT serial_cases STREQUAL "" AND "${suite}.${case_name}" MATCHES "${serial_cases}")
      set(serial TRUE)
    endif()
    if(serial OR entry_size GREATER_EQUAL cases_per_entry)
      hardact_close_entry()
    endif()
    if(entry_size EQUAL 0)
      math(EXPR entries "${entries} + 1")
      set(entry_${entries}_filter "${suite}.${case_name}")
      set(entry_${entries}_suites "")
      set(entry_${entries}_serial ${serial})
    else()
      string(APPEND entry_${entries}_filter ":${suite}.${case_name}")
    endif()
    string(REGEX REPLACE "/.*$" "" suite_label "${suite}")
    # list(FIND), not IN_LIST: ctest reads this file with no policies set.
    list(FIND entry_${entries}_suites "${suite_label}" suite_index)
    if(suite_index EQUAL -1)
      list(APPEND entry_${entries}_suites "${suite_label}")
    endif()
    math(EXPR entry_size "${entry_size} + 1")
    math(EXPR count "${count} + 1")
    if(serial)
      hardact_close_entry()
    endif()
  elseif(line MATCHES "^([^ ]+)\\.$")
    set(suite "${CMAKE_MATCH_1}")
  endif()
endforeach()
hardact_close_entry()
if(count EQUAL 0)
  message(FATAL_ERROR "hardact: '${executable} --gtest_list_tests' listed no test cases:\n${listing}")
endif()

foreach(i RANGE 1 ${entries})
  if(entries EQUAL 1)
    set(entry_name "${name}")
  else()
    set(entry_name "${name}[${i}/${entries}]")
  endif()
  math(EXPR entry_cost "${entry_${i}_size} * ${case_cost}")
  add_test("${entry_name}" "${executable}" "--gtest_filter=${entry_${i}_filter}")
  set_tests_properties("${entry_name}" PROPERTIES ${properties} COST ${entry_cost}
                       LABELS "${labels};${entry_${i}_suites}")
  if(entry_${i}_serial)
    # One at a time, beside the other entries, and started first (the highest COST).
    set_tests_properties("${entry_name}" PROPERTIES RESOURCE_LOCK hardact_large_case COST 1000000)
  endif()
endforeach()
