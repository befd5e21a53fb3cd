// WalCheckpointer (checkpointer.h): checkpoints off the writer's thread, on a
// real WAL file. Small thresholds so a few thousand commits cross them many
// times.
#include "checkpointer.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>

namespace mqlite::internal {
namespace {

constexpr int kPage = 4096;
constexpr int64_t kFrameBytes = kPage + 24;  // a WAL frame: header + page

class WalCheckpointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mqlite-ckpt-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/c.db";
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db_), SQLITE_OK);
    // As the store's writer does: the checkpointer's connection can hold a
    // WAL lock for a moment (without this, SQLITE_BUSY under TSan).
    sqlite3_busy_timeout(db_, 5000);
    Exec("PRAGMA page_size = 4096");
    Exec("PRAGMA journal_mode = WAL");
    Exec("PRAGMA synchronous = NORMAL");
    Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)");
  }
  void TearDown() override {
    if (db_) sqlite3_close_v2(db_);
    std::filesystem::remove_all(dir_);
  }
  void Exec(const std::string& sql) {
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << sql << ": " << (err ? err : "");
  }
  // One commit of one row whose body fills about a page, so each commit
  // appends two or three frames (the row's page, the table's interior page).
  void InsertOne() { Exec("INSERT INTO t (body) VALUES (randomblob(3000))"); }
  // `n` commits of InsertOne, each followed by `c->AfterCommit()` as the
  // store's writer does (if `c` is given); returns the WAL file's largest
  // size meanwhile.
  int64_t InsertMany(int n, WalCheckpointer* c = nullptr) {
    int64_t most = 0;
    for (int i = 0; i < n; ++i) {
      InsertOne();
      if (c) c->AfterCommit();
      const int64_t now = WalBytes();
      if (now < last_wal_bytes_) ++shrank_;
      last_wal_bytes_ = now;
      most = std::max(most, now);
    }
    return most;
  }
  int shrank_ = 0;              // times InsertMany saw the WAL file get smaller
  int64_t last_wal_bytes_ = 0;
  int64_t WalBytes() const {
    std::error_code ec;
    const auto n = std::filesystem::file_size(path_ + "-wal", ec);
    return ec ? 0 : static_cast<int64_t>(n);
  }
  int64_t Rows() {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, "SELECT count(*) FROM t", -1, &st, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(st), SQLITE_ROW);
    const int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
  }

  std::string dir_, path_;
  sqlite3* db_ = nullptr;
};

TEST_F(WalCheckpointerTest, KeepsTheWalBoundedAndCopiesInBothPlaces) {
  WalCheckpointer::Options o;
  o.background_frames = 50;
  o.inline_frames = 400;
  auto c = WalCheckpointer::Start(db_, path_, o);
  ASSERT_NE(c, nullptr);
  const int64_t most = InsertMany(4000);
  const auto n = c->counters();
  // How many of each ran depends on scheduling (the writer waits for the
  // thread only past twice the inline point).
  EXPECT_GT(n.background + n.inline_, 0u);
  EXPECT_EQ(n.failed, 0u);
  // Rewound by the inline checkpoints: at most twice inline_frames (where
  // the writer waits for a background pass) plus one commit. Without a
  // rewind the 4,000 commits need more than 8,000 frames.
  EXPECT_LE(most, (2 * o.inline_frames + 10) * kFrameBytes)
      << "WAL high-water mark " << most / kFrameBytes << " frames; background "
      << n.background << ", inline " << n.inline_;
  c.reset();
  EXPECT_EQ(Rows(), 4000);
  // The automatic checkpoint is back: the WAL still rewinds.
  for (int i = 0; i < 2000; ++i) InsertOne();
  EXPECT_LT(WalBytes(), (WalCheckpointer::kAutomaticFrames + 200) * kFrameBytes);
}

// A nearly full disk: the WAL rewinds where SQLite's automatic checkpoint
// would, so settles can still drain (docs/sqlite-store.md, "Full disk").
TEST_F(WalCheckpointerTest, LowOnSpaceRewindsAtTheAutomaticPoint) {
  WalCheckpointer::Options o;
  o.background_frames = 100;
  o.spare_bytes = INT64_MAX;  // every file system is "low"
  auto c = WalCheckpointer::Start(db_, path_, o);
  ASSERT_NE(c, nullptr);
  const int64_t most = InsertMany(3000);
  EXPECT_GT(c->counters().inline_, 0u);
  EXPECT_LE(most, (WalCheckpointer::kAutomaticFrames + 10) * kFrameBytes)
      << "WAL high-water mark " << most / kFrameBytes << " frames";
}

// A rewind does not truncate the WAL file while space is plentiful, even
// under a small journal_size_limit set before (the store's 4 MiB), so the
// next pages are written into the file as it is, not appended to a file
// regrown from the limit; once the checkpointer stops, the small limit is
// back.
TEST_F(WalCheckpointerTest, ARewindKeepsTheWalFileWhileSpaceIsPlentiful) {
  Exec("PRAGMA journal_size_limit = 0");
  WalCheckpointer::Options o;
  o.background_frames = 50;
  o.inline_frames = 400;
  o.spare_bytes = 0;  // never low
  o.kept_wal_bytes = (2 * o.inline_frames + 10) * kFrameBytes;
  o.low_wal_bytes = 0;
  auto c = WalCheckpointer::Start(db_, path_, o);
  ASSERT_NE(c, nullptr);
  const int64_t most = InsertMany(4000, c.get());
  EXPECT_GT(c->counters().inline_, 1u) << "the WAL should have been rewound several times";
  EXPECT_LE(most, (2 * o.inline_frames + 10) * kFrameBytes);
  EXPECT_EQ(shrank_, 0) << "a rewind truncated the WAL file";
  c.reset();
  InsertMany(2000);  // SQLite's automatic checkpoint, under low_wal_bytes again
  EXPECT_GT(shrank_, 0) << "the limit for SQLite's own checkpoint was not restored";
}

// Low on space, a rewind truncates the WAL file to low_wal_bytes: a nearly
// full disk gets the space back (the fixture's limit is SQLite's default,
// none, so only the checkpointer can have set it).
TEST_F(WalCheckpointerTest, LowOnSpaceARewindTruncatesTheWalFile) {
  WalCheckpointer::Options o;
  o.background_frames = 100;
  o.spare_bytes = INT64_MAX;  // every file system is "low"
  o.kept_wal_bytes = int64_t{1} << 40;
  o.low_wal_bytes = 0;
  auto c = WalCheckpointer::Start(db_, path_, o);
  ASSERT_NE(c, nullptr);
  InsertMany(3000, c.get());
  EXPECT_GT(c->counters().inline_, 0u);
  EXPECT_GT(shrank_, 0) << "no rewind truncated the WAL file";
}

TEST_F(WalCheckpointerTest, EveryCommitSurvivesAReopenAndTheFileChecksOut) {
  {
    auto c = WalCheckpointer::Start(db_, path_, {.background_frames = 20, .inline_frames = 200});
    ASSERT_NE(c, nullptr);
    for (int i = 0; i < 1500; ++i) InsertOne();
    EXPECT_GT(c->counters().background, 0u);
  }
  ASSERT_EQ(sqlite3_close_v2(db_), SQLITE_OK);
  db_ = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db_), SQLITE_OK);
  EXPECT_EQ(Rows(), 1500);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db_, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
  sqlite3_finalize(st);
}

TEST_F(WalCheckpointerTest, AFileItCannotOpenLeavesTheAutomaticCheckpoint) {
  EXPECT_EQ(WalCheckpointer::Start(db_, dir_ + "/missing/x.db", {}), nullptr);
  for (int i = 0; i < 2000; ++i) InsertOne();
  EXPECT_LT(WalBytes(), (WalCheckpointer::kAutomaticFrames + 200) * kFrameBytes);
}

}  // namespace
}  // namespace mqlite::internal
