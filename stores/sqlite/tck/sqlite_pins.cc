#include "sqlite_pins.h"

#include <sqlite3.h>

#include <set>
#include <utility>

#include "mqlite/sqlite.h"
#include "queries.h"

namespace mqlite::tck {

namespace {

const std::vector<std::string> kForbidden = {
    "SCAN mqlite_messages", "SCAN mqlite_dedup", "SCAN mqlite_receipts", "SCAN mqlite_attempts",
    "TEMP B-TREE",
};

// Statements allowed a sort, and why. Peek of the locked messages in seq
// order sorts the queue's leases in flight (the lease index holds them by
// expiry): O(messages locked in that queue), bounded by its consumers, never
// by the backlog — walking klass 0 of the key in seq order instead would
// visit every active message.
const std::set<std::string> kSortAllowed = {"kPeekLocked"};

std::string Join(const std::vector<std::string>& rows) {
  std::string out;
  for (const auto& r : rows) out += "\n    " + r;
  return out;
}

}  // namespace

// Statement → a plan row it must contain. "" = no plan rows (plain INSERT).
const std::map<std::string, std::vector<std::string>>& SqlitePlanExpectations() {
  static const auto* m = new std::map<std::string, std::vector<std::string>>{
      // Messages are clustered by (queue_id, klass, seq): a message is one
      // seek of that key; a queue, or one klass of it, a range.
      {"kQueueHasMessages", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=?)"}},
      {"kUpdateQueue", {"SEARCH mqlite_queues USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kInsertQueue", {}},
      {"kGetQueue", {"SEARCH mqlite_queues USING INDEX sqlite_autoindex_mqlite_queues_1 (name=?)"}},
      // Listing every queue is inherently a walk of the (small) queue table.
      {"kListQueues", {"SCAN mqlite_queues USING INDEX sqlite_autoindex_mqlite_queues_1"}},
      {"kDeleteQueueMessages", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=?)"}},
      {"kDeleteQueueRow", {"SEARCH mqlite_queues USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kInsertMessage", {}},
      {"kInsertMessages", {"SCAN 64 CONSTANT ROWS"}},
      // One claim statement serves all three ordering modes: group order lives
      // in the is_head flag, so the same index seek holds for each.
      {"kClaimCandidates", {"SEARCH mqlite_messages USING INDEX mqlite_msg_claim (queue_id=?)"}},
      {"kLockActive", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kLockActives", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kLockDeferred", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kLoadMessage", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kAbandonDelayed", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kRenew", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kPeekKlass", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq>?)"}},
      // Sorts the queue's locked messages (see kSortAllowed).
      {"kPeekLocked", {"SEARCH mqlite_messages USING INDEX mqlite_msg_time (queue_id=? AND state=?)"}},
      // Stats counts a queue's messages through the key (an admin call:
      // O(queue size), never the whole table).
      {"kStatsCounts", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=?)"}},
      // Stats' oldest claimable: bounded seeks (LIMIT kStatsProbeLimit + 1).
      {"kOldestHeadsOfPriority", {"SEARCH mqlite_messages USING INDEX mqlite_msg_claim (queue_id=? AND priority=?)"}},
      {"kOldestRedrivenHeads", {"SEARCH mqlite_messages USING INDEX mqlite_msg_redriven (queue_id=?)"}},
      {"kDueScheduled", {"SEARCH mqlite_messages USING INDEX mqlite_msg_time (queue_id=? AND state=? AND due_at<?)"}},
      {"kLapsedLeases", {"SEARCH mqlite_messages USING INDEX mqlite_msg_time (queue_id=? AND state=? AND due_at<?)"}},
      {"kGetGroupId", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kRedriveInsert", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kAnyDue", {"SEARCH mqlite_messages USING INDEX mqlite_msg_time (queue_id=? AND state=? AND due_at<?)"}},
      {"kPromoteDue", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)", "SEARCH mqlite_messages USING INDEX mqlite_msg_time (queue_id=? AND state=? AND due_at<?)"}},
      {"kExpiredLeases", {"SEARCH mqlite_messages USING INDEX mqlite_msg_time (queue_id=? AND state=? AND due_at<?)"}},
      {"kExpiredTtl", {"SEARCH mqlite_messages USING INDEX mqlite_msg_ttl (queue_id=? AND expires_at>? AND expires_at<?)"}},
      {"kDlqTotals", {"SEARCH mqlite_queues USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kRetentionCandidates", {"SEARCH mqlite_messages USING INDEX mqlite_msg_time (queue_id=? AND state=?)"}},
      {"kFindDedup", {"SEARCH mqlite_dedup USING PRIMARY KEY (queue_id=? AND key=?)"}},
      {"kPutDedup", {}},
      {"kFindReceipt", {"SEARCH mqlite_receipts USING PRIMARY KEY (key=?)"}},
      {"kPutReceipt", {}},
      {"kPutReceipts", {"SCAN 64 CONSTANT ROWS"}},
      {"kFindAttempt", {"SEARCH mqlite_attempts USING PRIMARY KEY (attempt_id=?)"}},
      {"kPutAttempt", {}},
      {"kExpiredDedup", {"SEARCH mqlite_dedup USING COVERING INDEX mqlite_dedup_expiry (expires_at<?)"}},
      {"kDeleteDedup", {"SEARCH mqlite_dedup USING PRIMARY KEY (queue_id=? AND key=?)"}},
      // The receipt sweep: a bounded range of the key from the cursor.
      {"kSweepReceipts", {"SEARCH mqlite_receipts USING PRIMARY KEY (key>?)"}},
      {"kDeleteReceipt", {"SEARCH mqlite_receipts USING PRIMARY KEY (key=?)"}},
      {"kDropAttempts", {"SEARCH mqlite_attempts USING COVERING INDEX mqlite_attempts_expiry (expires_at<?)"}},
      {"kLoadRef", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      // state IN (0, 1, 2, 3, 4): one seek of the key per state.
      {"kLoadAnyRef", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kGroupHasLive", {"SEARCH mqlite_messages USING INDEX mqlite_msg_group (queue_id=? AND group_key=?)"}},
      {"kNextHead", {"SEARCH mqlite_messages USING INDEX mqlite_msg_group (queue_id=? AND group_key=?)"}},
      {"kSetHead", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kUnlockToActive", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kUnlockToDeferred", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kDeleteMessage", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kCompleteUngrouped",
       {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kIsHead", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kDlqDecrement", {"SEARCH mqlite_queues USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kDeadLetter", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kClearHead", {"SEARCH mqlite_messages USING PRIMARY KEY (queue_id=? AND klass=? AND seq=?)"}},
      {"kDlqIncrement", {"SEARCH mqlite_queues USING INTEGER PRIMARY KEY (rowid=?)"}},
      {"kOldestDead", {"SEARCH mqlite_messages USING INDEX mqlite_msg_time (queue_id=? AND state=? AND due_at<?)"}},
      // Open-time only: looks for our table among the file's tables.
      {"kFreelistCount", {}},  // a pragma: no plan
      {"kHasMetaTable", {"SCAN sqlite_master"}},
      {"kSchemaToken", {"SEARCH mqlite_meta USING PRIMARY KEY (key=?)"}},
      {"kInsertSchemaToken", {}},
      {"kSeqReserved", {"SEARCH mqlite_meta USING PRIMARY KEY (key=?)"}},
      {"kReserveSeqs", {}},
  };
  return *m;
}

std::vector<std::string> SqliteExplain(sqlite3* db, const char* sql) {
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

std::string CheckSqlitePlans(sqlite3* db) {
  std::string out;
  std::set<std::string> seen;
  for (const auto& q : internal::kAllQueries) {
    seen.insert(q.name);
    std::vector<std::string> plan = SqliteExplain(db, q.sql);
    auto it = SqlitePlanExpectations().find(q.name);
    if (it == SqlitePlanExpectations().end()) {
      out += std::string(q.name) + " has no plan expectation; pin it." + Join(plan) + "\n";
      continue;
    }
    for (const auto& row : plan) {
      if (row.find("PREPARE FAILED") != std::string::npos) out += std::string(q.name) + ": " + row + "\n";
      for (const auto& bad : kForbidden) {
        if (bad == "TEMP B-TREE" && kSortAllowed.count(q.name)) continue;
        if (row.find(bad) != std::string::npos) {
          out += std::string(q.name) + " plans a '" + bad + "':" + Join(plan) + "\n";
        }
      }
    }
    for (const auto& want : it->second) {
      bool found = false;
      for (const auto& row : plan) found |= row == want;
      if (!found) out += std::string(q.name) + " does not use '" + want + "'; plan:" + Join(plan) + "\n";
    }
    if (it->second.empty() && !plan.empty()) {
      out += std::string(q.name) + " was pinned as plan-less:" + Join(plan) + "\n";
    }
  }
  for (const auto& [name, rows] : SqlitePlanExpectations()) {
    if (!seen.count(name)) out += name + " is pinned but not in the catalog\n";
  }
  return out;
}

Status BuildMixedBacklog(Engine& e, int per_queue) {
  for (auto [name, ordering] : {std::pair{"std", Ordering::kStandard},
                                std::pair{"gf", Ordering::kGroupFifo},
                                std::pair{"sf", Ordering::kStrictFifo}}) {
    QueueConfig c;
    c.name = name;
    c.ordering = ordering;
    c.dedup_window_ms = 600'000;
    MQLITE_RETURN_IF_ERROR(e.CreateQueue(c).status());
    int sent = 0;
    while (sent < per_queue) {
      std::vector<OutgoingMessage> batch;
      for (int i = 0; i < 1000 && sent < per_queue; ++i, ++sent) {
        OutgoingMessage m;
        m.body = std::string(name) + "-" + std::to_string(sent);
        m.message_id = m.body;
        m.priority = sent % 10;
        if (ordering != Ordering::kStandard || sent % 2 == 0) {
          m.group_id = "g" + std::to_string(sent % 50);
        }
        if (sent % 7 == 0) m.delay_ms = 3'600'000;  // scheduled
        if (sent % 11 == 0) m.ttl_ms = 7'200'000;
        batch.push_back(std::move(m));
      }
      MQLITE_RETURN_IF_ERROR(e.SendBatch(name, batch).status());
    }
    // Lock, defer, dead-letter and complete some of them.
    for (int round = 0; round < 8; ++round) {
      ReceiveOptions o;
      o.max_messages = 256;
      o.attempt_id = std::string(name) + "-attempt-" + std::to_string(round);
      MQLITE_ASSIGN_OR_RETURN(std::vector<Message> got, e.Receive(name, o));
      for (size_t i = 0; i < got.size(); ++i) {
        const Message& m = got[i];
        switch (i % 4) {
          case 0: MQLITE_RETURN_IF_ERROR(e.Defer(name, m.seq, m.lock_token)); break;
          case 1: MQLITE_RETURN_IF_ERROR(e.Reject(name, m.seq, m.lock_token, "bad", "pinned")); break;
          case 2: MQLITE_RETURN_IF_ERROR(e.Complete(name, m.seq, m.lock_token)); break;
          default: break;  // stays locked
        }
      }
    }
  }
  return Status::OK();
}

Status RunSqlitePlanPins(StoreFixture& fixture) {
  MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, fixture.Open());
  ManualClock clock;
  EngineOptions eo;
  eo.clock = &clock;
  eo.background_maintenance = false;
  MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Open(std::move(store), eo));
  MQLITE_RETURN_IF_ERROR(BuildMixedBacklog(*engine, 10'000));
  clock.Advance(1);
  std::string failures;
  Status s = engine->Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(sqlite3* db, SqliteHandle(tx));
    if (sqlite3_exec(db, "ANALYZE", nullptr, nullptr, nullptr) != SQLITE_OK) {
      return Status::Internal(std::string("ANALYZE: ") + sqlite3_errmsg(db));
    }
    failures = CheckSqlitePlans(db);
    return Status::OK();
  });
  MQLITE_RETURN_IF_ERROR(engine->Close());
  MQLITE_RETURN_IF_ERROR(s);
  if (!failures.empty()) return Status::Internal("plan pins violated:\n" + failures);
  return Status::OK();
}

}  // namespace mqlite::tck
