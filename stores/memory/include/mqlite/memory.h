// The in-memory store: ordered maps in this process, nothing survives it.
// Modes, capabilities, the native handle's rules: stores/memory/README.md.
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
class MemoryDatabase;  // the data, shared by the stores opened on it; opaque
std::shared_ptr<MemoryDatabase> NewMemoryDatabase();

struct MemoryStoreOptions {
  bool shared = false;  // false: exclusive (§9); true: many stores at once
};
// DbLocked (nothing touched) on a mode clash or a second exclusive open.
Result<std::unique_ptr<Store>> OpenMemoryStore(std::shared_ptr<MemoryDatabase> db,
                                               MemoryStoreOptions options = {});

// The native handle (SPEC §8): the application's named tables, in the Tx's
// transaction; valid only during the callback, on its thread.
class MemoryTxn {
 public:
  virtual ~MemoryTxn() = default;
  virtual Status Put(std::string_view table, std::string_view key, std::string_view value) = 0;
  virtual Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) = 0;
  virtual Status Delete(std::string_view table, std::string_view key) = 0;  // absent: OK
};
Result<MemoryTxn*> MemoryHandle(TxContext& tx);  // InvalidArgument outside a memory Tx

}  // namespace mqlite

#endif  // MQLITE_MEMORY_H_
