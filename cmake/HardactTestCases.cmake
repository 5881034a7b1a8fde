# Run by ctest (via the TEST_INCLUDE_FILES hardact_discover_tests registers): lists the GoogleTest
# cases of one executable and adds each as its own test, named PREFIX + Suite.Case exactly as
# --gtest_filter spells it (typed and parameterized suites keep their "/float" or "/0"), so
# `ctest -R` takes the same names as the test program. Inputs: executable, prefix, properties, and
# serial_cases: a regular expression; the Suite.Case names it matches are RUN_SERIAL.
# Listing happens whenever ctest reads the test list (a few milliseconds per executable), so the
# entries always match the program that will run.
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
set(suite "")
set(count 0)
foreach(line IN LISTS lines)
  # Drop the "  # TypeParam = ..." / "  # GetParam() = ..." comments GoogleTest appends.
  string(REGEX REPLACE " *#.*$" "" line "${line}")
  if(line MATCHES "^  +([^ ]+)$")
    set(name "${suite}.${CMAKE_MATCH_1}")
    add_test("${prefix}${name}" "${executable}" "--gtest_filter=${name}")
    set_tests_properties("${prefix}${name}" PROPERTIES ${properties})
    if(NOT serial_cases STREQUAL "" AND name MATCHES "${serial_cases}")
      set_tests_properties("${prefix}${name}" PROPERTIES RUN_SERIAL TRUE)
    endif()
    math(EXPR count "${count} + 1")
  elseif(line MATCHES "^([^ ]+)\\.$")
    set(suite "${CMAKE_MATCH_1}")
  endif()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "hardact: '${executable} --gtest_list_tests' listed no test cases:\n${listing}")
endif()
