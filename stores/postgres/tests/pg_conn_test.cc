// The PostgreSQL store's connection layer against a real server (the CTest
// fixture pg_test_cluster.sh starts one, or MQLITE_TEST_PG_URL names one):
// prepared statements, the SPEC §10 error classification with real
// deadlocks, serialization failures and killed sessions, COMMIT's result
// tag, and the pool's cancellable wait (RunOptions).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "pg_conn.h"
#include "pg_test_util.h"
#include "pool.h"
#include "suite_util.h"  // tck/src: the kit's assertion helpers

namespace mqlite::pg_internal {
namespace {

using Params = std::vector<std::optional<std::string>>;

// A table of this process's own (tests run in parallel against one server).
class PgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = Connect();
    ASSERT_NE(admin_, nullptr);
    table_ = "mqlite_conn_test_" + std::to_string(::getpid());
    MQ_ASSERT_OK(admin_->Simple("DROP TABLE IF EXISTS " + table_, "drop"));
    MQ_ASSERT_OK(admin_->Simple(
        "CREATE TABLE " + table_ + " (id bigint PRIMARY KEY, v text)", "create"));
    MQ_ASSERT_OK(admin_->Simple("INSERT INTO " + table_ + " VALUES (1, 'a'), (2, 'b')", "fill"));
  }
  void TearDown() override {
    if (admin_) (void)admin_->Simple("DROP TABLE IF EXISTS " + table_, "drop");
  }
  int64_t CountRows() {
    Result<PgResult> r = admin_->Query("SELECT count(*) FROM " + table_, "count");
    EXPECT_TRUE(r.has_value()) << r.status().ToString();
    return r.has_value() ? r->i64(0, 0) : -1;
  }

  std::unique_ptr<PgConn> admin_;
  std::string table_;
};

TEST_F(PgTest, PreparedStatementsTakeTextParametersAndNulls) {
  std::unique_ptr<PgConn> c = Connect();
  ASSERT_NE(c, nullptr);
  const std::string ins_sql = "INSERT INTO " + table_ + " (id, v) VALUES ($1::bigint, $2)";
  const Statement ins{"ins", ins_sql.c_str()};
  MQ_ASSERT_OK(c->Exec(ins, Params{"3", std::nullopt}));
  MQ_ASSERT_OK(c->Exec(ins, Params{"4", std::string("x\ty")}));  // prepared once, run twice
  const std::string sel_sql = "SELECT id, v FROM " + table_ + " WHERE id >= $1::bigint ORDER BY id";
  const Statement sel{"sel", sel_sql.c_str()};
  MQ_ASSERT_OK_AND_ASSIGN(PgResult r, c->Exec(sel, Params{"3"}));
  ASSERT_EQ(r.rows(), 2);
  EXPECT_EQ(r.i64(0, 0), 3);
  EXPECT_TRUE(r.null(0, 1));
  EXPECT_EQ(r.text(1, 1), "x\ty");
  EXPECT_EQ(c->last_error().failure, Failure::kNone);
}

// A plan_each_time statement is planned for its values even where the
// session forces generic plans (the store's sessions do: queries.h): it
// reaches the server with its values written into its text — a statement
// without parameters, planned for those constants — quotes and NULLs
// included. (EXPLAIN would not tell: it plans with its parameters' values
// either way.)
TEST_F(PgTest, Spec11_APlannedEachTimeStatementIsPlannedForItsValues) {
  std::unique_ptr<PgConn> c = Connect();
  ASSERT_NE(c, nullptr);
  MQ_ASSERT_OK(c->Simple("SET plan_cache_mode TO force_generic_plan", "generic plans"));
  const Statement sent{"sent", "SELECT current_query() WHERE $1::bigint > 0", true};
  MQ_ASSERT_OK_AND_ASSIGN(PgResult text, c->Exec(sent, Params{"1234567"}));
  ASSERT_EQ(text.rows(), 1);
  EXPECT_EQ(std::string(text.text(0, 0)), "SELECT current_query() WHERE '1234567'::bigint > 0");

  const Statement echo{"echo", "SELECT $1::text, $2::text IS NULL, length($1::text)", true};
  const std::string tricky = "it's a \\ 'quote'; $2";
  MQ_ASSERT_OK_AND_ASSIGN(PgResult r, c->Exec(echo, Params{tricky, std::nullopt}));
  ASSERT_EQ(r.rows(), 1);
  EXPECT_EQ(r.text(0, 0), tricky);
  EXPECT_EQ(r.text(0, 1), "t");
  EXPECT_EQ(r.i64(0, 2), static_cast<int64_t>(tricky.size()));
}

TEST_F(PgTest, Spec10_ConnectFailureIsUnavailableAndNeverEchoesThePassword) {
  Result<std::unique_ptr<PgConn>> c = PgConn::Connect(
      "host=127.0.0.1 port=1 user=nobody password=s3cret-pw dbname=postgres connect_timeout=5");
  MQ_ASSERT_CODE(c, kUnavailable);
  EXPECT_EQ(std::string(c.status().message()).find("s3cret-pw"), std::string::npos)
      << c.status().ToString();
  EXPECT_NE(std::string(c.status().message()).find("127.0.0.1"), std::string::npos)
      << "the message names the server: " << c.status().ToString();
}

// SPEC §10: a serialization failure is transient — Unavailable, retryable.
// Real: a REPEATABLE READ transaction updates a row another transaction
// changed and committed after its snapshot was taken.
TEST_F(PgTest, Spec10_SerializationFailureIsRetryable) {
  std::unique_ptr<PgConn> a = Connect();
  std::unique_ptr<PgConn> b = Connect();
  ASSERT_TRUE(a && b);
  MQ_ASSERT_OK(a->Simple("BEGIN ISOLATION LEVEL REPEATABLE READ", "begin"));
  MQ_ASSERT_OK(a->Simple("SELECT * FROM " + table_, "snapshot"));
  MQ_ASSERT_OK(b->Simple("UPDATE " + table_ + " SET v = 'b-won' WHERE id = 1", "b updates"));
  const Status s = a->Simple("UPDATE " + table_ + " SET v = 'a-lost' WHERE id = 1", "a updates");
  MQ_EXPECT_CODE(s, kUnavailable);
  EXPECT_EQ(a->last_error().failure, Failure::kRetryable);
  EXPECT_EQ(a->last_error().sqlstate, "40001");
  a->Rollback();
  EXPECT_EQ(a->txn_status(), PQTRANS_IDLE);
}

// A real deadlock: each of two transactions holds the row the other wants.
// The server aborts one (40P01); that one is Unavailable and retryable, the
// other goes on and commits.
TEST_F(PgTest, Spec10_DeadlockIsRetryableAndTheOtherSideCommits) {
  std::unique_ptr<PgConn> a = Connect();
  std::unique_ptr<PgConn> b = Connect();
  ASSERT_TRUE(a && b);
  for (PgConn* c : {a.get(), b.get()}) {
    MQ_ASSERT_OK(c->Simple("BEGIN", "begin"));
    MQ_ASSERT_OK(c->Simple("SET LOCAL deadlock_timeout = '50ms'", "deadlock_timeout"));
  }
  MQ_ASSERT_OK(a->Simple("UPDATE " + table_ + " SET v = 'a' WHERE id = 1", "a locks 1"));
  MQ_ASSERT_OK(b->Simple("UPDATE " + table_ + " SET v = 'b' WHERE id = 2", "b locks 2"));
  std::future<Status> a_wants_2 = std::async(std::launch::async, [&] {
    return a->Simple("UPDATE " + table_ + " SET v = 'a' WHERE id = 2", "a wants 2");
  });
  // Give a's statement time to start waiting; either way one side must lose.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const Status b_wants_1 = b->Simple("UPDATE " + table_ + " SET v = 'b' WHERE id = 1", "b wants 1");
  const Status a_result = a_wants_2.get();
  ASSERT_NE(a_result.ok(), b_wants_1.ok()) << "exactly one side is aborted: a=" << a_result.ToString()
                                           << " b=" << b_wants_1.ToString();
  PgConn* loser = a_result.ok() ? b.get() : a.get();
  PgConn* winner = a_result.ok() ? a.get() : b.get();
  MQ_EXPECT_CODE(loser->last_error().status, kUnavailable);
  EXPECT_EQ(loser->last_error().failure, Failure::kRetryable);
  EXPECT_EQ(loser->last_error().sqlstate, "40P01");
  loser->Rollback();
  MQ_EXPECT_OK(winner->Commit());
}

// LESSONS: COMMIT of a transaction that failed earlier answers ROLLBACK with
// no error. Commit() reads the tag, so the caller never believes it
// committed.
TEST_F(PgTest, Spec10_CommitOfAFailedTransactionIsNotOk) {
  std::unique_ptr<PgConn> c = Connect();
  ASSERT_NE(c, nullptr);
  MQ_ASSERT_OK(c->Simple("BEGIN", "begin"));
  MQ_ASSERT_OK(c->Simple("INSERT INTO " + table_ + " VALUES (10, 'kept?')", "insert"));
  // Application code fails a statement (a duplicate key) and carries on.
  MQ_EXPECT_CODE(c->Simple("INSERT INTO " + table_ + " VALUES (1, 'dup')", "dup"), kInternal);
  EXPECT_EQ(c->txn_status(), PQTRANS_INERROR);
  const Status s = c->Commit();
  MQ_EXPECT_CODE(s, kInternal);
  EXPECT_NE(std::string(s.message()).find("ROLLBACK"), std::string::npos) << s.ToString();
  EXPECT_EQ(c->txn_status(), PQTRANS_IDLE);
  EXPECT_EQ(CountRows(), 2) << "nothing of the failed transaction committed";
}

TEST(PgErrorTest, Spec10_ClassificationTable) {
  struct Case {
    const char* sqlstate;
    bool lost, committing;
    StatusCode code;
    Failure failure;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"40001", false, false, StatusCode::kUnavailable, Failure::kRetryable},
           {"40P01", false, false, StatusCode::kUnavailable, Failure::kRetryable},
           {"57P01", false, false, StatusCode::kUnavailable, Failure::kLostBefore},
           {"08006", false, false, StatusCode::kUnavailable, Failure::kLostBefore},
           {"", true, false, StatusCode::kUnavailable, Failure::kLostBefore},
           {"", true, true, StatusCode::kOutcomeUnknown, Failure::kLostAfter},
           {"57P01", true, true, StatusCode::kOutcomeUnknown, Failure::kLostAfter},
           {"55P03", false, false, StatusCode::kCancelled, Failure::kOther},
           {"57014", false, false, StatusCode::kCancelled, Failure::kOther},
           {"53100", false, false, StatusCode::kStoreFull, Failure::kOther},
           {"23505", false, false, StatusCode::kInternal, Failure::kOther},
       }) {
    const PgError e = ClassifyPgError(c.sqlstate, c.lost, c.committing, "m");
    EXPECT_EQ(e.status.code(), c.code) << c.sqlstate << " lost=" << c.lost;
    EXPECT_EQ(e.failure, c.failure) << c.sqlstate << " lost=" << c.lost;
    if (*c.sqlstate) {
      EXPECT_NE(std::string(e.status.message()).find(c.sqlstate), std::string::npos)
          << e.status.ToString();
    }
  }
}

// ---- The pool ---------------------------------------------------------------------

PgPoolOptions PoolOptions(int max) { return PgPoolOptions{.url = TestUrl(), .max_connections = max}; }

TEST(PgPoolTest, RefusesAPoolOfNoConnections) {
  MQ_EXPECT_CODE(PgPool::Create({.url = "x", .max_connections = 0}), kInvalidArgument);
}

// SPEC §10: a call waiting for a connection gives up promptly on its
// deadline or stop token, having done nothing; a waiter is handed the
// connection the moment another caller gives it back.
TEST(PgPoolTest, Spec10_WaitForAConnectionIsCancellable) {
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgPool> pool, PgPool::Create(PoolOptions(1)));
  MQ_ASSERT_OK_AND_ASSIGN(PgPool::Lease held, pool->Acquire({}, "hold"));
  MQ_ASSERT_OK(held->Simple("SELECT 1", "ping"));

  RunOptions soon;
  soon.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  Result<PgPool::Lease> late = pool->Acquire(soon, "Send");
  MQ_EXPECT_CODE(late, kCancelled);
  EXPECT_NE(std::string(late.status().message()).find("Send"), std::string::npos);

  std::stop_source stop;
  RunOptions stoppable;
  stoppable.stop = stop.get_token();
  std::future<Result<PgPool::Lease>> waiting =
      std::async(std::launch::async, [&] { return pool->Acquire(stoppable, "Receive"); });
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout)
      << "it waits while the only connection is leased";
  stop.request_stop();
  MQ_EXPECT_CODE(waiting.get(), kCancelled);

  RunOptions already;
  already.stop = stop.get_token();  // requested before the call
  MQ_EXPECT_CODE(pool->Acquire(already, "Peek"), kCancelled);

  std::future<Result<PgPool::Lease>> next =
      std::async(std::launch::async, [&] { return pool->Acquire({}, "next"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  held = PgPool::Lease();  // give it back
  Result<PgPool::Lease> got = next.get();
  MQ_ASSERT_OK(got);
  MQ_EXPECT_OK((*got)->Simple("SELECT 1", "ping"));
  EXPECT_EQ(pool->open_connections(), 1);
}

// Never more than max_connections open, however many callers.
TEST(PgPoolTest, NeverOpensMoreThanItsMaximum) {
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgPool> pool, PgPool::Create(PoolOptions(2)));
  std::atomic<int> most{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        Result<PgPool::Lease> l = pool->Acquire({}, "load");
        if (!l.has_value() || !(*l)->Simple("SELECT 1", "ping").ok()) {
          failures.fetch_add(1);
          continue;
        }
        int open = pool->open_connections();
        int seen = most.load();
        while (open > seen && !most.compare_exchange_weak(seen, open)) {
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(most.load(), 2);
  EXPECT_GE(most.load(), 1);
  EXPECT_EQ(pool->idle_connections(), pool->open_connections());
}

// A session the server kills mid-transaction (pg_terminate_backend):
// the next statement is Unavailable with nothing committed (the connection
// went before COMMIT was sent), the pool drops that connection, and the next
// lease is a fresh, working session.
TEST_F(PgTest, Spec10_AKilledSessionFailsBeforeCommitAndThePoolReplacesIt) {
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgPool> pool, PgPool::Create(PoolOptions(1)));
  int64_t pid = 0;
  {
    MQ_ASSERT_OK_AND_ASSIGN(PgPool::Lease l, pool->Acquire({}, "victim"));
    MQ_ASSERT_OK(l->Simple("BEGIN", "begin"));
    MQ_ASSERT_OK(l->Simple("INSERT INTO " + table_ + " VALUES (20, 'lost')", "insert"));
    pid = PQbackendPID(l->raw());
    const std::string kill = "SELECT pg_terminate_backend(" + std::to_string(pid) + ")";
    MQ_ASSERT_OK(admin_->Simple(kill, "terminate"));
    const Status s = l->Simple("INSERT INTO " + table_ + " VALUES (21, 'lost')", "after kill");
    MQ_EXPECT_CODE(s, kUnavailable);
    EXPECT_EQ(l->last_error().failure, Failure::kLostBefore) << s.ToString();
    EXPECT_TRUE(l->broken());
  }
  EXPECT_EQ(pool->open_connections(), 0) << "the dead session was closed, not pooled";
  MQ_ASSERT_OK_AND_ASSIGN(PgPool::Lease fresh, pool->Acquire({}, "after"));
  EXPECT_NE(PQbackendPID(fresh->raw()), pid);
  MQ_EXPECT_OK(fresh->Simple("SELECT 1", "ping"));
  EXPECT_EQ(CountRows(), 2) << "nothing of the killed transaction committed";
}

// The same kill with COMMIT as the next thing sent (a Tx whose callback
// ended while its session was being killed): the session's FATAL is already
// waiting, so COMMIT is known never to have run — Unavailable, lost before
// COMMIT, not OutcomeUnknown. Statements sent with the COMMIT change nothing.
TEST_F(PgTest, Spec10_ASessionKilledBeforeCommitWasSentIsLostBeforeNotUnknown) {
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgPool> pool, PgPool::Create(PoolOptions(1)));
  MQ_ASSERT_OK_AND_ASSIGN(PgPool::Lease l, pool->Acquire({}, "victim"));
  MQ_ASSERT_OK(l->Simple("BEGIN", "begin"));
  MQ_ASSERT_OK(l->Simple("INSERT INTO " + table_ + " VALUES (30, 'lost')", "insert"));
  l->AfterCommit("SELECT pg_notify('mqlite_test', '1')");
  MQ_ASSERT_OK(admin_->Simple("SELECT pg_terminate_backend(" +
                                  std::to_string(PQbackendPID(l->raw())) + ")",
                              "terminate"));
  const Status s = l->Commit();
  MQ_EXPECT_CODE(s, kUnavailable);
  EXPECT_EQ(l->last_error().failure, Failure::kLostBefore) << s.ToString();
  EXPECT_EQ(CountRows(), 2) << "nothing committed";
}

// Statements sent after the COMMIT (PgConn::AfterCommit: the store's
// NOTIFY) go out in the same round trip and run after it, outside the
// transaction: one that runs is seen by the session afterwards, and one that
// fails cannot undo the commit or fail the call, and leaves the session
// usable.
TEST_F(PgTest, StatementsAfterCommitRunOutsideItAndCannotUndoIt) {
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgPool> pool, PgPool::Create(PoolOptions(1)));
  MQ_ASSERT_OK_AND_ASSIGN(PgPool::Lease l, pool->Acquire({}, "t"));
  MQ_ASSERT_OK(l->Simple("BEGIN", "begin"));
  MQ_ASSERT_OK(l->Simple("INSERT INTO " + table_ + " VALUES (31, 'kept')", "insert"));
  l->AfterCommit("SELECT set_config('application_name', 'after_commit_ran', false)");
  const uint64_t sent = l->sent();
  MQ_ASSERT_OK(l->Commit());
  EXPECT_EQ(l->sent() - sent, 2u) << "COMMIT and the statement after it";
  EXPECT_EQ(CountRows(), 3);
  MQ_ASSERT_OK_AND_ASSIGN(PgResult name, l->Query("SHOW application_name", "show"));
  EXPECT_EQ(std::string(PQgetvalue(name.get(), 0, 0)), "after_commit_ran");

  MQ_ASSERT_OK(l->Simple("BEGIN", "begin"));
  MQ_ASSERT_OK(l->Simple("INSERT INTO " + table_ + " VALUES (32, 'kept too')", "insert"));
  l->AfterCommit("SELECT 1/0");
  MQ_EXPECT_OK(l->Commit());
  EXPECT_EQ(CountRows(), 4) << "a failure after COMMIT undoes nothing";
  EXPECT_EQ(l->txn_status(), PQTRANS_IDLE);
  MQ_EXPECT_OK(l->Simple("SELECT 1", "the session is still usable"));
}

// A lease given back inside a transaction is rolled back before reuse: the
// next caller never inherits half a transaction.
TEST_F(PgTest, ALeaseGivenBackMidTransactionIsRolledBack) {
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgPool> pool, PgPool::Create(PoolOptions(1)));
  {
    MQ_ASSERT_OK_AND_ASSIGN(PgPool::Lease l, pool->Acquire({}, "abandoned"));
    MQ_ASSERT_OK(l->Simple("BEGIN", "begin"));
    MQ_ASSERT_OK(l->Simple("INSERT INTO " + table_ + " VALUES (30, 'never')", "insert"));
  }
  EXPECT_EQ(pool->idle_connections(), 1) << "rolled back and kept";
  MQ_ASSERT_OK_AND_ASSIGN(PgPool::Lease l, pool->Acquire({}, "next"));
  EXPECT_EQ(l->txn_status(), PQTRANS_IDLE);
  EXPECT_EQ(CountRows(), 2);
}

}  // namespace
}  // namespace mqlite::pg_internal
