// The SQLite reference store (SPEC §0, §9, §10).
//
// One SQLite file in WAL mode holds every queue. The store is exclusive: it
// takes an advisory lock on "<canonical path>.lock" before touching the file,
// so a second open of the same file — another process, this process, or a
// symlinked spelling — fails with DbLocked and changes nothing.
//
// Durability mapping: kNormal → synchronous=NORMAL, kFull → synchronous=FULL
// (both in WAL mode).
#ifndef MQLITE_SQLITE_H_
#define MQLITE_SQLITE_H_

#include <memory>
#include <string>

#include "mqlite/status.h"
#include "mqlite/store.h"
#include "mqlite/types.h"

struct sqlite3;  // from <sqlite3.h>; this header does not include it

namespace mqlite {

class TxContext;

struct SqliteOptions {
  std::string path;  // the database file; created if missing
  Durability durability = Durability::kNormal;
};

// The schema version token this build writes and accepts (SPEC §10).
extern const char* const kSqliteSchemaToken;

// Opens (creating if needed) the store. Errors: InvalidArgument (empty path,
// unusable directory), DbLocked, SchemaVersionMismatch, Corruption,
// Unavailable.
Result<std::unique_ptr<Store>> OpenSqliteStore(const SqliteOptions& options);

// The sqlite3* of a running Tx on a SQLite store (SPEC §8), for the
// application's own tables in the same file. The connection is inside the
// Tx's transaction: run your statements, never BEGIN/COMMIT/ROLLBACK (a
// COMMIT or ROLLBACK is detected and the Tx fails with InvalidArgument), and
// do not keep the pointer after the callback. InvalidArgument if the Tx is
// not on a SQLite store or its callback has returned.
Result<sqlite3*> SqliteHandle(TxContext& tx);

}  // namespace mqlite

#endif  // MQLITE_SQLITE_H_
