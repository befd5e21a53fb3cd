// SPEC §11 plan pins for the SQLite store.
//
// Every statement the store runs (queries.h's catalog) is EXPLAINed over an
// ANALYZEd mixed backlog (backlog.h: tens of thousands of rows in every state,
// all three ordering modes) and must seek its named index. Any SCAN of a
// message or idempotency table, or a temp B-tree, fails; so does a catalog
// statement that has no expectation here. A second test counts the claim's VM
// steps: they must not grow with a blocked group or a backlog behind it.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/sqlite.h"
#include "queries.h"
#include "sqlite_pins.h"

namespace mqlite {
namespace {

class SqlitePlanPin : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mqlite-pin-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto store = OpenSqliteStore({.path = dir_ + "/pin.db"});
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    EngineOptions eo;
    eo.clock = &clock_;
    eo.background_maintenance = false;
    auto engine = Engine::Open(std::move(*store), eo);
    ASSERT_TRUE(engine.ok()) << engine.error().ToString();
    engine_ = std::move(*engine);
  }
  void TearDown() override {
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Runs fn(db) on the store's own connection, inside a Tx.
  void WithDb(const std::function<void(sqlite3*)>& fn) {
    Status s = engine_->Tx([&](TxContext& tx) -> Status {
      auto db = SqliteHandle(tx);
      if (!db.ok()) return db.error();
      fn(*db);
      return Status::OK();
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  ManualClock clock_;
  std::string dir_;
  std::unique_ptr<Engine> engine_;
};

// SPEC §11: claim, settle, maintenance and idempotency lookups seek an index.
TEST_F(SqlitePlanPin, EveryStatementSeeksItsNamedIndex) {
  Status built = tck::BuildMixedBacklog(*engine_, 10'000);
  ASSERT_TRUE(built.ok()) << built.ToString();
  clock_.Advance(1);
  WithDb([&](sqlite3* db) {
    ASSERT_EQ(sqlite3_exec(db, "ANALYZE", nullptr, nullptr, nullptr), SQLITE_OK);
    EXPECT_EQ(tck::CheckSqlitePlans(db), "");
  });
}

// Counts the VM steps of one claim-candidate query on `queue`.
int CountClaimSteps(sqlite3* db, int64_t queue_id, int limit, int* rows) {
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, internal::kClaimCandidates, -1, &st, nullptr), SQLITE_OK);
  sqlite3_bind_int64(st, 1, queue_id);
  sqlite3_bind_int64(st, 2, limit);
  *rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) ++*rows;
  int steps = sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 0);
  sqlite3_finalize(st);
  return steps;
}

int64_t QueueId(sqlite3* db, const std::string& name) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT id FROM mqlite_queues WHERE name = ?", -1, &st, nullptr);
  sqlite3_bind_text(st, 1, name.c_str(), -1, SQLITE_TRANSIENT);
  int64_t id = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return id;
}

// SPEC §5/§11: blocked group members are never visited by the claim. A queue
// with 20,000 messages blocked behind a locked group head and one with 10
// take the same number of VM steps to find the one claimable message; so do
// a 50-message and a 20,000-message ungrouped backlog for a batch of 10.
TEST_F(SqlitePlanPin, ClaimCursorStepsDoNotGrowWithBlockedOrWaitingBacklog) {
  auto fill = [&](const std::string& name, int blocked, bool grouped) {
    ASSERT_TRUE(engine_->CreateQueue({.name = name}).ok());
    std::vector<OutgoingMessage> batch;
    for (int i = 0; i < blocked; ++i) {
      OutgoingMessage m;
      m.body = "x";
      if (grouped) m.group_id = "G";
      batch.push_back(m);
      if (batch.size() == 1000 || i + 1 == blocked) {
        ASSERT_TRUE(engine_->SendBatch(name, batch).ok());
        batch.clear();
      }
    }
    if (grouped) {
      auto head = engine_->Receive(name);  // locks the head: the rest are blocked
      ASSERT_TRUE(head.ok());
      ASSERT_EQ(head->size(), 1u);
      ASSERT_TRUE(engine_->Send(name, {.body = "free"}).ok());
    }
  };
  fill("small-blocked", 10, true);
  fill("big-blocked", 20'000, true);
  fill("small-backlog", 50, false);
  fill("big-backlog", 20'000, false);
  WithDb([&](sqlite3* db) {
    ASSERT_EQ(sqlite3_exec(db, "ANALYZE", nullptr, nullptr, nullptr), SQLITE_OK);
    int rows_small = 0, rows_big = 0;
    int small = CountClaimSteps(db, QueueId(db, "small-blocked"), 10, &rows_small);
    int big = CountClaimSteps(db, QueueId(db, "big-blocked"), 10, &rows_big);
    EXPECT_EQ(rows_small, 1);  // only the ungrouped message is claimable
    EXPECT_EQ(rows_big, 1);
    EXPECT_EQ(small, big) << "claim visits blocked group members";
    small = CountClaimSteps(db, QueueId(db, "small-backlog"), 10, &rows_small);
    big = CountClaimSteps(db, QueueId(db, "big-backlog"), 10, &rows_big);
    EXPECT_EQ(rows_small, 10);
    EXPECT_EQ(rows_big, 10);
    EXPECT_EQ(small, big) << "claim cost grows with the backlog behind the batch";
  });
}

}  // namespace
}  // namespace mqlite
