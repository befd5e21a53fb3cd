// Opening the SQLite store, beyond what the conformance kit checks for every
// store (TckLifecycle: DbLocked for a second open, reopen after Close, Closed
// after Close): DbLocked under any spelling of the file (SPEC §9),
// SchemaVersionMismatch that changes nothing, and the durability modes
// (SPEC §10).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/sqlite.h"
#include "mqlite/store.h"
#include "test_util.h"

namespace mqlite {
namespace {

namespace fs = std::filesystem;
using ::mqlite::testing::kT0;
using ::mqlite::testing::OpenEngineAt;
using ::mqlite::testing::TempDir;

class OpenTest : public ::testing::Test {
 protected:
  OpenTest() : path_(dir_.File("queue.db")), clock_(kT0) {}

  EngineOptions Options() {
    EngineOptions o;
    o.clock = &clock_;
    o.background_maintenance = false;
    return o;
  }

  Result<std::unique_ptr<Engine>> Open(const std::string& path,
                                       Durability d = Durability::kNormal) {
    return OpenEngineAt(path, Options(), d);
  }

  // Opens path_, creates "jobs" with one message, and returns the engine.
  std::unique_ptr<Engine> OpenWithData() {
    Result<std::unique_ptr<Engine>> e = Open(path_);
    EXPECT_TRUE(::mqlite::testing::IsOk(e));
    if (!e.has_value()) return nullptr;
    EXPECT_TRUE(::mqlite::testing::IsOk((*e)->CreateQueue({.name = "jobs"})));
    EXPECT_TRUE(::mqlite::testing::IsOk((*e)->Send("jobs", {.body = "payload"})));
    return std::move(*e);
  }

  // The first engine is unharmed by a refused second open: it still sends,
  // receives and completes, and sees its data.
  void ExpectStillWorks(Engine& e, int64_t want_total_before) {
    MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, e.Stats("jobs"));
    EXPECT_EQ(st.total, want_total_before);
    MQ_ASSERT_OK(e.Send("jobs", {.body = "after"}));
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, e.Receive("jobs", {.max_messages = 10}));
    ASSERT_EQ(got.size(), static_cast<size_t>(want_total_before + 1));
    for (const Message& m : got) MQ_EXPECT_OK(e.Complete("jobs", m.seq, m.lock_token));
  }

  TempDir dir_;
  std::string path_;
  ManualClock clock_;
};

// ---- exclusivity (SPEC §9) -------------------------------------------------------

// The kit (TckLifecycle.Spec9_SecondOpenWhileOpenIsDbLocked) covers a second
// open of the same spelling; here: another durability, and other spellings.
TEST_F(OpenTest, Spec9_SecondOpenWithAnotherDurabilityIsDbLocked) {
  std::unique_ptr<Engine> first = OpenWithData();
  ASSERT_NE(first, nullptr);
  MQ_EXPECT_CODE(OpenSqliteStore({.path = path_, .durability = Durability::kFull}), kDbLocked);
  MQ_EXPECT_CODE(Open(path_, Durability::kFull), kDbLocked);
  ExpectStillWorks(*first, 1);
  MQ_EXPECT_OK(first->Close());
}

TEST_F(OpenTest, Spec9_SymlinkSpellingIsDbLocked) {
  std::unique_ptr<Engine> first = OpenWithData();
  ASSERT_NE(first, nullptr);
  const std::string file_link = dir_.File("link.db");
  fs::create_symlink(path_, file_link);
  MQ_EXPECT_CODE(OpenSqliteStore({.path = file_link}), kDbLocked);

  const std::string dir_link = dir_.File("dirlink");
  fs::create_directory_symlink(dir_.path(), dir_link);
  MQ_EXPECT_CODE(OpenSqliteStore({.path = dir_link + "/queue.db"}), kDbLocked);

  const std::string relative_link = dir_.File("rel-link.db");
  fs::create_symlink("queue.db", relative_link);  // a relative link target
  MQ_EXPECT_CODE(OpenSqliteStore({.path = relative_link}), kDbLocked);
  ExpectStillWorks(*first, 1);
}

TEST_F(OpenTest, Spec9_OpenThroughSymlinkFirstLocksTheRealPath) {
  const std::string file_link = dir_.File("link.db");
  // Create the file through the real path first, then hold it through the link.
  {
    std::unique_ptr<Engine> creator = OpenWithData();
    ASSERT_NE(creator, nullptr);
    MQ_ASSERT_OK(creator->Close());
  }
  fs::create_symlink(path_, file_link);
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> via_link, Open(file_link));
  MQ_EXPECT_CODE(OpenSqliteStore({.path = path_}), kDbLocked);
  ExpectStillWorks(*via_link, 1);
}

TEST_F(OpenTest, Spec9_DifferentRelativeSpellingsAreDbLocked) {
  std::unique_ptr<Engine> first = OpenWithData();
  ASSERT_NE(first, nullptr);
  fs::create_directory(dir_.File("sub"));
  const std::vector<std::string> spellings = {
      dir_.path() + "/./queue.db",
      dir_.path() + "//queue.db",
      dir_.path() + "/sub/../queue.db",
      fs::relative(path_, fs::current_path()).string(),
      fs::relative(dir_.path(), fs::current_path()).string() + "/sub/../queue.db",
  };
  for (const std::string& p : spellings) {
    SCOPED_TRACE(p);
    ASSERT_NE(p, path_);
    MQ_EXPECT_CODE(OpenSqliteStore({.path = p}), kDbLocked);
  }
  ExpectStillWorks(*first, 1);
}

// ---- arguments (sqlite.h) -------------------------------------------------------------

TEST_F(OpenTest, EmptyPathOrUnusableDirectoryIsInvalidArgument) {
  MQ_EXPECT_CODE(OpenSqliteStore({.path = ""}), kInvalidArgument);
  MQ_EXPECT_CODE(OpenSqliteStore({.path = dir_.File("no/such/dir/queue.db")}), kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir_.File("no")));
}

TEST_F(OpenTest, CapabilitiesDescribeAnExclusiveSqliteStore) {
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open(path_));
  StoreCapabilities caps = e->capabilities();
  EXPECT_TRUE(caps.exclusive);
  EXPECT_EQ(caps.name, "sqlite");
  EXPECT_EQ(caps.native_handle_type, "sqlite3");
  EXPECT_EQ(caps.crash_model, "process");
}

// ---- schema token (SPEC §10) -------------------------------------------------------------

// Direct SQLite access to the file, outside mqlite.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << "sqlite3_open_v2(" << path << "): " << sqlite3_errmsg(db_);
    }
  }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  void Exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << (err ? err : "?");
    }
    sqlite3_free(err);
  }

  std::optional<std::string> SchemaToken() {
    sqlite3_stmt* st = nullptr;
    std::optional<std::string> out;
    if (sqlite3_prepare_v2(db_, "SELECT value FROM mqlite_meta WHERE key = 'schema_version'", -1,
                           &st, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << "prepare: " << sqlite3_errmsg(db_);
      return out;
    }
    if (sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* v = sqlite3_column_text(st, 0);
      out = std::string(reinterpret_cast<const char*>(v),
                        static_cast<size_t>(sqlite3_column_bytes(st, 0)));
    }
    sqlite3_finalize(st);
    return out;
  }

  void SetSchemaToken(const std::string& token) {
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(
        sqlite3_prepare_v2(db_, "UPDATE mqlite_meta SET value = ?1 WHERE key = 'schema_version'",
                           -1, &st, nullptr),
        SQLITE_OK)
        << sqlite3_errmsg(db_);
    sqlite3_bind_text(st, 1, token.data(), static_cast<int>(token.size()), SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(st), SQLITE_DONE) << sqlite3_errmsg(db_);
    sqlite3_finalize(st);
    EXPECT_EQ(sqlite3_changes(db_), 1);
  }

 private:
  sqlite3* db_ = nullptr;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(OpenTest, Spec10_TheFileRecordsThisBuildsSchemaToken) {
  {
    std::unique_ptr<Engine> e = OpenWithData();
    ASSERT_NE(e, nullptr);
    MQ_ASSERT_OK(e->Close());
  }
  RawDb raw(path_);
  std::optional<std::string> token = raw.SchemaToken();
  ASSERT_TRUE(token.has_value());
  EXPECT_EQ(*token, std::string(kSqliteSchemaToken));
  EXPECT_FALSE(token->empty());
}

class SchemaMismatchTest : public OpenTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(SchemaMismatchTest, Spec10_OtherTokenIsSchemaVersionMismatchAndChangesNothing) {
  {
    std::unique_ptr<Engine> e = OpenWithData();
    ASSERT_NE(e, nullptr);
    // Leave a locked message behind: a refused open must not "recover" it.
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, e->Receive("jobs"));
    ASSERT_EQ(got.size(), 1u);
    MQ_ASSERT_OK(e->Close());
  }
  const std::string other =
      GetParam().empty() ? std::string(kSqliteSchemaToken) + "-next" : GetParam();
  {
    RawDb raw(path_);
    raw.SetSchemaToken(other);
  }  // closing the last connection checkpoints the WAL into the main file
  const std::string before = ReadFile(path_);
  ASSERT_FALSE(before.empty());

  MQ_EXPECT_CODE(OpenSqliteStore({.path = path_}), kSchemaVersionMismatch);
  MQ_EXPECT_CODE(Open(path_), kSchemaVersionMismatch);
  MQ_EXPECT_CODE(OpenSqliteStore({.path = path_, .durability = Durability::kFull}),
                 kSchemaVersionMismatch);

  EXPECT_TRUE(ReadFile(path_) == before) << "the refused file was modified";
  {
    RawDb raw(path_);
    EXPECT_EQ(raw.SchemaToken(), std::optional<std::string>(other));
    // Restore the real token: the refused opens released their lock and left
    // the data as it was (the message is still locked, not recovered).
    raw.SetSchemaToken(kSqliteSchemaToken);
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open(path_));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, e->Peek("jobs"));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].body, "payload");
  EXPECT_EQ(all[0].delivery_count, 1);
  EXPECT_EQ(all[0].state, MessageState::kActive) << "recovered by the successful open (§7.1)";
}

INSTANTIATE_TEST_SUITE_P(Tokens, SchemaMismatchTest,
                         ::testing::Values(std::string(), std::string("0"),
                                           std::string("mqlite-sqlite-v0")));

// ---- durability (SPEC §10) -------------------------------------------------------------------

TEST_F(OpenTest, Spec10_DurabilityFullOpensAndWorks) {
  {
    MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open(path_, Durability::kFull));
    MQ_ASSERT_OK(e->CreateQueue({.name = "jobs"}));
    MQ_ASSERT_OK(e->Send("jobs", {.body = "durable"}));
    MQ_ASSERT_OK(e->Close());
  }
  // The durability mode is a property of the open, not of the file.
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open(path_, Durability::kNormal));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, e->Receive("jobs"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body, "durable");
  MQ_ASSERT_OK(e->Close());
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> full, Open(path_, Durability::kFull));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, full->Stats("jobs"));
  EXPECT_EQ(st.total, 1);
}

}  // namespace
}  // namespace mqlite
