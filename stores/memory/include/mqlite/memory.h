// The in-memory store (SPEC §1, §12): every queue in ordered maps and
// hand-built indexes inside this process, no external dependency. State lives
// as long as its MemoryDatabase and dies with the process (crash model
// "none"). Durability options do not apply.
//
// Capabilities: exclusive, native handle "mqlite::MemoryTxn", name "memory".
#ifndef MQLITE_MEMORY_H_
#define MQLITE_MEMORY_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "mqlite/status.h"
#include "mqlite/store.h"

namespace mqlite {

class TxContext;

// The data: queues, messages, idempotency records, application tables. Opaque;
// shared by the stores opened on it one after another (a "reopen" sees every
// commit of the previous store). Thread-safe to hold from many threads.
class MemoryDatabase;
std::shared_ptr<MemoryDatabase> NewMemoryDatabase();

// Opens a store on `db`. Exclusive like an embedded store (SPEC §9): while a
// Store from this database is open, another OpenMemoryStore on it fails with
// DbLocked and touches nothing. InvalidArgument if `db` is null.
Result<std::unique_ptr<Store>> OpenMemoryStore(std::shared_ptr<MemoryDatabase> db);

// SPEC §8 native handle: the application's own named tables (byte-string
// keys and values) inside the same transaction as the queue operations of a
// Tx. Writes commit or roll back with the Tx; there is no way to commit
// through it. Valid only during the Tx callback, on its thread: later calls
// return InvalidArgument. Errors: InvalidArgument for an empty table name.
class MemoryTxn {
 public:
  virtual ~MemoryTxn() = default;
  virtual Status Put(std::string_view table, std::string_view key, std::string_view value) = 0;
  // nullopt when absent.
  virtual Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) = 0;
  // Deleting an absent key is OK.
  virtual Status Delete(std::string_view table, std::string_view key) = 0;
};

// The MemoryTxn of a running Tx (TxContext::native_handle() on a memory
// store). InvalidArgument outside its callback or on another kind of store.
Result<MemoryTxn*> MemoryHandle(TxContext& tx);

}  // namespace mqlite

#endif  // MQLITE_MEMORY_H_
