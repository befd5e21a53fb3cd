#include "memory_profile.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "mqlite/memory.h"

namespace mqlite::tck {
namespace {

constexpr std::string_view kTable = "tck_business";

class MemoryFixture final : public StoreFixture {
 public:
  explicit MemoryFixture(bool shared) : shared_(shared) {}
  Result<std::unique_ptr<Store>> Open() override {
    return OpenMemoryStore(db_, MemoryStoreOptions{.shared = shared_});
  }

 private:
  const bool shared_;
  std::shared_ptr<MemoryDatabase> db_ = NewMemoryDatabase();
};

// TxContext::native_handle() of a memory store is exactly a MemoryTxn*.
Result<MemoryTxn*> Handle(void* native) {
  if (!native) return Status::InvalidArgument("tck business hook: no native handle");
  return static_cast<MemoryTxn*>(native);
}

}  // namespace

StoreProfile MemoryTckProfile(bool shared) {
  StoreProfile p;
  p.name = shared ? "memory_shared" : "memory";
  p.exclusive = !shared;
  p.crash = CrashModel::kNone;
  p.make_fixture = [shared] { return std::make_unique<MemoryFixture>(shared); };
  BusinessHooks hooks;
  // Tables need no creation: check the handle is live and usable.
  hooks.prepare = [](void* native) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MemoryTxn * h, Handle(native));
    return h->Get(kTable, "").status();
  };
  hooks.put = [](void* native, std::string_view key, std::string_view value) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MemoryTxn * h, Handle(native));
    return h->Put(kTable, key, value);
  };
  hooks.get = [](void* native, std::string_view key) -> Result<std::optional<std::string>> {
    MQLITE_ASSIGN_OR_RETURN(MemoryTxn * h, Handle(native));
    return h->Get(kTable, key);
  };
  p.business = std::move(hooks);
  return p;
}

}  // namespace mqlite::tck
