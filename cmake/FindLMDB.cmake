# FindLMDB: the LMDB library (Debian: liblmdb-dev), which ships no CMake
# package. Defines LMDB_FOUND, LMDB_INCLUDE_DIR, LMDB_LIBRARY, LMDB_VERSION and
# the imported target LMDB::LMDB. Installed with the mqlite `lmdb` component.
find_path(LMDB_INCLUDE_DIR NAMES lmdb.h)
find_library(LMDB_LIBRARY NAMES lmdb)
if(LMDB_INCLUDE_DIR AND EXISTS "${LMDB_INCLUDE_DIR}/lmdb.h")
  file(STRINGS "${LMDB_INCLUDE_DIR}/lmdb.h" _lmdb_version_lines
       REGEX "^#define MDB_VERSION_(MAJOR|MINOR|PATCH)[ \t]+[0-9]+")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*MDB_VERSION_${_part}[ \t]+([0-9]+).*" "\\1" _lmdb_${_part}
           "${_lmdb_version_lines}")
  endforeach()
  set(LMDB_VERSION "${_lmdb_MAJOR}.${_lmdb_MINOR}.${_lmdb_PATCH}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LMDB
  REQUIRED_VARS LMDB_LIBRARY LMDB_INCLUDE_DIR
  VERSION_VAR LMDB_VERSION)
if(LMDB_FOUND AND NOT TARGET LMDB::LMDB)
  add_library(LMDB::LMDB UNKNOWN IMPORTED)
  set_target_properties(LMDB::LMDB PROPERTIES
    IMPORTED_LOCATION "${LMDB_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LMDB_INCLUDE_DIR}")
endif()
mark_as_advanced(LMDB_INCLUDE_DIR LMDB_LIBRARY)
