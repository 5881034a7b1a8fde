# Run by ctest (via the TEST_INCLUDE_FILES hardact_discover_tests registers): lists the GoogleTest
# cases of one executable and adds them as tests, named PREFIX + Suite.Case exactly as
# --gtest_filter spells it (typed and parameterized suites keep their "/float" or "/0"), so
# `ctest -R` takes the same names as the test program. Up to `cases_per_entry` consecutive cases
# of one suite share an entry, named PREFIX + Suite.CaseA:CaseB:... and run by one process: every
# device test process creates a CUDA context, and the driver creates them one at a time (0.3 s
# alone, 3.3 s each when 16 start at once on the H100; issue 19). Inputs: executable, prefix,
# properties, cases_per_entry, and serial_cases: a regular expression; the Suite.Case names it
# matches are RUN_SERIAL, one case per entry. Listing happens whenever ctest reads the test list
# (a few milliseconds per executable), so the entries always match the program that will run.
if(NOT EXISTS "${executable}")
  # Not built (e.g. only some targets were built): one entry that fails and says so.
  add_test("${prefix}NOT_BUILT" "${executable}")
  set_tests_properties("${prefix}NOT_BUILT" PROPERTIES ${properties})
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
set(suite "")
set(group "")  # the pending entry's cases, of `suite`
set(count 0)
# Adds the pending entry. Entries of several cases cost more: ctest starts them first.
macro(hardact_add_case_group)
  list(LENGTH group group_size)
  if(group_size GREATER 0)
    list(JOIN group ":" joined_cases)
    list(TRANSFORM group PREPEND "${suite}." OUTPUT_VARIABLE group_filter)
    list(JOIN group_filter ":" group_filter)
    add_test("${prefix}${suite}.${joined_cases}" "${executable}" "--gtest_filter=${group_filter}")
    set_tests_properties("${prefix}${suite}.${joined_cases}" PROPERTIES ${properties} COST ${group_size})
    if(NOT serial_cases STREQUAL "" AND "${suite}.${joined_cases}" MATCHES "${serial_cases}")
      set_tests_properties("${prefix}${suite}.${joined_cases}" PROPERTIES RUN_SERIAL TRUE)
    endif()
    set(group "")
  endif()
endmacro()
foreach(line IN LISTS lines)
  # Drop the "  # TypeParam = ..." / "  # GetParam() = ..." comments GoogleTest appends.
  string(REGEX REPLACE " *#.*$" "" line "${line}")
  if(line MATCHES "^  +([^ ]+)$")
    set(case_name "${CMAKE_MATCH_1}")
    set(limit ${cases_per_entry})
    if(NOT serial_cases STREQUAL "" AND "${suite}.${case_name}" MATCHES "${serial_cases}")
      set(limit 1)
    endif()
    list(LENGTH group group_size)
    if(group_size GREATER_EQUAL limit)
      hardact_add_case_group()
    endif()
    list(APPEND group "${case_name}")
    if(limit EQUAL 1)
      hardact_add_case_group()
    endif()
    math(EXPR count "${count} + 1")
  elseif(line MATCHES "^([^ ]+)\\.$")
    set(next_suite "${CMAKE_MATCH_1}")  # the macro's own MATCHES resets CMAKE_MATCH_1
    hardact_add_case_group()
    set(suite "${next_suite}")
  endif()
endforeach()
hardact_add_case_group()
if(count EQUAL 0)
  message(FATAL_ERROR "hardact: '${executable} --gtest_list_tests' listed no test cases:\n${listing}")
endif()
