# mqlite_discover_tests(<target> LABELS <label>... [PREFIX <prefix>] [FILTER <gtest-filter>])
#
# gtest_discover_tests with a full label list. CMake 3.25's
# `gtest_discover_tests(... PROPERTIES LABELS "a;b")` flattens the list and
# keeps only "a", so labels are applied after discovery instead: a small script
# appended to the directory's TEST_INCLUDE_FILES runs right after the discovery
# include and labels every discovered test. Labels: unit, tck, pin, model,
# crash, concurrency, integration, packaging, example, plus the store name.
#
# FILTER (a --gtest_filter expression) registers only the matching tests, so
# one executable can be discovered several times with disjoint filters and a
# different label list for each slice (e.g. the kit's concurrency suite also
# carries `concurrency`). The slices must not overlap: ctest names are unique.
function(mqlite_discover_tests target)
  cmake_parse_arguments(ARG "" "PREFIX;FILTER" "LABELS" ${ARGN})
  # One test list (and label script) per call on the same target.
  get_property(calls TARGET ${target} PROPERTY MQLITE_DISCOVER_CALLS)
  if(NOT calls)
    set(calls 0)
  endif()
  math(EXPR calls "${calls} + 1")
  set_property(TARGET ${target} PROPERTY MQLITE_DISCOVER_CALLS ${calls})
  if(calls EQUAL 1)
    set(slice "${target}")
  else()
    set(slice "${target}_${calls}")
  endif()

  set(list_var "${slice}_TESTS")
  set(filter_args)
  if(DEFINED ARG_FILTER)
    set(filter_args TEST_FILTER "${ARG_FILTER}")
  endif()
  gtest_discover_tests(${target}
    TEST_PREFIX "${ARG_PREFIX}"
    DISCOVERY_TIMEOUT 60
    TEST_LIST ${list_var}
    ${filter_args})
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${slice}_labels.cmake")
  file(WRITE "${script}"
    "if(${list_var})\n"
    "  set_tests_properties(\${${list_var}} PROPERTIES LABELS \"${ARG_LABELS}\")\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()
