// RunTransaction (txn_runner.h) against a real server: which failures rerun
// a body and which never do (SPEC §10), the COMMIT that must not look like
// one after a failed statement, READ ONLY, and the deadline as lock_timeout.
// Server-side failures are real: SQLSTATEs raised by the server itself
// (RAISE ... USING ERRCODE), sessions killed with pg_terminate_backend, row
// locks held by another session.
#include "txn_runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "pg_test_util.h"
#include "suite_util.h"  // tck/src: the kit's assertion helpers

namespace mqlite::pg_internal {
namespace {

using Params = std::vector<std::optional<std::string>>;

class TxnRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = Connect();
    ASSERT_NE(admin_, nullptr);
    table_ = "mqlite_txn_test_" + std::to_string(::getpid());
    MQ_ASSERT_OK(admin_->Simple("DROP TABLE IF EXISTS " + table_, "drop"));
    MQ_ASSERT_OK(admin_->Simple("CREATE TABLE " + table_ + " (id bigint PRIMARY KEY)", "create"));
    Result<std::unique_ptr<PgPool>> pool = PgPool::Create(
        {.url = TestUrl(), .max_connections = 2, .session_setup = {kReadOnlyByDefault}});
    ASSERT_TRUE(pool.has_value()) << pool.status().ToString();
    pool_ = std::move(*pool);
  }
  void TearDown() override {
    pool_.reset();
    if (admin_) (void)admin_->Simple("DROP TABLE IF EXISTS " + table_, "drop");
  }
  Status Insert(PgConn& c, int64_t id) {
    return c.Simple("INSERT INTO " + table_ + " VALUES (" + std::to_string(id) + ")", "insert");
  }
  // A failure the server itself raises with `sqlstate`.
  static Status Raise(PgConn& c, const std::string& sqlstate) {
    return c.Simple("DO $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '" + sqlstate +
                        "'; END $$",
                    "raise " + sqlstate);
  }
  int64_t Rows() {
    Result<PgResult> r = admin_->Query("SELECT count(*) FROM " + table_, "count");
    EXPECT_TRUE(r.has_value()) << r.status().ToString();
    return r.has_value() ? r->i64(0, 0) : -1;
  }

  std::unique_ptr<PgConn> admin_;
  std::unique_ptr<PgPool> pool_;
  std::string table_;
};

// SPEC §10: a serialization failure or deadlock rolls the body back; a
// rerunnable body runs again and commits once.
TEST_F(TxnRunnerTest, Spec10_RerunnableBodyRunsAgainAfterSerializationFailureOrDeadlock) {
  for (const char* sqlstate : {"40001", "40P01"}) {
    MQ_ASSERT_OK(admin_->Simple("DELETE FROM " + table_, "clear"));
    int runs = 0;
    TxnCounters counters;
    MQ_EXPECT_OK(RunTransaction(*pool_, RunOptions{}, false, "Send",
                                [&](PgConn& c) -> Status {
                                  ++runs;
                                  MQLITE_RETURN_IF_ERROR(Insert(c, 1));
                                  if (runs == 1) return Raise(c, sqlstate);
                                  return Status::OK();
                                },
                                &counters))
        << sqlstate;
    EXPECT_EQ(runs, 2) << sqlstate;
    EXPECT_EQ(counters.attempts, 2) << sqlstate;
    EXPECT_EQ(Rows(), 1) << sqlstate << ": the first run was rolled back, the second committed";
  }
}

// The engine runs group-commit members in savepoints and wraps errors in
// context: a body that met a deadlock inside a savepoint, rolled the
// savepoint back (a later statement succeeding) and then failed with a
// status of its own still failed because of the deadlock, and reruns.
TEST_F(TxnRunnerTest, Spec10_ADeadlockSwallowedInASavepointStillReruns) {
  int runs = 0;
  MQ_EXPECT_OK(RunTransaction(*pool_, RunOptions{}, false, "CompleteBatch",
                              [&](PgConn& c) -> Status {
                                ++runs;
                                MQLITE_RETURN_IF_ERROR(Insert(c, 1));
                                if (runs > 1) return Status::OK();
                                MQLITE_RETURN_IF_ERROR(c.Simple("SAVEPOINT sp", "savepoint"));
                                const Status member = Raise(c, "40P01");
                                MQLITE_RETURN_IF_ERROR(c.Simple("ROLLBACK TO SAVEPOINT sp", "rb"));
                                return Status::Unavailable("member 2: " +
                                                           std::string(member.message()));
                              }));
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(Rows(), 1);
}

// A Tx body (application code) is never rerun: the failure comes back.
TEST_F(TxnRunnerTest, Spec10_ATxBodyIsNeverRerun) {
  RunOptions tx;
  tx.rerunnable = false;
  int runs = 0;
  const Status s = RunTransaction(*pool_, tx, false, "Tx", [&](PgConn& c) -> Status {
    ++runs;
    MQLITE_RETURN_IF_ERROR(Insert(c, 1));
    return Raise(c, "40001");
  });
  MQ_EXPECT_CODE(s, kUnavailable);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(Rows(), 0);
}

// Errors that are not transient are never retried, rerunnable or not.
TEST_F(TxnRunnerTest, Spec10_OtherErrorsAreNotRetried) {
  int runs = 0;
  const Status s = RunTransaction(*pool_, RunOptions{}, false, "Send", [&](PgConn& c) -> Status {
    ++runs;
    return Raise(c, "22012");  // division_by_zero
  });
  MQ_EXPECT_CODE(s, kInternal);
  EXPECT_EQ(runs, 1);
  // A body failing on its own terms (no SQL error) is not retried either.
  runs = 0;
  MQ_EXPECT_CODE(RunTransaction(*pool_, RunOptions{}, false, "Send",
                                [&](PgConn&) -> Status {
                                  ++runs;
                                  return Status::Unavailable("the body's own verdict");
                                }),
                 kUnavailable);
  EXPECT_EQ(runs, 1);
}

// The session dies mid-body (before COMMIT was sent): nothing committed, so
// a rerunnable body runs again on a fresh connection and commits once.
TEST_F(TxnRunnerTest, Spec10_ASessionKilledBeforeCommitIsRerunOnAFreshConnection) {
  int runs = 0;
  std::vector<int> pids;
  MQ_EXPECT_OK(RunTransaction(*pool_, RunOptions{}, false, "Send", [&](PgConn& c) -> Status {
    ++runs;
    pids.push_back(PQbackendPID(c.raw()));
    MQLITE_RETURN_IF_ERROR(Insert(c, 7));
    if (runs == 1) {
      MQLITE_RETURN_IF_ERROR(admin_->Simple(
          "SELECT pg_terminate_backend(" + std::to_string(pids.back()) + ")", "terminate"));
      return Insert(c, 8);  // the session is gone
    }
    return Status::OK();
  }));
  EXPECT_EQ(runs, 2);
  ASSERT_EQ(pids.size(), 2u);
  EXPECT_NE(pids[0], pids[1]) << "the rerun had a new session";
  EXPECT_EQ(Rows(), 1);
}

// LESSONS: after a failed statement, COMMIT answers ROLLBACK without an
// error. A body that swallows the failure and returns OK must not look
// committed.
TEST_F(TxnRunnerTest, Spec10_ABodyThatSwallowsAFailedStatementFails) {
  RunOptions tx;
  tx.rerunnable = false;
  const Status s = RunTransaction(*pool_, tx, false, "Tx", [&](PgConn& c) -> Status {
    MQLITE_RETURN_IF_ERROR(Insert(c, 1));
    (void)Insert(c, 1);  // duplicate key: the transaction is now failed
    return Status::OK();
  });
  MQ_EXPECT_CODE(s, kInternal);
  EXPECT_NE(std::string(s.message()).find("nothing committed"), std::string::npos) << s.ToString();
  EXPECT_EQ(Rows(), 0);
  EXPECT_EQ(pool_->idle_connections(), 1) << "the connection was rolled back and reused";
}

// Reads run without BEGIN/COMMIT (each statement its own snapshot, as
// READ COMMITTED gives anyway) on sessions whose transactions default to
// read-only: a write in a read is refused by the server.
TEST_F(TxnRunnerTest, ReadsRunReadOnly) {
  const Status s = RunTransaction(*pool_, RunOptions{}, true, "Peek",
                                  [&](PgConn& c) -> Status { return Insert(c, 1); });
  MQ_EXPECT_CODE(s, kInternal);
  EXPECT_NE(std::string(s.message()).find("25006"), std::string::npos) << s.ToString();
  EXPECT_EQ(Rows(), 0);
}

// SPEC §10: the deadline bounds lock waits (SET LOCAL lock_timeout): a body
// stuck behind another session's row lock ends as Cancelled near the
// deadline, having changed nothing.
TEST_F(TxnRunnerTest, Spec10_TheDeadlineBoundsLockWaits) {
  MQ_ASSERT_OK(admin_->Simple("INSERT INTO " + table_ + " VALUES (1)", "row"));
  MQ_ASSERT_OK(admin_->Simple("BEGIN", "begin"));
  MQ_ASSERT_OK(admin_->Simple("SELECT * FROM " + table_ + " WHERE id = 1 FOR UPDATE", "lock"));
  RunOptions soon;
  soon.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  int runs = 0;
  const Status s = RunTransaction(*pool_, soon, false, "Complete", [&](PgConn& c) -> Status {
    ++runs;
    return c.Simple("DELETE FROM " + table_ + " WHERE id = 1", "delete the locked row");
  });
  MQ_EXPECT_CODE(s, kCancelled);
  EXPECT_EQ(runs, 1);
  MQ_ASSERT_OK(admin_->Commit());
  EXPECT_EQ(Rows(), 1);

  RunOptions past;
  past.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  runs = 0;
  MQ_EXPECT_CODE(RunTransaction(*pool_, past, false, "Send",
                                [&](PgConn&) -> Status {
                                  ++runs;
                                  return Status::OK();
                                }),
                 kCancelled);
  EXPECT_EQ(runs, 0) << "a call past its deadline runs nothing";
}

// A rerunnable body that keeps failing transiently stops after kMaxAttempts.
TEST_F(TxnRunnerTest, RetriesAreBounded) {
  int runs = 0;
  MQ_EXPECT_CODE(RunTransaction(*pool_, RunOptions{}, false, "Send",
                                [&](PgConn& c) -> Status {
                                  ++runs;
                                  return Raise(c, "40001");
                                }),
                 kUnavailable);
  EXPECT_EQ(runs, kMaxAttempts);
}

}  // namespace
}  // namespace mqlite::pg_internal
