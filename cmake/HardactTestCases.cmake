# Run by ctest (via the TEST_INCLUDE_FILES hardact_discover_tests registers): lists the GoogleTest
# cases of one executable and adds them as tests, named PREFIX + Suite.Case exactly as
# --gtest_filter spells it (typed and parameterized suites keep their "/float" or "/0"), so
# `ctest -R` takes the same names as the test program. Up to `cases_per_entry` consecutive cases,
# of one suite or of several, share an entry run by one process, named
# PREFIX + SuiteA.Case1:Case2:SuiteB.Case3:... (each suite named where its cases start): every
# device test process creates a CUDA context, and the driver creates them one at a time (0.3 s
# alone, 3.3 s each when 16 start at once on the H100; issue 19). Inputs: executable, prefix,
# properties, cases_per_entry, case_cost (tenths of a second one case takes in a parallel run; an
# entry's COST is its cases times that, so ctest starts the longest entries first) and
# serial_cases: a regular expression; the Suite.Case names it matches get an entry each, which
# holds the RESOURCE_LOCK hardact_large_case (one such entry at a time) and starts first. Listing
# happens whenever ctest reads the test list (a few milliseconds per executable), so the entries
# always match the program that will run.
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
if(NOT case_cost GREATER 0)
  set(case_cost 1)
endif()
set(suite "")
set(entry_name "")    # the pending entry's name after the prefix
set(entry_filter "")  # its --gtest_filter
set(entry_suite "")   # the suite of its last case
set(entry_size 0)
set(count 0)
# Adds the pending entry.
macro(hardact_add_entry)
  if(entry_size GREATER 0)
    math(EXPR entry_cost "${entry_size} * ${case_cost}")
    add_test("${prefix}${entry_name}" "${executable}" "--gtest_filter=${entry_filter}")
    set_tests_properties("${prefix}${entry_name}" PROPERTIES ${properties} COST ${entry_cost})
    if(entry_serial)
      # One at a time, beside the other entries, and started first (the highest COST).
      set_tests_properties("${prefix}${entry_name}" PROPERTIES RESOURCE_LOCK hardact_large_case COST 1000000)
    endif()
    set(entry_name "")
    set(entry_filter "")
    set(entry_suite "")
    set(entry_size 0)
  endif()
  set(entry_serial FALSE)
endmacro()
set(entry_serial FALSE)
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
      hardact_add_entry()
    endif()
    if(entry_size GREATER 0)
      string(APPEND entry_filter ":")
      string(APPEND entry_name ":")
    endif()
    string(APPEND entry_filter "${suite}.${case_name}")
    if(suite STREQUAL entry_suite)
      string(APPEND entry_name "${case_name}")
    else()
      string(APPEND entry_name "${suite}.${case_name}")
    endif()
    set(entry_suite "${suite}")
    math(EXPR entry_size "${entry_size} + 1")
    math(EXPR count "${count} + 1")
    if(serial)
      set(entry_serial TRUE)
      hardact_add_entry()
    endif()
  elseif(line MATCHES "^([^ ]+)\\.$")
    set(suite "${CMAKE_MATCH_1}")
  endif()
endforeach()
hardact_add_entry()
if(count EQUAL 0)
  message(FATAL_ERROR "hardact: '${executable} --gtest_list_tests' listed no test cases:\n${listing}")
endif()
