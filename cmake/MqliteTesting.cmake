# mqlite_discover_tests(<target> LABELS <label>... [PREFIX <prefix>])
#
# gtest_discover_tests with a full label list. CMake 3.25's
# `gtest_discover_tests(... PROPERTIES LABELS "a;b")` flattens the list and
# keeps only "a", so labels are applied after discovery instead: a small script
# appended to the directory's TEST_INCLUDE_FILES runs right after the discovery
# include and labels every discovered test. Labels: unit, pin, model, crash,
# concurrency, integration, packaging, example, plus the store name.
function(mqlite_discover_tests target)
  cmake_parse_arguments(ARG "" "PREFIX" "LABELS" ${ARGN})
  set(list_var "${target}_TESTS")
  gtest_discover_tests(${target}
    TEST_PREFIX "${ARG_PREFIX}"
    DISCOVERY_TIMEOUT 60
    TEST_LIST ${list_var})
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake")
  file(WRITE "${script}"
    "if(${list_var})\n"
    "  set_tests_properties(\${${list_var}} PROPERTIES LABELS \"${ARG_LABELS}\")\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()
