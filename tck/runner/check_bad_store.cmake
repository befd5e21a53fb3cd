cmake_minimum_required(VERSION 3.25)
# Runs `mqlite-tck --store ${STORE} ${EXTRA}` (EXTRA: optional further
# arguments, separated by '|') and fails unless it exits with exactly 2 (usage), says
# why on stderr (the line must contain ${EXPECT}) and ran no test (no "tests
# for store" progress header on stdout).
string(REPLACE "|" ";" EXTRA "${EXTRA}")
execute_process(COMMAND ${RUNNER} --store ${STORE} ${EXTRA}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc STREQUAL "2")
  message(FATAL_ERROR "mqlite-tck --store ${STORE}: exit '${rc}', want 2\nstdout:\n${out}\nstderr:\n${err}")
endif()
string(FIND "${err}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "mqlite-tck --store ${STORE}: stderr lacks '${EXPECT}':\n${err}")
endif()
string(FIND "${out}" "tests for store" ran)
if(NOT ran EQUAL -1)
  message(FATAL_ERROR "mqlite-tck --store ${STORE}: tests ran before the usage error:\n${out}")
endif()
message(STATUS "exit 2: ${err}")
