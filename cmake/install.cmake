# Install rules and the CMake package config (included when MQLITE_INSTALL).
#
# A consumer writes
#   find_package(mqlite CONFIG REQUIRED COMPONENTS sqlite)
#   target_link_libraries(app PRIVATE mqlite::sqlite)
# and gets exactly the components it asked for. Each component has its own
# export set (mqlite-<component>-targets.cmake), so a store whose backend
# library is absent on the consumer's machine costs nothing unless requested.
#
# Adding a component (a store, the TCK) is ONE line at the bottom of this file:
#   mqlite_install_component(<name> TARGET <target> INCLUDE_DIR <dir>
#                            [DEPENDENCIES <find_package names>...]
#                            [REQUIRES <mqlite components>...]
#                            [FIND_MODULES <Find*.cmake files>...])
# The call is a no-op when <target> was not built, so it needs no if().
# DEPENDENCIES are the packages the consumer must find for the component's
# targets to link: for a static library, every PRIVATE backend library too
# (it appears as $<LINK_ONLY:...> in the exported interface). FIND_MODULES
# are shipped next to the config for dependencies CMake has no module for
# (e.g. a FindLMDB.cmake).

include(CMakePackageConfigHelpers)

set(MQLITE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/mqlite"
    CACHE STRING "Where mqliteConfig.cmake is installed, relative to the prefix")
mark_as_advanced(MQLITE_INSTALL_CMAKEDIR)

# Every component name mqlite knows, built or not: the config uses it to tell
# "not built in this installation" apart from "no such component".
set(MQLITE_KNOWN_COMPONENTS core sqlite memory lmdb postgres tck open)

set_property(GLOBAL PROPERTY MQLITE_INSTALLED_COMPONENTS "")
set_property(GLOBAL PROPERTY MQLITE_COMPONENT_DEPENDENCY_LINES "")

function(mqlite_install_component name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TARGET;INCLUDE_DIR" "DEPENDENCIES;REQUIRES;FIND_MODULES")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mqlite_install_component(${name}): unexpected ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_TARGET OR NOT arg_INCLUDE_DIR)
    message(FATAL_ERROR "mqlite_install_component(${name}): TARGET and INCLUDE_DIR are required")
  endif()
  if(NOT name IN_LIST MQLITE_KNOWN_COMPONENTS)
    message(FATAL_ERROR "mqlite_install_component(${name}): add '${name}' to "
                        "MQLITE_KNOWN_COMPONENTS in ${CMAKE_CURRENT_LIST_FILE}")
  endif()
  if(NOT TARGET ${arg_TARGET})
    return()  # not built in this configuration (e.g. MQLITE_WITH_LMDB=OFF)
  endif()

  install(TARGETS ${arg_TARGET}
    EXPORT mqlite-${name}-targets
    ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT mqlite_${name}
    LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT mqlite_${name}
    RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT mqlite_${name}
    INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
  # Public headers only: each component keeps them in <component>/include/mqlite/.
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/${arg_INCLUDE_DIR}/"
    DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
    COMPONENT mqlite_${name}
    FILES_MATCHING PATTERN "*.h")
  install(EXPORT mqlite-${name}-targets
    FILE mqlite-${name}-targets.cmake
    NAMESPACE mqlite::
    DESTINATION "${MQLITE_INSTALL_CMAKEDIR}"
    COMPONENT mqlite_${name})
  if(arg_FIND_MODULES)
    install(FILES ${arg_FIND_MODULES}
      DESTINATION "${MQLITE_INSTALL_CMAKEDIR}/modules"
      COMPONENT mqlite_${name})
  endif()

  set_property(GLOBAL APPEND PROPERTY MQLITE_INSTALLED_COMPONENTS ${name})
  list(JOIN arg_DEPENDENCIES " " deps)
  list(JOIN arg_REQUIRES " " requires)
  set_property(GLOBAL APPEND_STRING PROPERTY MQLITE_COMPONENT_DEPENDENCY_LINES
    "set(_mqlite_${name}_dependencies ${deps})\nset(_mqlite_${name}_requires ${requires})\n")
endfunction()

# ---- Components: one line each ----------------------------------------------
# core links Threads::Threads publicly; every other component needs core, which
# the config always loads first.
mqlite_install_component(core     TARGET mqlite_core     INCLUDE_DIR core/include           DEPENDENCIES Threads)
mqlite_install_component(sqlite   TARGET mqlite_sqlite   INCLUDE_DIR stores/sqlite/include  DEPENDENCIES SQLite3)
mqlite_install_component(memory   TARGET mqlite_memory   INCLUDE_DIR stores/memory/include)
mqlite_install_component(tck      TARGET mqlite_tck      INCLUDE_DIR tck/include            DEPENDENCIES GTest Threads)
mqlite_install_component(lmdb     TARGET mqlite_lmdb     INCLUDE_DIR stores/lmdb/include    DEPENDENCIES LMDB FIND_MODULES cmake/FindLMDB.cmake)
mqlite_install_component(postgres TARGET mqlite_postgres INCLUDE_DIR stores/postgres/include DEPENDENCIES PostgreSQL Threads)
# mqlite::open links every store this build has (open/CMakeLists.txt), so the
# config loads those components before it.
mqlite_install_component(open     TARGET mqlite_open     INCLUDE_DIR open/include           REQUIRES ${MQLITE_OPEN_STORES})

# ---- Package config and version ---------------------------------------------
get_property(MQLITE_INSTALLED_COMPONENTS GLOBAL PROPERTY MQLITE_INSTALLED_COMPONENTS)
get_property(MQLITE_COMPONENT_DEPENDENCY_LINES GLOBAL PROPERTY MQLITE_COMPONENT_DEPENDENCY_LINES)
list(JOIN MQLITE_INSTALLED_COMPONENTS ", " MQLITE_INSTALLED_COMPONENTS_TEXT)

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/mqliteConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/mqliteConfig.cmake"
  INSTALL_DESTINATION "${MQLITE_INSTALL_CMAKEDIR}")
# 0.x: a minor bump may break the API, so only the same major.minor matches.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/mqliteConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/mqliteConfig.cmake"
  "${PROJECT_BINARY_DIR}/mqliteConfigVersion.cmake"
  DESTINATION "${MQLITE_INSTALL_CMAKEDIR}"
  COMPONENT mqlite_core)
