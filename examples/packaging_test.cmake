# Driver for the packaging tests in examples/CMakeLists.txt (cmake -P).
#
#   MODE=install         fresh `cmake --install BUILD_DIR --prefix PREFIX`
#   MODE=build_consumer  fresh configure + build of examples/consumer against
#                        PREFIX only, then check that mqlite was found there
#
# Each run starts from an empty directory so that a stale install or a cached
# mqlite_DIR can never make a broken package look fine.
cmake_minimum_required(VERSION 3.25)

foreach(var MODE CMAKE_COMMAND_PATH PREFIX)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "packaging_test.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run_checked)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "packaging: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "packaging: command failed (${rc}): ${shown}")
  endif()
endfunction()

set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()

if(MODE STREQUAL "install")
  file(REMOVE_RECURSE "${PREFIX}")
  run_checked("${CMAKE_COMMAND_PATH}" --install "${BUILD_DIR}" --prefix "${PREFIX}" ${config_args})
  foreach(f
      include/mqlite/status.h include/mqlite/clock.h include/mqlite/types.h
      include/mqlite/store.h include/mqlite/engine.h include/mqlite/sqlite.h
      include/mqlite/open.h)
    if(NOT EXISTS "${PREFIX}/${f}")
      message(FATAL_ERROR "packaging: ${PREFIX}/${f} was not installed")
    endif()
  endforeach()
  file(GLOB_RECURSE config_files "${PREFIX}/*/mqliteConfig.cmake")
  if(NOT config_files)
    message(FATAL_ERROR "packaging: no mqliteConfig.cmake under ${PREFIX}")
  endif()
  message(STATUS "packaging: installed into ${PREFIX}")

elseif(MODE STREQUAL "build_consumer")
  file(REMOVE_RECURSE "${BINARY_DIR}")
  set(configure_args
    -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -G Ninja
    "-DCMAKE_PREFIX_PATH=${PREFIX}"
    # Only the private prefix may satisfy find_package(mqlite).
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
  if(CONFIG)
    list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${CONFIG}")
  endif()
  if(MAKE_PROGRAM)
    list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
  endif()
  if(CXX_COMPILER)
    list(APPEND configure_args "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
  endif()
  if(C_COMPILER)
    list(APPEND configure_args "-DCMAKE_C_COMPILER=${C_COMPILER}")
  endif()
  if(CXX_FLAGS)
    list(APPEND configure_args "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
  endif()
  if(EXE_LINKER_FLAGS)
    list(APPEND configure_args "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}")
  endif()
  run_checked("${CMAKE_COMMAND_PATH}" ${configure_args})
  run_checked("${CMAKE_COMMAND_PATH}" --build "${BINARY_DIR}" ${config_args})

  # The package must have come from PREFIX, not from a system-wide install.
  file(STRINGS "${BINARY_DIR}/CMakeCache.txt" mqlite_dir_line REGEX "^mqlite_DIR:")
  string(REGEX REPLACE "^mqlite_DIR:[A-Z]+=" "" mqlite_dir "${mqlite_dir_line}")
  file(REAL_PATH "${PREFIX}" real_prefix)
  file(REAL_PATH "${mqlite_dir}" real_mqlite_dir)
  string(FIND "${real_mqlite_dir}/" "${real_prefix}/" at)
  if(NOT at EQUAL 0)
    message(FATAL_ERROR "packaging: mqlite was found at '${mqlite_dir}', not under '${PREFIX}'")
  endif()
  if(NOT EXECUTABLE)
    set(EXECUTABLE mqlite_consumer)
  endif()
  if(NOT EXISTS "${BINARY_DIR}/${EXECUTABLE}")
    message(FATAL_ERROR "packaging: ${BINARY_DIR}/${EXECUTABLE} was not built")
  endif()
  message(STATUS "packaging: consumer built against ${mqlite_dir}")

else()
  message(FATAL_ERROR "packaging_test.cmake: unknown MODE '${MODE}'")
endif()
