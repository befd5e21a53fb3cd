// The LMDB store: every queue in one LMDB environment (a directory holding
// data.mdb and lock.mdb), exclusive to one engine (SPEC §9). Key layout,
// durability mapping, map sizing and the MDB_txn* rules: docs/lmdb-store.md.
#ifndef MQLITE_LMDB_H_
#define MQLITE_LMDB_H_

#include <cstdint>
#include <memory>
#include <string>

#include "mqlite/status.h"
#include "mqlite/store.h"
#include "mqlite/types.h"

typedef struct MDB_txn MDB_txn;  // from <lmdb.h>; this header does not include it

namespace mqlite {

class TxContext;

struct LmdbOptions {
  std::string dir;  // the environment's directory; created if missing (its parent must exist)
  Durability durability = Durability::kNormal;  // MDB_NOMETASYNC; kFull: sync; kProcessOnly: MDB_NOSYNC
  int64_t initial_map_bytes = int64_t{64} << 20;  // grown by doubling on MDB_MAP_FULL ...
  int64_t max_map_bytes = int64_t{64} << 30;      // ... up to this cap; then StoreFull
  // Inspection (StoreCapabilities::read_only): MDB_RDONLY on an existing
  // mqlite environment, taking no lock, so the application that owns it
  // keeps running (and may start meanwhile); each read is a fresh read
  // transaction, so it sees the last commit, and follows the owner's map
  // growth. Writes are refused (InvalidArgument); a missing environment is
  // NotFound; durability and map sizes are ignored. lock.mdb must be
  // writable (LMDB registers readers there). docs/lmdb-store.md, "Inspecting".
  bool read_only = false;
};

extern const char* const kLmdbSchemaToken;  // written and accepted by this build (SPEC §10)

// Opens (creating if needed) the store. A refused open changes nothing:
// InvalidArgument, DbLocked, SchemaVersionMismatch, StoreFull, Corruption or
// Unavailable, each naming the directory.
Result<std::unique_ptr<Store>> OpenLmdbStore(const LmdbOptions& options);

// The MDB_txn* of a running Tx (SPEC §8); never commit, abort or keep it.
Result<MDB_txn*> LmdbHandle(TxContext& tx);

}  // namespace mqlite

#endif  // MQLITE_LMDB_H_
