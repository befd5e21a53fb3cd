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

#include "backlog.h"
#include "mqlite/engine.h"
#include "mqlite/sqlite.h"
#include "queries.h"

namespace mqlite {
namespace {

// Statement → a plan row it must contain. "" = no plan rows (plain INSERT).
const std::map<std::string, std::vector<std::string>>& Expectations() {
  static const auto* m = new std::map<std::string, std::vector<std::string>>{
      {"kQueueHasMessages", {"SEARCH mqlite_messages USING COVERING INDEX mqlite_msg_state (queue_id=?)"}},
      {"kUpdateQueue", {"SEARCH mqlite_queues USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kInsertQueue", {}},
      {"kGetQueue", {"SEARCH mqlite_queues USING INDEX sqlite_autoindex_mqlite_queues_1 (name=?)"}},
      // Listing every queue is inherently a walk of the (small) queue table.
      {"kListQueues", {"SCAN mqlite_queues USING INDEX sqlite_autoindex_mqlite_queues_1"}},
      {"kDeleteQueueMessages", {"SEARCH mqlite_messages USING INDEX mqlite_msg_state (queue_id=?)"}},
      {"kDeleteQueueRow", {"SEARCH mqlite_queues USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kInsertMessage", {}},
      // One claim statement serves all three ordering modes: group order lives
      // in the is_head flag, so the same index seek holds for each.
      {"kClaimCandidates", {"SEARCH mqlite_messages USING INDEX mqlite_msg_claim (queue_id=?)"}},
      {"kLockMessage", {"SEARCH mqlite_messages USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kDeleteReturning", {"SEARCH mqlite_messages USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kAbandonDelayed", {"SEARCH mqlite_messages USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kRenew", {"SEARCH mqlite_messages USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kPeekState", {"SEARCH mqlite_messages USING INDEX mqlite_msg_state (queue_id=? AND state=? AND seq>?)"}},
      // Stats counts a queue's rows through the covering state index (an
      // admin call: O(queue size), never the whole table).
      {"kStatsCounts", {"SEARCH mqlite_messages USING INDEX mqlite_msg_state (queue_id=?)"}},
      {"kOldestClaimable", {"SEARCH mqlite_messages USING INDEX mqlite_msg_state (queue_id=? AND state=?)"}},
      {"kGetGroupId", {"SEARCH mqlite_messages USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kRedriveInsert", {"SEARCH mqlite_messages USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kPromoteDue", {"SEARCH mqlite_messages USING INDEX mqlite_msg_due (queue_id=? AND visible_at<?)"}},
      {"kExpiredLeases", {"SEARCH mqlite_messages USING INDEX mqlite_msg_lease (queue_id=? AND locked_until<?)"}},
      {"kExpiredTtl", {"SEARCH mqlite_messages USING INDEX mqlite_msg_ttl (queue_id=? AND expires_at>? AND expires_at<?)"}},
      {"kDlqTotals", {"SEARCH mqlite_queues USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kRetentionCandidates", {"SEARCH mqlite_messages USING INDEX mqlite_msg_dlq (queue_id=?)"}},
      {"kFindDedup", {"SEARCH mqlite_dedup USING PRIMARY KEY (queue_id=? AND key=?)"}},
      {"kPutDedup", {}},
      {"kFindReceipt", {"SEARCH mqlite_receipts USING PRIMARY KEY (key=?)"}},
      {"kPutReceipt", {}},
      {"kFindAttempt", {"SEARCH mqlite_attempts USING PRIMARY KEY (attempt_id=?)"}},
      {"kPutAttempt", {}},
      {"kExpiredDedup", {"SEARCH mqlite_dedup USING COVERING INDEX mqlite_dedup_expiry (expires_at<?)"}},
      {"kDeleteDedup", {"SEARCH mqlite_dedup USING PRIMARY KEY (queue_id=? AND key=?)"}},
      {"kDropReceipts", {"SEARCH mqlite_receipts USING COVERING INDEX mqlite_receipts_expiry (expires_at<?)"}},
      {"kDropAttempts", {"SEARCH mqlite_attempts USING COVERING INDEX mqlite_attempts_expiry (expires_at<?)"}},
      {"kLoadRef", {"SEARCH mqlite_messages USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kGroupHasLive", {"SEARCH mqlite_messages USING INDEX mqlite_msg_group (queue_id=? AND group_key=?)"}},
      {"kPromoteNextHead", {"SEARCH mqlite_messages USING INDEX mqlite_msg_group (queue_id=? AND group_key=?)"}},
      {"kUnlock", {"SEARCH mqlite_messages USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kDeleteMessage", {"SEARCH mqlite_messages USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kDlqDecrement", {"SEARCH mqlite_queues USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kDeadLetter", {"SEARCH mqlite_messages USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kClearHead", {"SEARCH mqlite_messages USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kDlqIncrement", {"SEARCH mqlite_queues USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kOldestDead", {"SEARCH mqlite_messages USING INDEX mqlite_msg_dlq (queue_id=? AND dead_lettered_at<?)"}},
      // Open-time only: looks for our table among the file's tables.
      {"kFreelistCount", {}},  // a pragma: no plan
      {"kHasMetaTable", {"SCAN sqlite_master"}},
      {"kSchemaToken", {"SEARCH mqlite_meta USING PRIMARY KEY (key=?)"}},
      {"kInsertSchemaToken", {}},
  };
  return *m;
}

// Plan rows that must never appear for any catalog statement.
const std::vector<std::string> kForbidden = {
    "SCAN mqlite_messages", "SCAN mqlite_dedup", "SCAN mqlite_receipts", "SCAN mqlite_attempts",
    "TEMP B-TREE",
};

std::vector<std::string> Explain(sqlite3* db, const char* sql) {
  std::vector<std::string> rows;
  std::string q = std::string("EXPLAIN QUERY PLAN ") + sql;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, q.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    rows.push_back(std::string("PREPARE FAILED: ") + sqlite3_errmsg(db));
    return rows;
  }
  while (sqlite3_step(st) == SQLITE_ROW) {
    rows.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 3)));
  }
  sqlite3_finalize(st);
  return rows;
}

std::string Join(const std::vector<std::string>& rows) {
  std::string out;
  for (const auto& r : rows) out += "\n    " + r;
  return out;
}

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
  testing::BuildMixedBacklog(*engine_, clock_, 10'000);
  WithDb([&](sqlite3* db) {
    ASSERT_EQ(sqlite3_exec(db, "ANALYZE", nullptr, nullptr, nullptr), SQLITE_OK);
    std::set<std::string> seen;
    for (const auto& q : internal::kAllQueries) {
      seen.insert(q.name);
      auto it = Expectations().find(q.name);
      ASSERT_NE(it, Expectations().end())
          << q.name << " has no plan expectation; pin it here.\n  plan:" << Join(Explain(db, q.sql));
      std::vector<std::string> plan = Explain(db, q.sql);
      for (const auto& row : plan) {
        EXPECT_EQ(row.find("PREPARE FAILED"), std::string::npos) << q.name << ": " << row;
        for (const auto& bad : kForbidden) {
          EXPECT_EQ(row.find(bad), std::string::npos)
              << q.name << " plans a '" << bad << "':" << Join(plan);
        }
      }
      for (const auto& want : it->second) {
        bool found = false;
        for (const auto& row : plan) found |= row == want;
        EXPECT_TRUE(found) << q.name << " does not use '" << want << "'; plan:" << Join(plan);
      }
      if (it->second.empty()) {
        EXPECT_TRUE(plan.empty()) << q.name << " was pinned as plan-less:" << Join(plan);
      }
    }
    for (const auto& [name, rows] : Expectations()) {
      EXPECT_TRUE(seen.count(name)) << name << " is pinned but not in the catalog";
    }
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
