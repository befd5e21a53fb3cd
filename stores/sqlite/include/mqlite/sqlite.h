// The SQLite reference store: every queue in one SQLite file in WAL mode,
// exclusive to one engine (SPEC §9). Design, open errors, durability and the
// native handle's rules: docs/sqlite-store.md.
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
  Durability durability = Durability::kNormal;  // synchronous=NORMAL / FULL / OFF (kProcessOnly)
  // Inspection (StoreCapabilities::read_only): a read-only WAL reader on an
  // existing mqlite database, taking no lock, so the application that owns
  // it keeps running (and may start meanwhile). Each read sees the last
  // commit. Writes are refused (InvalidArgument); a missing file is
  // NotFound; durability is ignored. docs/sqlite-store.md, "Inspecting".
  bool read_only = false;
};

// The schema version token this build writes and accepts (SPEC §10).
extern const char* const kSqliteSchemaToken;

// Opens (creating if needed) the store. A refused open changes nothing:
// InvalidArgument, DbLocked, SchemaVersionMismatch, StoreFull, Corruption or
// Unavailable, each naming the file (docs/sqlite-store.md, "Opening").
Result<std::unique_ptr<Store>> OpenSqliteStore(const SqliteOptions& options);

// The sqlite3* of a running Tx (SPEC §8), inside the Tx's transaction: never
// BEGIN/COMMIT/ROLLBACK through it, never keep it. InvalidArgument on another
// kind of store or after the callback returned.
Result<sqlite3*> SqliteHandle(TxContext& tx);

}  // namespace mqlite

#endif  // MQLITE_SQLITE_H_
