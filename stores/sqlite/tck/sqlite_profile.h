// The SQLite store's conformance-kit profile (SPEC §12): what the kit needs
// to run every suite on the SQLite reference store. Used by the store's own
// kit test (stores/sqlite/tests/tck_sqlite_test.cc) and by the kit's runner.
//
//   #include "sqlite_profile.h"   // target mqlite_sqlite_tck
//   mqlite::tck::StoreProfile SqliteProfile() { return mqlite::tck::SqliteTckProfile(); }
//   MQLITE_TCK_INSTANTIATE(Sqlite, SqliteProfile);
#ifndef MQLITE_STORES_SQLITE_TCK_SQLITE_PROFILE_H_
#define MQLITE_STORES_SQLITE_TCK_SQLITE_PROFILE_H_

#include <string>

#include "mqlite/tck.h"
#include "mqlite/types.h"

namespace mqlite::tck {

// name "sqlite"; exclusive; CrashModel::kProcess; business hooks on a table
// tck_business(k BLOB PRIMARY KEY, v BLOB) in the store's own file, through
// the Tx's sqlite3*.
//
// Each fixture is a fresh directory (mkdtemp) under `base_dir` — the system
// temp directory when empty — holding the database "tck.db"; the directory
// and everything in it is removed when the fixture is destroyed. Every open
// uses `durability` (SPEC §10); a level other than normal is in the name
// ("sqlite_full", "sqlite_process_only").
StoreProfile SqliteTckProfile(std::string base_dir = "",
                              Durability durability = Durability::kNormal);

}  // namespace mqlite::tck

#endif  // MQLITE_STORES_SQLITE_TCK_SQLITE_PROFILE_H_
