#include "lmdb_profile.h"

#include <lmdb.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lmdb_pins.h"

namespace mqlite::tck {
namespace {

constexpr char kBusinessDb[] = "tck_business";

// A fresh directory holding the environment in "env/". Removed on
// destruction — only by the process that created it, so a forked child
// (crash tests) that unwinds never deletes its parent's data.
class LmdbFixture final : public StoreFixture {
 public:
  LmdbFixture(std::string dir, pid_t owner, LmdbOptions options)
      : dir_(std::move(dir)), owner_(owner), options_(std::move(options)) {
    options_.dir = dir_ + "/env";
  }
  ~LmdbFixture() override {
    if (::getpid() != owner_) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  Result<std::unique_ptr<Store>> Open() override { return OpenLmdbStore(options_); }

  // data.mdb's allocated blocks (LMDB's file is sparse up to the map size,
  // so its apparent size says nothing) plus lock.mdb.
  std::optional<int64_t> StorageBytes() override {
    int64_t total = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(options_.dir, ec)) {
      struct stat st{};
      if (::stat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      total += static_cast<int64_t>(st.st_blocks) * 512;
    }
    if (ec) return std::nullopt;
    return total;
  }

 private:
  std::string dir_;
  pid_t owner_;
  LmdbOptions options_;
};

std::unique_ptr<StoreFixture> MakeFixture(const std::string& base_dir, const LmdbOptions& o) {
  std::error_code ec;
  std::filesystem::path base =
      base_dir.empty() ? std::filesystem::temp_directory_path(ec) : std::filesystem::path(base_dir);
  if (ec) base = "/tmp";
  std::string tmpl = (base / "mqlite-tck-lmdb-XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    std::cerr << "LmdbTckProfile: mkdtemp(" << tmpl << "): " << std::strerror(errno) << "\n";
    return nullptr;
  }
  return std::make_unique<LmdbFixture>(buf.data(), ::getpid(), o);
}

Status LmdbError(int rc, std::string_view what) {
  return Status::Internal("tck business hook: " + std::string(what) + ": " + mdb_strerror(rc));
}

// The application's sub-database, in the Tx's transaction (§8 rules,
// docs/lmdb-store.md: opened with MDB_CREATE in a setup Tx that commits).
Result<std::pair<MDB_txn*, MDB_dbi>> Business(void* native, unsigned flags) {
  if (native == nullptr) return Status::InvalidArgument("tck business hook: no MDB_txn* handle");
  auto* txn = static_cast<MDB_txn*>(native);
  MDB_dbi dbi = 0;
  if (int rc = mdb_dbi_open(txn, kBusinessDb, flags, &dbi); rc != 0) {
    return LmdbError(rc, "mdb_dbi_open(tck_business)");
  }
  return std::pair{txn, dbi};
}

MDB_val Val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }

Status Prepare(void* native) { return Business(native, MDB_CREATE).status(); }

Status Put(void* native, std::string_view key, std::string_view value) {
  MQLITE_ASSIGN_OR_RETURN(auto h, Business(native, 0));
  MDB_val k = Val(key.empty() ? std::string_view("\0", 1) : key), v = Val(value);
  if (int rc = mdb_put(h.first, h.second, &k, &v, 0); rc != 0) return LmdbError(rc, "mdb_put");
  return Status::OK();
}

Result<std::optional<std::string>> Get(void* native, std::string_view key) {
  MQLITE_ASSIGN_OR_RETURN(auto h, Business(native, 0));
  MDB_val k = Val(key.empty() ? std::string_view("\0", 1) : key), v{};
  const int rc = mdb_get(h.first, h.second, &k, &v);
  if (rc == MDB_NOTFOUND) return std::optional<std::string>();
  if (rc != 0) return LmdbError(rc, "mdb_get");
  return std::optional<std::string>(std::string(static_cast<const char*>(v.mv_data), v.mv_size));
}

}  // namespace

StoreProfile LmdbTckProfile(std::string base_dir, LmdbOptions options, std::string name) {
  StoreProfile p;
  p.name = std::move(name);
  p.exclusive = true;
  p.crash = CrashModel::kProcess;
  p.space = SpaceMode::kReused;
  p.make_fixture = [base_dir = std::move(base_dir), options = std::move(options)] {
    return MakeFixture(base_dir, options);
  };
  BusinessHooks hooks;
  hooks.prepare = Prepare;
  hooks.put = Put;
  hooks.get = Get;
  p.business = std::move(hooks);
  p.pins.push_back({"step pins: claims, a blocked group, a maintenance step and dropping expired "
                    "records take counted cursor steps independent of the backlog (SPEC §11)",
                    RunLmdbStepPins});
  return p;
}

}  // namespace mqlite::tck
