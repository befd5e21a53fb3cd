// The SQLite reference store (SPEC §0, §9, §10).
//
// One SQLite file in WAL mode holds every queue. The store is exclusive: it
// takes an advisory lock on "<canonical path>.lock" and one on the database
// file's inode before SQLite touches the file, so a second open of the same
// file — another process, this process, a symlinked spelling or a hard link —
// fails with DbLocked and changes nothing.
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

// Opens (creating if needed) the store. Every message names the file. A
// refused open changes nothing and leaves no file behind that did not exist
// before. Errors:
//   InvalidArgument        empty path; a directory that does not exist; a path
//                          that is a directory or not a regular file; a file
//                          that is not an SQLite database ("'/x/r.db' is not an
//                          SQLite database": the wrong file, so the caller's
//                          argument, not Corruption); a read-only file system
//                          or a file the process may not write
//   DbLocked               another engine holds the file (any process, any
//                          spelling, hard links included)
//   SchemaVersionMismatch  another schema token, or mqlite_ tables without
//                          mqlite_meta
//   StoreFull              no space left, or the file-size limit (RLIMIT_FSIZE)
//   Corruption             the database is damaged (SQLITE_CORRUPT)
//   Unavailable            transient: out of descriptors or memory, other I/O
//                          errors
// After open, the same mapping applies to every operation; on a full disk
// every write, settles included, is StoreFull until space is freed
// (docs/sqlite-store.md, "Full disk").
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
