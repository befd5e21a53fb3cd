// Opening the SQLite store, beyond what the conformance kit checks for every
// store (TckLifecycle: DbLocked for a second open, reopen after Close, Closed
// after Close): DbLocked under any spelling of the file (SPEC §9),
// SchemaVersionMismatch that changes nothing, and the durability modes
// (SPEC §10).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

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
using ::mqlite::testing::Snapshot;
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
  // `create`: make the file if it is missing (a plain rollback-journal
  // database, auto_vacuum off: what SQLite makes by default).
  explicit RawDb(const std::string& path, bool create = false) {
    const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
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

  std::optional<std::string> SchemaToken() { return Meta("schema_version"); }

  // mqlite_meta's value for `key`, nullopt if there is none.
  std::optional<std::string> Meta(const std::string& key) {
    sqlite3_stmt* st = nullptr;
    std::optional<std::string> out;
    if (sqlite3_prepare_v2(db_, "SELECT value FROM mqlite_meta WHERE key = ?", -1, &st,
                           nullptr) != SQLITE_OK) {
      ADD_FAILURE() << "prepare: " << sqlite3_errmsg(db_);
      return out;
    }
    sqlite3_bind_text(st, 1, key.c_str(), -1, SQLITE_TRANSIENT);
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

// Seqs come from a counter whose high-water mark the file reserves in blocks
// of 1,024 in mqlite_meta (schema.h, kSeqReserveBlock). A reservation written
// by a transaction that rolls back is gone with it, so the store must write
// it again before it hands out a seq above what the file holds: otherwise a
// reopen, which resumes above the reservation, would hand the same seqs out
// again (SPEC §3, G1: never reused).
TEST_F(OpenTest, Spec3_SeqReservationUndoneByARollbackIsWrittenAgainBeforeItsSeqsAreUsed) {
  int64_t before = 0;
  {
    std::unique_ptr<Engine> e = OpenWithData();
    ASSERT_NE(e, nullptr);
    // More than two reservation blocks of sends, then a failure: the whole
    // transaction rolls back, the reservations it wrote included.
    Status tx = e->Tx([&](TxContext& t) -> Status {
      std::vector<OutgoingMessage> batch(500, OutgoingMessage{.body = "rolled back"});
      for (int i = 0; i < 5; ++i) MQLITE_RETURN_IF_ERROR(t.SendBatch("jobs", batch).status());
      return Status::Internal("on purpose");
    });
    ASSERT_EQ(tx.code(), StatusCode::kInternal) << tx.ToString();
    MQ_ASSERT_OK_AND_ASSIGN(before, e->Send("jobs", {.body = "after the rollback"}));
    MQ_ASSERT_OK(e->Close());
  }
  {
    RawDb raw(path_);
    std::optional<std::string> reserved = raw.Meta("seq_reserved");
    ASSERT_TRUE(reserved.has_value());
    EXPECT_GE(std::stoll(*reserved), before) << "a committed seq lies above the reservation";
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open(path_));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t after, e->Send("jobs", {.body = "after the reopen"}));
  EXPECT_GT(after, before) << "a seq was handed out twice";
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

// Each level's pragma (docs/sqlite-store.md), read back through the Tx's
// sqlite3*: 0 = OFF, 1 = NORMAL, 2 = FULL.
TEST_F(OpenTest, Spec10_DurabilityMapsToSynchronous) {
  const std::map<Durability, int> want = {
      {Durability::kProcessOnly, 0}, {Durability::kNormal, 1}, {Durability::kFull, 2}};
  for (const auto& [durability, level] : want) {
    MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open(path_, durability));
    int got = -1;
    MQ_ASSERT_OK(e->Tx([&](TxContext& tx) -> Status {
      MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
      sqlite3_stmt* st = nullptr;
      if (sqlite3_prepare_v2(db, "PRAGMA synchronous", -1, &st, nullptr) != SQLITE_OK) {
        return Status::Internal("prepare");
      }
      if (sqlite3_step(st) == SQLITE_ROW) got = sqlite3_column_int(st, 0);
      sqlite3_finalize(st);
      return Status::OK();
    }));
    EXPECT_EQ(got, level) << DurabilityName(durability);
    MQ_ASSERT_OK(e->Close());
  }
  MQ_EXPECT_CODE(OpenSqliteStore({.path = path_, .durability = static_cast<Durability>(9)}),
                 kInvalidArgument);
}

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

// ---- one engine per inode: hard links (SPEC §9) --------------------------------------

// A hard link is another name for the same inode, which no canonical path
// reveals. Opening it while the original is open must be DbLocked and touch
// nothing (before the fix: Unavailable "disk I/O error" in-process, and an
// empty store in another process — see process_test.cc).
TEST_F(OpenTest, Spec9_HardLinkInThisProcessIsDbLockedAndTouchesNothing) {
  std::unique_ptr<Engine> first = OpenWithData();
  ASSERT_NE(first, nullptr);
  const std::string link = dir_.File("link.db");
  ASSERT_EQ(::link(path_.c_str(), link.c_str()), 0) << std::strerror(errno);
  Result<std::unique_ptr<Store>> second = OpenSqliteStore({.path = link});
  MQ_EXPECT_CODE(second, kDbLocked);
  if (!second.has_value()) {
    EXPECT_NE(second.error().message().find(link), std::string_view::npos)
        << second.error().ToString();
  }
  MQ_EXPECT_CODE(Open(link, Durability::kFull), kDbLocked);
  EXPECT_FALSE(fs::exists(link + ".lock")) << "a refused open left its lock file behind";
  EXPECT_FALSE(fs::exists(link + "-wal"));
  ExpectStillWorks(*first, 1);  // SQLite's own locks on the file survived
  MQ_ASSERT_OK(first->Send("jobs", {.body = "kept"}));
  MQ_ASSERT_OK(first->Close());

  // Once the first engine is closed, the link is just another name.
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> via_link, Open(link));
  MQ_EXPECT_CODE(OpenSqliteStore({.path = path_}), kDbLocked);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, via_link->Peek("jobs"));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].body, "kept");
}

// ---- refused opens name the file and change nothing (SPEC §10) -----------------

void ExpectNamesFile(const Status& s, const std::string& path, std::string_view words) {
  EXPECT_NE(s.message().find(path), std::string_view::npos) << s.ToString();
  EXPECT_NE(s.message().find(words), std::string_view::npos) << s.ToString();
}

TEST_F(OpenTest, Spec10_DirectoryIsInvalidArgumentAndLeavesNoLockFile) {
  const std::string sub = dir_.File("adir");
  fs::create_directory(sub);
  const auto before = Snapshot(dir_.path());
  for (const std::string& p : {sub, sub + "/", sub + "/."}) {
    SCOPED_TRACE(p);
    Result<std::unique_ptr<Store>> r = OpenSqliteStore({.path = p});
    MQ_ASSERT_CODE(r, kInvalidArgument);
    EXPECT_NE(r.error().message().find("directory"), std::string_view::npos)
        << r.error().ToString();
  }
  EXPECT_EQ(Snapshot(dir_.path()), before) << "a refused open created a file";
  EXPECT_FALSE(fs::exists(sub + ".lock"));
  EXPECT_TRUE(fs::is_empty(sub));
}

TEST_F(OpenTest, Spec10_NonSqliteFileIsInvalidArgumentNamedAndUnchanged) {
  const std::string text = dir_.File("r.db");
  {
    std::ofstream out(text, std::ios::binary);
    for (int i = 0; i < 300; ++i) out << "this is a text file, line " << i << "\n";
  }
  const auto before = Snapshot(dir_.path());
  Result<std::unique_ptr<Store>> r = OpenSqliteStore({.path = text});
  MQ_ASSERT_CODE(r, kInvalidArgument);
  ExpectNamesFile(r.error(), "'" + text + "'", "is not an SQLite database");
  MQ_EXPECT_CODE(Open(text, Durability::kFull), kInvalidArgument);
  EXPECT_EQ(Snapshot(dir_.path()), before) << "the refused file (or its directory) changed";
}

// A file with mqlite_ tables but no mqlite_meta (an older or foreign layout, or
// a damaged one): refused before any PRAGMA that writes — no switch to WAL, no
// header rewrite, no -wal file, byte-identical.
TEST_F(OpenTest, Spec10_MqliteTablesWithoutMetaIsSchemaVersionMismatchAndUnchanged) {
  // Rollback-journal mode, auto_vacuum off: what a refused open must not change.
  RawDb(path_, /*create=*/true)
      .Exec("CREATE TABLE mqlite_queues(id INTEGER PRIMARY KEY, name TEXT);"
            "CREATE TABLE mqlite_messages(seq INTEGER PRIMARY KEY, body BLOB);"
            "INSERT INTO mqlite_queues VALUES (1, 'jobs');"
            "CREATE TABLE app_orders(id INTEGER PRIMARY KEY);");
  ASSERT_FALSE(::testing::Test::HasFailure());
  const auto before = Snapshot(dir_.path());
  ASSERT_EQ(before.size(), 1u);
  Result<std::unique_ptr<Store>> r = OpenSqliteStore({.path = path_});
  MQ_ASSERT_CODE(r, kSchemaVersionMismatch);
  ExpectNamesFile(r.error(), "'" + path_ + "'", "no mqlite_meta");
  MQ_EXPECT_CODE(Open(path_, Durability::kFull), kSchemaVersionMismatch);
  EXPECT_FALSE(fs::exists(path_ + "-wal"));
  EXPECT_FALSE(fs::exists(path_ + ".lock"));
  EXPECT_TRUE(Snapshot(dir_.path()) == before) << "the refused file was modified";
}

// A plain application database (no mqlite_ tables) is accepted: the queue
// moves in beside the application's tables (SPEC §8).
TEST_F(OpenTest, Spec8_ApplicationDatabaseWithoutMqliteTablesIsAccepted) {
  RawDb(path_, /*create=*/true)
      .Exec("CREATE TABLE app_orders(id INTEGER PRIMARY KEY); INSERT INTO app_orders VALUES (7);");
  ASSERT_FALSE(::testing::Test::HasFailure());
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open(path_));
  MQ_ASSERT_OK(e->CreateQueue({.name = "jobs"}));
  MQ_ASSERT_OK(e->Close());
  RawDb raw(path_);
  raw.Exec("INSERT INTO app_orders VALUES (8)");  // the application's table is intact
}

}  // namespace
}  // namespace mqlite
