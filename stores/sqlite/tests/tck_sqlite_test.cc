// The conformance kit (SPEC §12) on the SQLite reference store: every kit
// suite, instantiated for SqliteTckProfile(), and once more under the rerun
// harness (WithRerun: every rerunnable body runs twice in its transaction,
// the first attempt rolled back through a savepoint). The SQLite-only
// behaviour (symlinked and relative spellings of one file, the schema token,
// the sqlite3* misuse, real processes) is tested beside this file.
#include "mqlite/tck.h"
#include "sqlite_profile.h"

mqlite::tck::StoreProfile SqliteProfile() { return mqlite::tck::SqliteTckProfile(); }
mqlite::tck::StoreProfile SqliteRerunProfile() {
  return mqlite::tck::WithRerun(mqlite::tck::SqliteTckProfile());
}

MQLITE_TCK_INSTANTIATE(Sqlite, SqliteProfile);
MQLITE_TCK_INSTANTIATE(SqliteRerun, SqliteRerunProfile);
