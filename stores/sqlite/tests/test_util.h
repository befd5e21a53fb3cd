// Shared fixture and helpers for the SQLite store's engine-level tests.
//
// SqliteEngineTest gives every test a fresh temporary directory (mkdtemp,
// removed afterwards), a database file inside it, a ManualClock and an Engine
// opened on that file with background maintenance OFF, so every lease, schedule
// and TTL is driven by the clock and RunMaintenance() — never by sleeping.
#ifndef MQLITE_STORES_SQLITE_TESTS_TEST_UTIL_H_
#define MQLITE_STORES_SQLITE_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mqlite/clock.h"
#include "mqlite/engine.h"
#include "mqlite/sqlite.h"
#include "mqlite/status.h"
#include "mqlite/types.h"
#include "suite_util.h"  // tck/src: the kit's assertion helpers

namespace mqlite {

namespace testing {

// The assertion helpers (IsOk, HasCode, StatsEq, the MQ_* macros, PrintTo for
// the enums) are the conformance kit's, so both suites read alike.
using tck::suite::HasCode;
using tck::suite::IsOk;
using tck::suite::kT0;
using tck::suite::StatsEq;
using tck::suite::StatsString;

// A directory from mkdtemp, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "mqlite-sqlite-test-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed for " << tmpl;
      std::abort();
    }
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

// Every entry of `dir` by name, with a regular file's whole contents
// ("<directory>" for a subdirectory): equal snapshots mean nothing in `dir`
// was created, deleted or modified.
inline std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_directory()) {
      out[e.path().filename().string()] = "<directory>";
      continue;
    }
    std::ifstream in(e.path(), std::ios::binary);
    out[e.path().filename().string()] =
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

// Opens the SQLite store at `path` and an engine on it.
inline Result<std::unique_ptr<Engine>> OpenEngineAt(const std::string& path,
                                                    const EngineOptions& options,
                                                    Durability durability = Durability::kNormal) {
  Result<std::unique_ptr<Store>> store = OpenSqliteStore({.path = path, .durability = durability});
  if (!store.has_value()) return std::move(store).error();
  return Engine::Open(std::move(*store), options);
}

class SqliteEngineTest : public ::testing::Test {
 protected:
  SqliteEngineTest() : db_path_(dir_.File("queue.db")), clock_(kT0) {}

  void SetUp() override { ASSERT_TRUE(IsOk(OpenEngine(DefaultOptions()))); }

  void TearDown() override {
    if (engine_) {
      EXPECT_TRUE(IsOk(engine_->Close()));
      engine_.reset();
    }
  }

  EngineOptions DefaultOptions() {
    EngineOptions o;
    o.clock = &clock_;
    o.background_maintenance = false;
    return o;
  }

  // Closes any open engine, then opens a new one on db_path_ with `options`
  // (remembered for Reopen()).
  Status OpenEngine(const EngineOptions& options) {
    if (engine_) {
      Status s = engine_->Close();
      engine_.reset();
      if (!s.ok()) return s;
    }
    options_ = options;
    Result<std::unique_ptr<Engine>> e = OpenEngineAt(db_path_, options_);
    if (!e.has_value()) return std::move(e).error();
    engine_ = std::move(*e);
    return Status::OK();
  }

  // Closes the engine and opens a fresh one on the same file with the same
  // options; the clock is not moved.
  Status Reopen() { return OpenEngine(options_); }

  Engine& engine() { return *engine_; }

  // The kit's helpers (tck/src/suite_util.h) on this fixture's engine.
  Result<QueueConfig> CreateQueue(std::string_view name, QueueConfig config = {}) {
    return tck::suite::CreateQueue(*engine_, name, std::move(config));
  }
  Result<int64_t> SendBody(std::string_view queue, std::string body) {
    return tck::suite::SendBody(*engine_, queue, std::move(body));
  }
  Result<Message> ReceiveOne(std::string_view queue, ReceiveMode mode = ReceiveMode::kPeekLock) {
    return tck::suite::ReceiveOne(*engine_, queue, mode);
  }
  Result<std::vector<Message>> ReceiveMany(std::string_view queue, int max) {
    return tck::suite::ReceiveMany(*engine_, queue, max);
  }
  Result<Message> Find(std::string_view queue, int64_t seq) {
    return tck::suite::Find(*engine_, queue, seq);
  }
  Result<std::vector<Message>> PeekAll(std::string_view queue,
                                       std::optional<MessageState> state = std::nullopt) {
    return tck::suite::PeekAllOf(*engine_, queue, state);
  }
  Result<QueueStats> StatsOf(std::string_view queue) { return engine_->Stats(queue); }

  TempDir dir_;
  std::string db_path_;
  ManualClock clock_;
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace testing
}  // namespace mqlite

#endif  // MQLITE_STORES_SQLITE_TESTS_TEST_UTIL_H_
