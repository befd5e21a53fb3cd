// SPEC §8 — transactions: the application's own tables (through the sqlite3*
// of SqliteHandle) and TxContext queue operations commit or roll back
// together; misuse is refused with InvalidArgument.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "contract_util.h"

namespace mqlite::contract {
namespace {

// Runs one SQL statement on the Tx's handle; maps SQLite errors to Internal.
Status Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return Status::Internal("sqlite: " + msg + " in: " + sql);
  }
  return Status::OK();
}

Result<int64_t> QueryInt(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    return Status::Internal(std::string("prepare: ") + sqlite3_errmsg(db));
  }
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    sqlite3_finalize(st);
    return Status::Internal(std::string("step: ") + sqlite3_errmsg(db));
  }
  int64_t v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

OutgoingMessage Out(std::string body) {
  OutgoingMessage m;
  m.body = std::move(body);
  return m;
}

class TxTest : public ContractTest {
 protected:
  void SetUp() override {
    ContractTest::SetUp();
    MQ_ASSERT_OK(CreateQueue("a"));
    MQ_ASSERT_OK(CreateQueue("b"));
    // The application's own table, in the same file, created in a Tx.
    MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
      MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
      return Exec(db, "CREATE TABLE app_orders (id INTEGER PRIMARY KEY, note TEXT NOT NULL)");
    }));
  }

  // Rows in app_orders, read through the handle in a separate Tx.
  int64_t Rows() {
    int64_t n = -1;
    Status s = engine().Tx([&](TxContext& tx) -> Status {
      MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
      MQLITE_ASSIGN_OR_RETURN(n, QueryInt(db, "SELECT count(*) FROM app_orders"));
      return Status::OK();
    });
    EXPECT_TRUE(mqlite::testing::IsOk(s));
    return n;
  }
};

TEST_F(TxTest, Spec8_NativeHandleIsTheSqliteConnection) {
  // SPEC §8
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    EXPECT_EQ(tx.native_handle_type(), "sqlite3");
    EXPECT_NE(tx.native_handle(), nullptr);
    Result<sqlite3*> db = SqliteHandle(tx);
    EXPECT_TRUE(mqlite::testing::IsOk(db));
    if (db.has_value()) {
      EXPECT_EQ(static_cast<void*>(*db), tx.native_handle());
      // Inside the Tx's transaction.
      EXPECT_EQ(sqlite3_get_autocommit(*db), 0);
    }
    return Status::OK();
  }));
}

TEST_F(TxTest, Spec8_OkCommitsBusinessRowAndMessageTogether) {
  // SPEC §8 (outbox)
  int64_t seq = 0;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
    MQLITE_RETURN_IF_ERROR(Exec(db, "INSERT INTO app_orders (note) VALUES ('order-1')"));
    MQLITE_ASSIGN_OR_RETURN(seq, tx.Send("b", Out("order-1 placed")));
    return Status::OK();
  }));
  EXPECT_GT(seq, 0);
  EXPECT_EQ(Rows(), 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne("b"));
  EXPECT_EQ(m.seq, seq);
  EXPECT_EQ(m.body, "order-1 placed");
}

TEST_F(TxTest, Spec8_ReceiveSeesAMessageSentInACommittedTx) {
  // SPEC §8
  std::vector<int64_t> seqs;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    std::vector<OutgoingMessage> batch = {Out("x"), Out("y")};
    MQLITE_ASSIGN_OR_RETURN(seqs, tx.SendBatch("a", batch));
    return Status::OK();
  }));
  ASSERT_EQ(seqs.size(), 2u);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany("a", 10));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].seq, seqs[0]);
  EXPECT_EQ(got[1].seq, seqs[1]);
}

TEST_F(TxTest, Spec8_ErrorFromCallbackRollsBackBoth) {
  // SPEC §8
  Status s = engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
    MQLITE_RETURN_IF_ERROR(Exec(db, "INSERT INTO app_orders (note) VALUES ('doomed')"));
    MQLITE_RETURN_IF_ERROR(tx.Send("b", Out("doomed")).status());
    return Status::NotFound("business rule says no");
  });
  MQ_EXPECT_CODE(s, kNotFound);
  EXPECT_EQ(Rows(), 0);
  EXPECT_EQ(Total("b"), 0);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany("b", 10));
  EXPECT_TRUE(none.empty());
}

TEST_F(TxTest, Spec8_ExceptionRollsBackBothAndPropagates) {
  // SPEC §8
  EXPECT_THROW(
      {
        (void)engine().Tx([&](TxContext& tx) -> Status {
          Result<sqlite3*> db = SqliteHandle(tx);
          if (!db.has_value()) return db.error();
          MQLITE_RETURN_IF_ERROR(Exec(*db, "INSERT INTO app_orders (note) VALUES ('thrown')"));
          MQLITE_RETURN_IF_ERROR(tx.Send("b", Out("thrown")).status());
          throw std::runtime_error("boom");
        });
      },
      std::runtime_error);
  EXPECT_EQ(Rows(), 0);
  EXPECT_EQ(Total("b"), 0);
  // The engine is usable afterwards.
  MQ_EXPECT_OK(SendBody("b", "after"));
  EXPECT_EQ(Total("b"), 1);
}

TEST_F(TxTest, Spec8_ConsumeTransformProduceCommitsAll) {
  // SPEC §8 (exactly-once within one store)
  MQ_ASSERT_OK(SendBody("a", "input"));
  MQ_ASSERT_OK_AND_ASSIGN(Message in, ReceiveOne("a"));
  int64_t out_seq = 0;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
    MQLITE_RETURN_IF_ERROR(Exec(db, "INSERT INTO app_orders (note) VALUES ('transformed')"));
    MQLITE_ASSIGN_OR_RETURN(out_seq, tx.Send("b", Out(in.body + "-out")));
    return tx.Complete("a", in.seq, in.lock_token);
  }));
  EXPECT_EQ(Total("a"), 0);
  EXPECT_EQ(Rows(), 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message out, ReceiveOne("b"));
  EXPECT_EQ(out.seq, out_seq);
  EXPECT_EQ(out.body, "input-out");
  // The Complete inside the Tx wrote its receipt in the same commit.
  MQ_EXPECT_OK(engine().Complete("a", in.seq, in.lock_token));
}

TEST_F(TxTest, Spec8_ConsumeTransformProduceWithErrorRollsBackAll) {
  // SPEC §8
  MQ_ASSERT_OK(SendBody("a", "input"));
  MQ_ASSERT_OK_AND_ASSIGN(Message in, ReceiveOne("a"));
  Status s = engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
    MQLITE_RETURN_IF_ERROR(Exec(db, "INSERT INTO app_orders (note) VALUES ('transformed')"));
    MQLITE_RETURN_IF_ERROR(tx.Send("b", Out("out")).status());
    MQLITE_RETURN_IF_ERROR(tx.Complete("a", in.seq, in.lock_token));
    return Status::Unavailable("downstream said retry");
  });
  MQ_EXPECT_CODE(s, kUnavailable);

  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find("a", in.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  EXPECT_EQ(still.lock_token, in.lock_token);
  EXPECT_EQ(still.delivery_count, 1);
  EXPECT_EQ(Total("b"), 0);
  EXPECT_EQ(Rows(), 0);
  // The lease is intact: the same token completes now.
  MQ_EXPECT_OK(engine().Complete("a", in.seq, in.lock_token));
  EXPECT_EQ(Total("a"), 0);
}

TEST_F(TxTest, Spec8_AbandonRejectDeferInsideTxCommit) {
  // SPEC §8: Abandon, Reject and Defer join the transaction too.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody("a", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody("a", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, SendBody("a", "3"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany("a", 3));
  ASSERT_EQ(got.size(), 3u);
  // First a rolled-back attempt: nothing changes.
  MQ_EXPECT_CODE(engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(tx.Abandon("a", got[0].seq, got[0].lock_token));
    MQLITE_RETURN_IF_ERROR(tx.Reject("a", got[1].seq, got[1].lock_token, "Bad", "desc"));
    MQLITE_RETURN_IF_ERROR(tx.Defer("a", got[2].seq, got[2].lock_token));
    return Status::Internal("roll back");
  }),
                 kInternal);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st0, StatsOf("a"));
  EXPECT_EQ(st0.locked, 3);

  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(tx.Abandon("a", got[0].seq, got[0].lock_token));
    MQLITE_RETURN_IF_ERROR(tx.Reject("a", got[1].seq, got[1].lock_token, "Bad", "desc"));
    return tx.Defer("a", got[2].seq, got[2].lock_token);
  }));
  MQ_ASSERT_OK_AND_ASSIGN(Message m1, Find("a", s1));
  MQ_ASSERT_OK_AND_ASSIGN(Message m2, Find("a", s2));
  MQ_ASSERT_OK_AND_ASSIGN(Message m3, Find("a", s3));
  EXPECT_EQ(m1.state, MessageState::kActive);
  EXPECT_EQ(m2.state, MessageState::kDeadLettered);
  EXPECT_EQ(m2.dead_letter_reason, "Bad");
  EXPECT_EQ(m3.state, MessageState::kDeferred);
}

TEST_F(TxTest, Spec8_NestedTxIsInvalidArgument) {
  // SPEC §8
  Status inner = Status::OK();
  bool inner_ran = false;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    inner = engine().Tx([&](TxContext&) -> Status {
      inner_ran = true;
      return Status::OK();
    });
    return tx.Send("a", Out("outer")).status();
  }));
  MQ_EXPECT_CODE(inner, kInvalidArgument);
  EXPECT_FALSE(inner_ran);
  EXPECT_EQ(Total("a"), 1);
}

TEST_F(TxTest, Spec8_EngineMethodsInsideTheCallbackAreInvalidArgument) {
  // SPEC §8: use the TxContext, not the engine, inside the callback.
  MQ_ASSERT_OK(SendBody("a", "pre"));
  MQ_ASSERT_OK_AND_ASSIGN(Message locked, ReceiveOne("a"));
  MQ_ASSERT_OK(engine().Tx([&](TxContext&) -> Status {
    MQ_EXPECT_CODE(SendBody("b", "inside"), kInvalidArgument);
    std::vector<OutgoingMessage> batch = {Out("x")};
    MQ_EXPECT_CODE(engine().SendBatch("b", batch), kInvalidArgument);
    MQ_EXPECT_CODE(ReceiveMany("a", 1), kInvalidArgument);
    MQ_EXPECT_CODE(engine().Complete("a", locked.seq, locked.lock_token), kInvalidArgument);
    MQ_EXPECT_CODE(engine().Renew("a", locked.seq, locked.lock_token), kInvalidArgument);
    MQ_EXPECT_CODE(engine().Stats("a"), kInvalidArgument);
    MQ_EXPECT_CODE(engine().Peek("a"), kInvalidArgument);
    QueueConfig c;
    c.name = "c";
    MQ_EXPECT_CODE(engine().CreateQueue(c), kInvalidArgument);
    MQ_EXPECT_CODE(engine().RunMaintenance(), kInvalidArgument);
    MQ_EXPECT_CODE(engine().Close(), kInvalidArgument);
    return Status::OK();
  }));
  EXPECT_EQ(Total("b"), 0);
  MQ_EXPECT_CODE(engine().GetQueue("c"), kQueueNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find("a", locked.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  // The engine was not closed by the refused Close.
  MQ_EXPECT_OK(engine().Complete("a", locked.seq, locked.lock_token));
}

TEST_F(TxTest, Spec8_TxContextFromAnotherThreadIsInvalidArgument) {
  // SPEC §8, §9: a TxContext is valid only on the callback's thread.
  Status from_thread = Status::OK();
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    std::thread t([&] { from_thread = tx.Send("a", Out("other thread")).status(); });
    t.join();
    return Status::OK();
  }));
  MQ_EXPECT_CODE(from_thread, kInvalidArgument);
  EXPECT_EQ(Total("a"), 0);
}

TEST_F(TxTest, Spec8_CommitThroughTheHandleFailsTheTx) {
  // SPEC §8: committing the native transaction yourself is refused.
  Status s = engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
    MQLITE_RETURN_IF_ERROR(Exec(db, "INSERT INTO app_orders (note) VALUES ('early')"));
    return Exec(db, "COMMIT");
  });
  MQ_EXPECT_CODE(s, kInvalidArgument);
  // The engine keeps working afterwards.
  MQ_EXPECT_OK(SendBody("a", "after"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne("a"));
  EXPECT_EQ(m.body, "after");
}

TEST_F(TxTest, Spec8_RollbackThroughTheHandleFailsTheTx) {
  // SPEC §8: rolling back the native transaction yourself is refused.
  Status s = engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
    MQLITE_RETURN_IF_ERROR(tx.Send("a", Out("rolled")).status());
    return Exec(db, "ROLLBACK");
  });
  MQ_EXPECT_CODE(s, kInvalidArgument);
  EXPECT_EQ(Total("a"), 0);
  MQ_EXPECT_OK(SendBody("a", "after"));
  EXPECT_EQ(Total("a"), 1);
}

}  // namespace
}  // namespace mqlite::contract
