#include "sqlite_profile.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mqlite/sqlite.h"
#include "sqlite_pins.h"

namespace mqlite::tck {
namespace {

// A fresh directory holding "tck.db". Removed on destruction — only by the
// process that created it, so a forked child (crash tests) that unwinds never
// deletes its parent's data.
class SqliteFixture final : public StoreFixture {
 public:
  SqliteFixture(std::string dir, pid_t owner, Durability durability)
      : dir_(std::move(dir)), owner_(owner), durability_(durability) {}
  ~SqliteFixture() override {
    if (::getpid() != owner_) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  Result<std::unique_ptr<Store>> Open() override {
    SqliteOptions o;
    o.path = dir_ + "/tck.db";
    o.durability = durability_;
    return OpenSqliteStore(o);
  }

  // The database with its WAL, shared-memory and lock files.
  std::optional<int64_t> StorageBytes() override {
    int64_t total = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
      std::error_code size_ec;
      if (!entry.is_regular_file(size_ec)) continue;
      const uintmax_t n = entry.file_size(size_ec);
      if (!size_ec) total += static_cast<int64_t>(n);
    }
    if (ec) return std::nullopt;
    return total;
  }

 private:
  std::string dir_;
  pid_t owner_;
  Durability durability_;
};

std::unique_ptr<StoreFixture> MakeFixture(const std::string& base_dir, Durability durability) {
  std::error_code ec;
  std::filesystem::path base =
      base_dir.empty() ? std::filesystem::temp_directory_path(ec) : std::filesystem::path(base_dir);
  if (ec) base = "/tmp";
  std::string tmpl = (base / "mqlite-tck-sqlite-XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    std::cerr << "SqliteTckProfile: mkdtemp(" << tmpl << "): " << std::strerror(errno) << "\n";
    return nullptr;
  }
  return std::make_unique<SqliteFixture>(buf.data(), ::getpid(), durability);
}

Status SqliteError(sqlite3* db, std::string_view what) {
  return Status::Internal("tck business hook: " + std::string(what) + ": " + sqlite3_errmsg(db));
}

Result<sqlite3*> Db(void* native) {
  if (native == nullptr) return Status::InvalidArgument("tck business hook: no sqlite3* handle");
  return static_cast<sqlite3*>(native);
}

// Binds `v` as a BLOB; an empty value is a zero-length blob, never NULL.
int BindBlob(sqlite3_stmt* st, int index, std::string_view v) {
  if (v.empty()) return sqlite3_bind_zeroblob(st, index, 0);
  return sqlite3_bind_blob(st, index, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

// Finalizes the statement on every path.
struct Stmt {
  sqlite3_stmt* st = nullptr;
  ~Stmt() { sqlite3_finalize(st); }
};

Status Prepare(void* native) {
  MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, Db(native));
  if (sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS tck_business(k BLOB PRIMARY KEY, v BLOB)",
                   nullptr, nullptr, nullptr) != SQLITE_OK) {
    return SqliteError(db, "CREATE TABLE tck_business");
  }
  return Status::OK();
}

Status Put(void* native, std::string_view key, std::string_view value) {
  MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, Db(native));
  Stmt s;
  if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO tck_business(k, v) VALUES(?1, ?2)", -1, &s.st,
                         nullptr) != SQLITE_OK ||
      BindBlob(s.st, 1, key) != SQLITE_OK || BindBlob(s.st, 2, value) != SQLITE_OK ||
      sqlite3_step(s.st) != SQLITE_DONE) {
    return SqliteError(db, "INSERT INTO tck_business");
  }
  return Status::OK();
}

Result<std::optional<std::string>> Get(void* native, std::string_view key) {
  MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, Db(native));
  Stmt s;
  if (sqlite3_prepare_v2(db, "SELECT v FROM tck_business WHERE k = ?1", -1, &s.st, nullptr) !=
          SQLITE_OK ||
      BindBlob(s.st, 1, key) != SQLITE_OK) {
    return SqliteError(db, "SELECT FROM tck_business");
  }
  int rc = sqlite3_step(s.st);
  if (rc == SQLITE_DONE) return std::optional<std::string>();
  if (rc != SQLITE_ROW) return SqliteError(db, "SELECT FROM tck_business");
  const void* data = sqlite3_column_blob(s.st, 0);
  const int n = sqlite3_column_bytes(s.st, 0);
  std::string v;
  if (data != nullptr && n > 0) v.assign(static_cast<const char*>(data), static_cast<size_t>(n));
  return std::optional<std::string>(std::move(v));
}

}  // namespace

StoreProfile SqliteTckProfile(std::string base_dir, Durability durability) {
  StoreProfile p;
  p.name = durability == Durability::kNormal ? "sqlite"
                                             : "sqlite_" + std::string(DurabilityName(durability));
  p.exclusive = true;
  p.crash = CrashModel::kProcess;
  p.make_fixture = [base_dir = std::move(base_dir), durability] {
    return MakeFixture(base_dir, durability);
  };
  BusinessHooks hooks;
  hooks.prepare = Prepare;
  hooks.put = Put;
  hooks.get = Get;
  p.business = std::move(hooks);
  p.pins.push_back({"plan pins: every statement seeks its named index over an ANALYZEd 30k "
                    "backlog (SPEC §11)",
                    RunSqlitePlanPins});
  return p;
}

}  // namespace mqlite::tck
