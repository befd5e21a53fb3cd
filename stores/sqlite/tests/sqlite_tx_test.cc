// SPEC §8 on SQLite specifically: the Tx's native handle is the store's own
// sqlite3* (SqliteHandle), inside the Tx's transaction; COMMIT or ROLLBACK
// through it is detected and fails the Tx; SqliteHandle after the callback is
// refused. Everything store-independent about Tx (commit and roll back
// together, business writes through the handle, nesting, kept contexts,
// cancellation) is in the conformance kit (TckTransactions).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <utility>

#include "mqlite/engine.h"
#include "mqlite/sqlite.h"
#include "test_util.h"

namespace mqlite {
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

OutgoingMessage Out(std::string body) {
  OutgoingMessage m;
  m.body = std::move(body);
  return m;
}

class SqliteTxTest : public ::mqlite::testing::SqliteEngineTest {
 protected:
  void SetUp() override {
    SqliteEngineTest::SetUp();
    if (HasFatalFailure()) return;
    MQ_ASSERT_OK(CreateQueue("a"));
    // The application's own table, in the same file, created in a Tx.
    MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
      MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
      return Exec(db, "CREATE TABLE app_orders (id INTEGER PRIMARY KEY, note TEXT NOT NULL)");
    }));
  }

  int64_t Total(std::string_view queue) {
    Result<QueueStats> s = engine().Stats(queue);
    EXPECT_TRUE(::mqlite::testing::IsOk(s));
    return s.has_value() ? s->total : -1;
  }
};

TEST_F(SqliteTxTest, Spec8_NativeHandleIsTheSqliteConnection) {
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    EXPECT_EQ(tx.native_handle_type(), "sqlite3");
    EXPECT_NE(tx.native_handle(), nullptr);
    Result<sqlite3*> db = SqliteHandle(tx);
    EXPECT_TRUE(::mqlite::testing::IsOk(db));
    if (db.has_value()) {
      EXPECT_EQ(static_cast<void*>(*db), tx.native_handle());
      // Inside the Tx's transaction.
      EXPECT_EQ(sqlite3_get_autocommit(*db), 0);
    }
    return Status::OK();
  }));
}

TEST_F(SqliteTxTest, Spec8_CommitThroughTheHandleFailsTheTx) {
  // Committing the native transaction yourself is refused.
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

TEST_F(SqliteTxTest, Spec8_RollbackThroughTheHandleFailsTheTx) {
  // Rolling back the native transaction yourself is refused.
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

TEST_F(SqliteTxTest, Spec8_SqliteHandleAfterTheCallbackIsInvalidArgument) {
  // sqlite.h: SqliteHandle is "InvalidArgument if ... its callback has
  // returned". (A kept TxContext is safe to call: the engine pools them.)
  TxContext* kept = nullptr;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    kept = &tx;
    return Status::OK();
  }));
  ASSERT_NE(kept, nullptr);
  MQ_EXPECT_CODE(SqliteHandle(*kept), kInvalidArgument);
}

}  // namespace
}  // namespace mqlite
