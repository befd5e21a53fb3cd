// The PostgreSQL store beyond the kit (which grades it through mqlite-tck,
// ctest tck.grade.postgres): opening, the PGconn* of a Tx, engines in
// several processes, wake-ups across processes, sessions killed mid-body.
// Against a real server (the pg_cluster fixture or MQLITE_TEST_PG_URL).
#include <libpq-fe.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/postgres.h"
#include "lock_key.h"
#include "pg_test_util.h"
#include "suite_util.h"

namespace mqlite {
namespace {

using pg_internal::Connect;
using pg_internal::PgConn;
using pg_internal::TestUrl;

// A schema of the test's own, dropped afterwards.
class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = Connect();
    ASSERT_NE(admin_, nullptr);
    std::random_device rd;
    schema_ = "st_" + std::to_string(::getpid()) + "_" + std::to_string(rd() % 1000000);
  }
  void TearDown() override {
    if (admin_) (void)admin_->Simple("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE", "drop");
  }

  PostgresOptions Options() const {
    PostgresOptions o;
    o.url = TestUrl();
    o.schema = schema_;
    return o;
  }
  std::unique_ptr<Engine> OpenEngine(EngineOptions eo = {}) { return OpenEngine(Options(), eo); }
  // A Receive on `queue` with a 20 s wait, on a thread of its own.
  struct LongPoll {
    Result<std::vector<Message>> got = Status::Internal("not run");
    std::chrono::steady_clock::duration waited{};
    std::thread thread;
    ~LongPoll() {
      if (thread.joinable()) thread.join();  // a test that stopped early
    }
  };
  static std::unique_ptr<LongPoll> StartLongPoll(Engine& e, const std::string& queue) {
    auto p = std::make_unique<LongPoll>();
    p->thread = std::thread([&e, queue, p = p.get()] {
      ReceiveOptions wait;
      wait.wait_ms = 20'000;
      const auto start = std::chrono::steady_clock::now();
      p->got = e.Receive(queue, wait);
      p->waited = std::chrono::steady_clock::now() - start;
    });
    return p;
  }
  // Joins it and checks that it was woken (well before its wait ended) and
  // returned the message `seq`.
  static void ExpectWokenFor(LongPoll& p, int64_t seq) {
    p.thread.join();
    ASSERT_TRUE(p.got.has_value()) << p.got.status().ToString();
    ASSERT_EQ(p.got->size(), 1u);
    EXPECT_EQ((*p.got)[0].seq, seq);
    EXPECT_LT(p.waited, std::chrono::seconds(15))
        << "the long-poll was not woken; it found the message when its wait ended";
  }
  // The pid of a backend holding queue `queue`'s change-feed watch lock (a
  // shared advisory lock on its 'w' key; other tests on the server hold
  // their own) other than `not_pid`, once there is one (up to 10 s; "" if
  // none).
  std::string AwaitWatcher(const std::string& queue, const std::string& not_pid = "") {
    auto id = admin_->Query(
        "SELECT id FROM " + schema_ + ".queues WHERE name = '" + queue + "'", "queue id");
    if (!id.has_value() || id->rows() != 1) return "";
    const auto key = static_cast<uint64_t>(pg_internal::LockKey('w', schema_, id->i64(0, 0)));
    const std::string where = " AND objsubid = 1 AND classid::bigint = " +
                              std::to_string(key >> 32) + " AND objid::bigint = " +
                              std::to_string(key & 0xffffffffu);
    for (int i = 0; i < 1'000; ++i) {
      auto r = admin_->Query(
          "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock' AND "
          "granted" + where,
          "watch lock");
      for (int row = 0; r.has_value() && row < r->rows(); ++row) {
        const std::string pid = std::to_string(r->i64(row, 0));
        if (pid != not_pid) return pid;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "";
  }

  // A waiter whose long-polls only the change feed can wake before their
  // wait ends: the poll re-check is a day, no background maintenance.
  static EngineOptions OnlyTheFeedWakes() {
    EngineOptions eo;
    eo.poll_interval_ms = 24LL * 3600 * 1000;
    eo.background_maintenance = false;
    return eo;
  }
  std::unique_ptr<Engine> OpenEngine(const PostgresOptions& o, EngineOptions eo = {}) {
    auto store = OpenPostgresStore(o);
    EXPECT_TRUE(store.has_value()) << store.status().ToString();
    if (!store.has_value()) return nullptr;
    auto e = Engine::Open(std::move(*store), eo);
    EXPECT_TRUE(e.has_value()) << e.status().ToString();
    return e.has_value() ? std::move(*e) : nullptr;
  }

  std::unique_ptr<PgConn> admin_;
  std::string schema_;
};

// ---- Opening -------------------------------------------------------------------

TEST_F(PgStoreTest, Spec10_BadOptionsAreRefusedBeforeConnecting) {
  PostgresOptions o = Options();
  o.url = "";
  MQ_EXPECT_CODE(OpenPostgresStore(o).status(), kInvalidArgument);
  o = Options();
  o.pool_size = 0;
  MQ_EXPECT_CODE(OpenPostgresStore(o).status(), kInvalidArgument);
  o = Options();
  o.schema = "Bad-Name";
  MQ_EXPECT_CODE(OpenPostgresStore(o).status(), kInvalidArgument);
  o = Options();
  o.queue_cache_ms = -1;
  MQ_EXPECT_CODE(OpenPostgresStore(o).status(), kInvalidArgument);
  o = Options();
  o.notify_coalesce_ms = 1'001;
  MQ_EXPECT_CODE(OpenPostgresStore(o).status(), kInvalidArgument);
}

TEST_F(PgStoreTest, Spec10_AnUnreachableServerIsUnavailableAndNamesNoPassword) {
  PostgresOptions o = Options();
  o.url = "postgresql://mq:s3cret@127.0.0.1:1/none?connect_timeout=2";
  const Status s = OpenPostgresStore(o).status();
  MQ_EXPECT_CODE(s, kUnavailable);
  EXPECT_EQ(std::string(s.message()).find("s3cret"), std::string::npos) << s.ToString();
}

TEST_F(PgStoreTest, CapabilitiesDescribeASharedStore) {
  auto store = OpenPostgresStore(Options());
  ASSERT_TRUE(store.has_value()) << store.status().ToString();
  const StoreCapabilities c = (*store)->Capabilities();
  EXPECT_FALSE(c.exclusive);
  EXPECT_EQ(c.name, "postgres");
  EXPECT_EQ(c.native_handle_type, "PGconn");
  EXPECT_EQ(c.write_concurrency, Options().pool_size);
  EXPECT_TRUE(c.commits_with_final_call) << "a call alone sends COMMIT with its last statement";
  EXPECT_TRUE(c.change_feed && c.maintenance_lock && c.engine_registry);
}

// ---- §8: the PGconn* of a Tx -------------------------------------------------

TEST_F(PgStoreTest, Spec8_TxWritesTheApplicationsTableAndTheMessageInOneCommit) {
  auto e = OpenEngine();
  ASSERT_NE(e, nullptr);
  MQ_ASSERT_OK(e->CreateQueue({.name = "events"}).status());
  MQ_ASSERT_OK(admin_->Simple("CREATE TABLE " + schema_ + ".orders (id int PRIMARY KEY)", "t"));
  auto insert = [&](TxContext& tx, int id) -> Status {
    MQLITE_ASSIGN_OR_RETURN(PGconn * c, PostgresHandle(tx));
    const std::string sql =
        "INSERT INTO " + schema_ + ".orders VALUES (" + std::to_string(id) + ")";
    PGresult* r = PQexec(c, sql.c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok ? Status::OK() : Status::Internal("insert failed");
  };
  MQ_ASSERT_OK(e->Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(insert(tx, 1));
    return tx.Send("events", {.body = "order 1"}).status();
  }));
  // A failing callback leaves neither.
  const Status failed = e->Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(insert(tx, 2));
    MQLITE_RETURN_IF_ERROR(tx.Send("events", {.body = "order 2"}).status());
    return Status::NotFound("the application changed its mind");
  });
  MQ_EXPECT_CODE(failed, kNotFound);
  // An application statement that fails, ignored by the callback, fails the
  // Tx: PostgreSQL aborted the transaction, and nothing may look committed.
  const Status swallowed = e->Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(tx.Send("events", {.body = "order 3"}).status());
    (void)insert(tx, 1);  // duplicate key: the server aborts the transaction
    return Status::OK();
  });
  MQ_EXPECT_CODE(swallowed, kInternal);  // txn_runner.h: nothing committed
  auto rows = admin_->Query("SELECT count(*) FROM " + schema_ + ".orders", "count");
  ASSERT_TRUE(rows.has_value());
  EXPECT_EQ(rows->i64(0, 0), 1);
  auto stats = e->Stats("events");
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->total, 1);
}

// The store defers statements nobody reads (BEGIN, SAVEPOINT, RELEASE, a
// receipt) to go out with the next one (pg_conn.h). Nesting must still undo
// exactly what a failed savepoint did: an inner savepoint's RELEASE, still
// unsent when the outer one fails, must not make the outer ROLLBACK TO stop
// at the inner savepoint (the kit's rerun suite found that one: a rolled-back
// send survived). A receipt deferred inside a savepoint is visible to the
// same transaction and undone with the savepoint.
TEST_F(PgStoreTest, Spec10_DeferredStatementsKeepSavepointsExact) {
  auto store = OpenPostgresStore(Options());
  MQ_ASSERT_OK(store.status());
  Store& st = **store;
  QueueRecord q;
  MQ_ASSERT_OK(st.Run(TxnKind::kWrite, RunOptions{}, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(q, txn.UpsertQueue({.name = "q"}, 1, nullptr));
    return Status::OK();
  }));
  const OutgoingMessage a{.body = "a"}, b{.body = "b"}, c{.body = "c"};
  auto item = [](const OutgoingMessage& m) {
    EnqueueItem it;
    it.message = &m;
    it.enqueued_at = it.visible_at = 1;
    return it;
  };
  bool seen_inside = false, seen_after_rollback = true;
  MQ_ASSERT_OK(st.Run(TxnKind::kWrite, RunOptions{}, [&](StoreTxn& txn) -> Status {
    const Status outer = txn.Savepoint([&](StoreTxn& t) -> Status {
      const EnqueueItem ia = item(a);
      MQLITE_RETURN_IF_ERROR(t.Enqueue(q, {&ia, 1}).status());
      MQLITE_RETURN_IF_ERROR(t.Savepoint([&](StoreTxn& u) -> Status {
        const EnqueueItem ib = item(b);
        MQLITE_RETURN_IF_ERROR(u.Enqueue(q, {&ib, 1}).status());
        MQLITE_RETURN_IF_ERROR(u.PutReceipt("inner-receipt", 1'000'000));  // deferred
        MQLITE_ASSIGN_OR_RETURN(seen_inside, u.FindReceipt("inner-receipt", 1));
        return Status::OK();  // its RELEASE is deferred ...
      }));
      // ... and still unsent when this savepoint fails.
      return Status::NotFound("the outer savepoint changes its mind");
    });
    if (outer.code() != StatusCode::kNotFound) return Status::Internal("outer: " + outer.ToString());
    MQLITE_ASSIGN_OR_RETURN(seen_after_rollback, txn.FindReceipt("inner-receipt", 1));
    // A sibling after the rolled-back one, with a receipt that commits.
    MQLITE_RETURN_IF_ERROR(txn.Savepoint([&](StoreTxn& t) -> Status {
      const EnqueueItem ic = item(c);
      MQLITE_RETURN_IF_ERROR(t.Enqueue(q, {&ic, 1}).status());
      return t.PutReceipt("kept-receipt", 1'000'000);
    }));
    return Status::OK();
  }));
  EXPECT_TRUE(seen_inside) << "a deferred receipt must be visible to its own transaction";
  EXPECT_FALSE(seen_after_rollback) << "a receipt must be undone with its savepoint";
  std::vector<std::string> bodies;
  bool kept = false;
  MQ_ASSERT_OK(st.Run(TxnKind::kRead, RunOptions{}, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(std::vector<Message> all, txn.Peek(q, PeekOptions{}));
    for (const Message& m : all) bodies.push_back(m.body);
    MQLITE_ASSIGN_OR_RETURN(kept, txn.FindReceipt("kept-receipt", 1));
    return Status::OK();
  }));
  EXPECT_EQ(bodies, std::vector<std::string>({"c"}))
      << "only the sibling's send commits; the outer savepoint's and its inner one's are undone";
  EXPECT_TRUE(kept);
}

// Space (docs/postgres-store.md "Space"): once a drain has changed enough
// rows, maintenance VACUUMs the store's tables, so refilling the same
// backlog reuses the messages table's heap instead of growing it.
TEST_F(PgStoreTest, Spec6_MaintenanceVacuumsAfterADrainSoTheRefillReusesTheHeap) {
  EngineOptions eo;
  eo.background_maintenance = false;
  auto e = OpenEngine(eo);
  ASSERT_NE(e, nullptr);
  MQ_ASSERT_OK(e->CreateQueue({.name = "space"}).status());
  auto heap = [&]() -> int64_t {
    auto r = admin_->Query("SELECT pg_relation_size('" + schema_ + ".messages')", "size");
    EXPECT_TRUE(r.has_value());
    return r.has_value() ? r->i64(0, 0) : -1;
  };
  auto fill = [&] {
    for (int batch = 0; batch < 12; ++batch) {
      std::vector<OutgoingMessage> msgs(250);
      for (size_t i = 0; i < msgs.size(); ++i) {
        msgs[i].body = std::string(300, static_cast<char>('a' + (batch + i) % 26)) +
                       std::to_string(batch * 1000 + static_cast<int>(i));
      }
      MQ_ASSERT_OK(e->SendBatch("space", msgs).status());
    }
  };
  ASSERT_NO_FATAL_FAILURE(fill());
  const int64_t peak = heap();
  for (;;) {
    ReceiveOptions o;
    o.max_messages = 256;
    auto got = e->Receive("space", o);
    MQ_ASSERT_OK(got.status());
    if (got->empty()) break;
    std::vector<SettleItem> items;
    for (const Message& m : *got) items.push_back({m.seq, m.lock_token});
    MQ_ASSERT_OK(e->CompleteBatch("space", items).status());
  }
  MQ_ASSERT_OK(e->RunMaintenance().status());
  auto vacuumed = admin_->Query("SELECT vacuum_count FROM pg_stat_user_tables WHERE schemaname = '" +
                                    schema_ + "' AND relname = 'messages'",
                                "vacuum_count");
  ASSERT_TRUE(vacuumed.has_value());
  EXPECT_GE(vacuumed->i64(0, 0), 1) << "maintenance did not VACUUM after a drain of 3,000";
  ASSERT_NO_FATAL_FAILURE(fill());
  EXPECT_LE(heap(), peak + peak / 10)
      << "the refill grew the heap from " << peak << " bytes: the drained space was not reused";
}

// The pool's sessions keep generic plans (queries.h); one made on a fresh,
// empty messages table may scan. Maintenance ANALYZEs a never-analyzed
// table once 50 rows were written, so every session plans again with
// statistics — not only after the 1,000 rows that trigger it later on.
TEST_F(PgStoreTest, Spec11_MaintenanceAnalyzesAFreshTableAfter50Writes) {
  EngineOptions eo;
  eo.background_maintenance = false;
  auto e = OpenEngine(eo);
  ASSERT_NE(e, nullptr);
  MQ_ASSERT_OK(e->CreateQueue({.name = "fresh"}).status());
  auto analyzed = [&]() -> int64_t {  // ANALYZE commands, not autovacuum's
    auto r = admin_->Query("SELECT analyze_count FROM pg_stat_user_tables WHERE schemaname = '" +
                               schema_ + "' AND relname = 'messages'",
                           "analyze_count");
    EXPECT_TRUE(r.has_value());
    return r.has_value() && r->rows() == 1 ? r->i64(0, 0) : -1;
  };
  auto send = [&](int n) {
    for (int i = 0; i < n; ++i) MQ_ASSERT_OK(e->Send("fresh", {.body = "m"}).status());
  };
  ASSERT_NO_FATAL_FAILURE(send(40));
  MQ_ASSERT_OK(e->RunMaintenance().status());
  EXPECT_EQ(analyzed(), 0) << "analyzed after 40 rows";
  ASSERT_NO_FATAL_FAILURE(send(10));
  MQ_ASSERT_OK(e->RunMaintenance().status());
  EXPECT_EQ(analyzed(), 1) << "not analyzed after 50 rows";
  ASSERT_NO_FATAL_FAILURE(send(60));
  MQ_ASSERT_OK(e->RunMaintenance().status());
  EXPECT_EQ(analyzed(), 1) << "analyzed again after 60 more rows: past the first, 1,000";
}

// SPEC §8: the store's own statements run on generic plans, but application
// code in a Tx gets the server's plan choice — in every Tx on the session.
TEST_F(PgStoreTest, Spec8_ApplicationCodeInATxPlansAsTheServerIsConfigured) {
  auto e = OpenEngine();
  ASSERT_NE(e, nullptr);
  MQ_ASSERT_OK(e->CreateQueue({.name = "events"}).status());
  auto configured = admin_->Query("SHOW plan_cache_mode", "plan_cache_mode");
  ASSERT_TRUE(configured.has_value());
  for (int i = 0; i < 3; ++i) {
    std::string mode;
    MQ_ASSERT_OK(e->Tx([&](TxContext& tx) -> Status {
      MQLITE_RETURN_IF_ERROR(tx.Send("events", {.body = "e"}).status());
      MQLITE_ASSIGN_OR_RETURN(PGconn * c, PostgresHandle(tx));
      PGresult* r = PQexec(c, "SHOW plan_cache_mode");
      if (PQresultStatus(r) == PGRES_TUPLES_OK) mode = PQgetvalue(r, 0, 0);
      PQclear(r);
      return Status::OK();
    }));
    EXPECT_EQ(mode, configured->text(0, 0)) << "Tx " << i;
  }
}

TEST_F(PgStoreTest, Spec8_CommittingThroughTheHandleIsRefused) {
  auto e = OpenEngine();
  ASSERT_NE(e, nullptr);
  MQ_ASSERT_OK(e->CreateQueue({.name = "events"}).status());
  const Status s = e->Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(PGconn * c, PostgresHandle(tx));
    PQclear(PQexec(c, "COMMIT"));
    return Status::OK();
  });
  MQ_EXPECT_CODE(s, kInvalidArgument);
}

// Engines in several processes draining shared queues: the kit's
// TckMultiEngine.Spec9_G2_ForkedEnginesDrainSharedQueuesExactlyOnceInGroupOrder.

// spec.md §9 change feed: a long-poll in this process wakes on a send
// committed by another process, with the poll re-check set to a day — so
// only the LISTEN/NOTIFY feed can wake it. The latency is reported, not
// asserted (shared machines are noisy).
TEST_F(PgStoreTest, Spec9_ALongPollWakesOnAnotherProcesssSend) {
  EngineOptions eo;
  eo.poll_interval_ms = 24 * 3600 * 1000;
  auto e = OpenEngine(eo);
  ASSERT_NE(e, nullptr);
  MQ_ASSERT_OK(e->CreateQueue({.name = "wake"}).status());
  // When the child's Send returned (CLOCK_MONOTONIC is one clock for every
  // process), for the reported latency.
  void* mem = ::mmap(nullptr, sizeof(std::atomic<int64_t>), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* sent_at = new (mem) std::atomic<int64_t>(0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto store = OpenPostgresStore(Options());
    if (!store.has_value()) ::_exit(10);
    auto other = Engine::Open(std::move(*store), {});
    if (!other.has_value()) ::_exit(11);
    const bool ok = (*other)->Send("wake", {.body = "hello"}).ok();
    sent_at->store(std::chrono::steady_clock::now().time_since_epoch().count());
    ::_exit(ok ? 0 : 12);
  }
  auto got = e->Receive("wake", {.wait_ms = 20'000});
  const auto woke = std::chrono::steady_clock::now();
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  const double latency_ms =
      static_cast<double>(woke.time_since_epoch().count() - sent_at->load()) / 1e6;
  std::printf("[ wake ] long-poll woke %.1f ms after the other process's Send returned\n",
              latency_ms);
  RecordProperty("wake_latency_ms", std::to_string(latency_ms));
  ::munmap(mem, sizeof(std::atomic<int64_t>));
}

// ---- Queue records cached across transactions (docs/postgres-store.md) ---------

// The lease a Receive on `e` grants in `q` now (ms), from the message's own
// locked_until; the message is handed back.
int64_t LeaseGranted(Engine& e, const std::string& q) {
  auto sent = e.Send(q, {.body = "probe"});
  EXPECT_TRUE(sent.has_value()) << sent.status().ToString();
  const int64_t before = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  auto got = e.Receive(q);
  EXPECT_TRUE(got.has_value() && got->size() == 1);
  if (!got.has_value() || got->size() != 1) return -1;
  const Message m = got->front();
  EXPECT_TRUE(e.Complete(q, m.seq, m.lock_token).ok());
  return m.locked_until - before;
}

// Another engine's UpdateQueue reaches this engine's operations through the
// change feed, although this engine serves its writes from cached queue
// records: the lease a Receive grants follows the new lock_duration. (With
// the "*" of the notification ignored, this fails: b's cache lasts an hour.)
TEST_F(PgStoreTest, Spec2_AnotherEnginesUpdateQueueReachesCachedOperations) {
  auto a = OpenEngine();
  ASSERT_TRUE(a);
  // b keeps records for an hour: only the notification can make it read again.
  PostgresOptions o = Options();
  o.queue_cache_ms = 3'600'000;
  std::unique_ptr<Engine> b = OpenEngine(o);
  ASSERT_TRUE(b);
  MQ_ASSERT_OK(a->CreateQueue({.name = "q", .lock_duration_ms = 60'000}).status());
  const int64_t first = LeaseGranted(*b, "q");  // b caches q
  EXPECT_GT(first, 50'000);
  MQ_ASSERT_OK(a->UpdateQueue({.name = "q", .lock_duration_ms = 5'000}).status());
  // The notification arrives within milliseconds; give a loaded machine 10 s.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int64_t lease = first;
  while (lease > 50'000 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    lease = LeaseGranted(*b, "q");
  }
  EXPECT_LT(lease, 10'000) << "b still grants the old 60 s lease";
}

// Coalesced wake-ups (PostgresOptions::notify_coalesce_ms): a send made
// within the window of the queue's last notification carries none with its
// COMMIT, and the notification sent at the window's end still wakes another
// engine's long-poll that began waiting after the first wake-up. The window
// is the largest allowed and the second send comes well inside it; the
// waiter's poll interval is a day, so only that late notification can wake
// it before its 20 s wait ends.
TEST_F(PgStoreTest, Spec9_ASendInsideTheCoalescingWindowStillWakesAnotherEngine) {
  PostgresOptions o = Options();
  o.notify_coalesce_ms = 1'000;
  std::unique_ptr<Engine> sender = OpenEngine(o);
  ASSERT_TRUE(sender);
  std::unique_ptr<Engine> waiter = OpenEngine(o, OnlyTheFeedWakes());
  ASSERT_TRUE(waiter);
  MQ_ASSERT_OK(sender->CreateQueue({.name = "q"}).status());
  ReceiveOptions wait;
  wait.wait_ms = 20'000;
  wait.mode = ReceiveMode::kReceiveAndDelete;
  // The first send notifies with its COMMIT; the waiter finds it.
  const auto first = sender->Send("q", {.body = "first"});
  ASSERT_TRUE(first.has_value()) << first.status().ToString();
  auto got = waiter->Receive("q", wait);
  ASSERT_TRUE(got.has_value() && got->size() == 1) << got.status().ToString();
  // Now the waiter waits on an empty queue; the second send, inside the
  // window, is announced only at its end.
  // A Receive whose wait ends claims once more before it returns, so the
  // message alone does not show a wake-up: the time does — woken within
  // about the 1 s window, or only at the 20 s end of its wait.
  Result<std::vector<Message>> second_got = Status::Internal("not run");
  std::chrono::steady_clock::duration waited{};
  std::thread poll([&] {
    const auto start = std::chrono::steady_clock::now();
    second_got = waiter->Receive("q", wait);
    waited = std::chrono::steady_clock::now() - start;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto second = sender->Send("q", {.body = "second"});
  ASSERT_TRUE(second.has_value()) << second.status().ToString();
  poll.join();
  ASSERT_TRUE(second_got.has_value()) << second_got.status().ToString();
  ASSERT_EQ(second_got->size(), 1u);
  EXPECT_EQ((*second_got)[0].seq, *second);
  EXPECT_LT(waited, std::chrono::seconds(15))
      << "the long-poll was not woken for the second send; it found it when its wait ended";
}

// Wake-ups go only to queues some engine watches (spec.md §9: a long-poll
// that slept notify_coalesce_ms without a wake-up watches its queue). A raw
// LISTEN session on the store's channel sees what the engines send; a marker
// notification sent after the sends arrives after anything they sent
// (notifications are delivered in commit order), so "nothing before the
// marker" is exact, not a timeout.
TEST_F(PgStoreTest, Spec9_OnlyAWatchedQueuesCommitsWakeOtherEngines) {
  PostgresOptions o = Options();
  o.notify_coalesce_ms = 0;  // else the coalescer could hold a wake-up back
  std::unique_ptr<Engine> sender = OpenEngine(o);
  ASSERT_TRUE(sender);
  std::unique_ptr<Engine> waiter = OpenEngine(o, OnlyTheFeedWakes());
  ASSERT_TRUE(waiter);
  MQ_ASSERT_OK(sender->CreateQueue({.name = "q"}).status());
  auto id = admin_->Query("SELECT id FROM " + schema_ + ".queues WHERE name = 'q'", "queue id");
  ASSERT_TRUE(id.has_value() && id->rows() == 1) << id.status().ToString();
  const int64_t queue_id = id->i64(0, 0);
  const std::string channel = "mqlite_" + schema_;
  auto listen = PgConn::Connect(TestUrl());
  ASSERT_TRUE(listen.has_value()) << listen.status().ToString();
  MQ_ASSERT_OK((*listen)->Simple("LISTEN " + channel, "listen"));
  // The payloads received up to the marker, which this sends now.
  auto until_marker = [&]() -> std::vector<std::string> {
    EXPECT_TRUE(admin_->Simple("SELECT pg_notify('" + channel + "', 'marker')", "marker").ok());
    std::vector<std::string> got;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < end) {
      if (PQconsumeInput((*listen)->raw()) == 0) break;
      while (PGnotify* n = PQnotifies((*listen)->raw())) {
        const std::string payload = n->extra ? n->extra : "";
        PQfreemem(n);
        if (payload == "marker") return got;
        got.push_back(payload);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ADD_FAILURE() << "the marker notification never arrived";
    return got;
  };
  // Nobody waits: three sends announce nothing.
  for (int i = 0; i < 3; ++i) MQ_ASSERT_OK(sender->Send("q", {.body = "x"}).status());
  EXPECT_EQ(until_marker(), std::vector<std::string>{});
  ReceiveOptions drain;
  drain.max_messages = 10;
  drain.mode = ReceiveMode::kReceiveAndDelete;
  auto drained = waiter->Receive("q", drain);
  ASSERT_TRUE(drained.has_value() && drained->size() == 3u) << drained.status().ToString();
  // A long-poll on the empty queue: it watches the queue after 0 ms and
  // then holds a shared advisory lock through its listening session.
  auto poll = StartLongPoll(*waiter, "q");
  EXPECT_NE(AwaitWatcher("q"), "") << "the long-poll never watched its queue";
  auto sent = sender->Send("q", {.body = "wake"});
  ASSERT_TRUE(sent.has_value()) << sent.status().ToString();
  ExpectWokenFor(*poll, *sent);
  EXPECT_EQ(until_marker(), std::vector<std::string>{std::to_string(queue_id)});
}

// A watch lives in the listening session's lock: when that session is
// killed, the listener reconnects and takes the lock again before waking
// every queue, so a long-poll that watched before the kill is still woken by
// a send after it (without the new lock the send would announce nothing and
// the waiter would sleep until its 20 s wait ends).
TEST_F(PgStoreTest, Spec9_AWatchSurvivesItsListeningSessionBeingKilled) {
  PostgresOptions o = Options();
  o.notify_coalesce_ms = 0;
  std::unique_ptr<Engine> sender = OpenEngine(o);
  ASSERT_TRUE(sender);
  std::unique_ptr<Engine> waiter = OpenEngine(o, OnlyTheFeedWakes());
  ASSERT_TRUE(waiter);
  MQ_ASSERT_OK(sender->CreateQueue({.name = "q"}).status());
  auto poll = StartLongPoll(*waiter, "q");
  const std::string first = AwaitWatcher("q");
  ASSERT_FALSE(first.empty()) << "the long-poll never watched its queue";
  MQ_ASSERT_OK(admin_->Simple("SELECT pg_terminate_backend(" + first + ")", "kill listener"));
  EXPECT_FALSE(AwaitWatcher("q", first).empty()) << "the listener never took the watch lock again";
  auto sent = sender->Send("q", {.body = "after the kill"});
  ASSERT_TRUE(sent.has_value()) << sent.status().ToString();
  ExpectWokenFor(*poll, *sent);
}

// Without a change feed the cache still forgets a record within
// PostgresOptions::queue_cache_ms (1 s by default).
TEST_F(PgStoreTest, Spec2_WithoutAChangeFeedAnUpdateIsSeenWithinASecond) {
  auto a = OpenEngine();
  ASSERT_TRUE(a);
  PostgresOptions o = Options();
  o.change_feed = false;
  std::unique_ptr<Engine> opened = OpenEngine(o);
  ASSERT_TRUE(opened);
  Engine& b = *opened;
  MQ_ASSERT_OK(a->CreateQueue({.name = "q", .lock_duration_ms = 60'000}).status());
  EXPECT_GT(LeaseGranted(b, "q"), 50'000);
  MQ_ASSERT_OK(a->UpdateQueue({.name = "q", .lock_duration_ms = 5'000}).status());
  std::this_thread::sleep_for(std::chrono::milliseconds(1'100));
  EXPECT_LT(LeaseGranted(b, "q"), 10'000);
}

// A queue deleted and created again by another engine has a new id; a send
// through a cached record of the old one reruns with a fresh read instead of
// answering QueueNotFound, and lands in the new queue. Without a change feed
// and with records kept an hour, so that nothing but the stale insert can
// tell.
TEST_F(PgStoreTest, Spec2_ASendThroughAStaleCachedQueueFindsTheQueueCreatedAgain) {
  auto a = OpenEngine();
  ASSERT_TRUE(a);
  PostgresOptions o = Options();
  o.change_feed = false;
  o.queue_cache_ms = 3'600'000;
  std::unique_ptr<Engine> opened = OpenEngine(o);
  ASSERT_TRUE(opened);
  Engine& b = *opened;
  MQ_ASSERT_OK(a->CreateQueue({.name = "q"}).status());
  MQ_ASSERT_OK(b.Send("q", {.body = "old"}).status());  // b caches q's first id
  MQ_ASSERT_OK(a->DeleteQueue("q"));
  MQ_ASSERT_OK(a->CreateQueue({.name = "q"}).status());
  MQ_ASSERT_OK(b.Send("q", {.body = "new"}).status());
  auto got = a->Receive("q", {.max_messages = 10});
  MQ_ASSERT_OK(got.status());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->front().body, "new");
  // And a queue deleted for good is QueueNotFound, not a loop.
  MQ_ASSERT_OK(a->DeleteQueue("q"));
  MQ_EXPECT_CODE(b.Send("q", {.body = "gone"}).status(), kQueueNotFound);
}

// ---- Faults: a session killed mid-body -------------------------------------------

// Kills the backend of the transaction running the first Enqueue, from
// another session, before the body goes on: the rerunnable Send reruns on a
// fresh connection and commits exactly once.
class KillFirstEnqueue : public StoreWrapper {
 public:
  KillFirstEnqueue(std::unique_ptr<Store> target, std::string url)
      : StoreWrapper(std::move(target)), url_(std::move(url)) {}
  std::atomic<int> kills{0};

 protected:
  std::unique_ptr<StoreTxn> WrapTxn(StoreTxn* inner) override {
    class Txn : public StoreTxnWrapper {
     public:
      Txn(StoreTxn* t, KillFirstEnqueue* owner) : StoreTxnWrapper(t), owner_(owner) {}
      Result<std::vector<int64_t>> Enqueue(const QueueRecord& q,
                                           std::span<const EnqueueItem> items) override {
        if (owner_->kills.fetch_add(1) == 0) {
          const int pid = PQbackendPID(static_cast<PGconn*>(NativeHandle()));
          auto admin = PgConn::Connect(owner_->url_);
          if (admin.has_value()) {
            (void)(*admin)->Simple("SELECT pg_terminate_backend(" + std::to_string(pid) + ")",
                                   "terminate");
          }
        }
        return StoreTxnWrapper::Enqueue(q, items);
      }

     private:
      KillFirstEnqueue* owner_;
    };
    return std::make_unique<Txn>(inner, this);
  }

 private:
  std::string url_;
};

TEST_F(PgStoreTest, Spec10_ASessionKilledMidBodyIsRerunAndAppliedOnce) {
  auto store = OpenPostgresStore(Options());
  ASSERT_TRUE(store.has_value()) << store.status().ToString();
  auto wrapper = std::make_unique<KillFirstEnqueue>(std::move(*store), TestUrl());
  KillFirstEnqueue* w = wrapper.get();
  auto e = Engine::Open(std::move(wrapper), {});
  ASSERT_TRUE(e.has_value()) << e.status().ToString();
  MQ_ASSERT_OK((*e)->CreateQueue({.name = "q"}).status());
  auto seq = (*e)->Send("q", {.body = "once"});
  ASSERT_TRUE(seq.ok()) << seq.status().ToString();
  EXPECT_GE(w->kills.load(), 2) << "the body ran again after the kill";
  auto stats = (*e)->Stats("q");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->total, 1);
}

// A Tx (application code) is never rerun: a session killed inside it is
// Unavailable and nothing of it committed.
TEST_F(PgStoreTest, Spec10_ASessionKilledInsideATxFailsItWithNothingCommitted) {
  auto e = OpenEngine();
  ASSERT_NE(e, nullptr);
  MQ_ASSERT_OK(e->CreateQueue({.name = "q"}).status());
  const Status s = e->Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(tx.Send("q", {.body = "lost"}).status());
    MQLITE_ASSIGN_OR_RETURN(PGconn * c, PostgresHandle(tx));
    (void)admin_->Simple("SELECT pg_terminate_backend(" + std::to_string(PQbackendPID(c)) + ")",
                         "terminate");
    return Status::OK();
  });
  MQ_EXPECT_CODE(s, kUnavailable);
  auto stats = e->Stats("q");
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->total, 0);
}

// ---- Deterministic two-session interleavings (spec.md §9 "Shared stores") ----
//
// Engine A runs on a PausingStore: its transaction stops right after a
// chosen operation returned — inside the transaction, holding whatever
// locks that operation took — until the test releases it. Engine B, on its
// own store and pool, then makes the racing call. Each test checks B cannot
// get past A's uncommitted change, and that the outcome after both commit is
// the one the contract requires (what a store without the rule gets wrong
// is named in each test).

class PausingStore : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;

  // The next transaction to finish `op` pauses right after it.
  void Arm(std::string op) {
    std::lock_guard<std::mutex> l(mu_);
    armed_ = std::move(op);
    paused_ = released_ = false;
  }
  bool WaitPaused() {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(30), [&] { return paused_; });
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    released_ = true;
    cv_.notify_all();
  }

 protected:
  std::unique_ptr<StoreTxn> WrapTxn(StoreTxn* inner) override {
    class Txn : public StoreTxnWrapper {
     public:
      Txn(StoreTxn* t, PausingStore* o) : StoreTxnWrapper(t), o_(o) {}
      Result<std::vector<int64_t>> Enqueue(const QueueRecord& q,
                                           std::span<const EnqueueItem> items) override {
        auto r = StoreTxnWrapper::Enqueue(q, items);
        o_->Hit("Enqueue");
        return r;
      }
      Result<SettleResult> Settle(const QueueRecord& q, const SettleRequest& req) override {
        auto r = StoreTxnWrapper::Settle(q, req);
        o_->Hit("Settle");
        return r;
      }
      Result<std::vector<Message>> Claim(const QueueRecord& q, const ClaimRequest& req) override {
        auto r = StoreTxnWrapper::Claim(q, req);
        o_->Hit("Claim");
        return r;
      }
      Result<int64_t> ReclaimLocks(const QueueRecord& q, int64_t now, bool all,
                                   int64_t limit) override {
        auto r = StoreTxnWrapper::ReclaimLocks(q, now, all, limit);
        if (r.ok() && *r > 0) o_->Hit("ReclaimLocks");
        return r;
      }

     private:
      PausingStore* o_;
    };
    return std::make_unique<Txn>(inner, this);
  }

 private:
  void Hit(const char* op) {
    std::unique_lock<std::mutex> l(mu_);
    if (armed_ != op) return;
    armed_.clear();
    paused_ = true;
    cv_.notify_all();
    cv_.wait(l, [&] { return released_; });
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::string armed_;
  bool paused_ = false, released_ = false;
};

class PgInterleavingTest : public PgStoreTest {
 protected:
  void SetUp() override {
    PgStoreTest::SetUp();
    EngineOptions eo;
    eo.clock = &clock_;
    eo.background_maintenance = false;
    auto store = OpenPostgresStore(Options());
    ASSERT_TRUE(store.has_value()) << store.status().ToString();
    auto pausing = std::make_unique<PausingStore>(std::move(*store));
    pausing_ = pausing.get();
    auto a = Engine::Open(std::move(pausing), eo);
    ASSERT_TRUE(a.has_value()) << a.status().ToString();
    a_ = std::move(*a);
    b_ = OpenEngine(eo);
    ASSERT_NE(b_, nullptr);
    MQ_ASSERT_OK(a_->CreateQueue({.name = "q", .lock_duration_ms = 1000,
                                  .dedup_window_ms = 60'000})
                     .status());
  }
  void TearDown() override {
    if (a_) (void)a_->Close();
    if (b_) (void)b_->Close();
    PgStoreTest::TearDown();
  }

  // Runs `first` on A until it pauses after `op`, then `second` on B; checks
  // B is still waiting while A holds its change, releases A, and returns
  // once both finished.
  template <typename F1, typename F2>
  void Interleave(const std::string& op, F1 first, F2 second, bool b_must_wait = true) {
    pausing_->Arm(op);
    std::thread ta(first);
    ASSERT_TRUE(pausing_->WaitPaused()) << "A never reached " << op;
    std::atomic<bool> b_done{false};
    std::thread tb([&] {
      second();
      b_done.store(true);
    });
    if (b_must_wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      EXPECT_FALSE(b_done.load()) << "B got past A's uncommitted " << op;
    }
    pausing_->Release();
    ta.join();
    tb.join();
  }

  ManualClock clock_;
  PausingStore* pausing_ = nullptr;
  std::unique_ptr<Engine> a_, b_;
};

// Two sends into one empty group: B waits for A's group lock, then sees A's
// message and joins behind it. (Unserialised, both would become heads and a
// receive would hand out both at once.)
TEST_F(PgInterleavingTest, Spec5_TwoSendsIntoOneGroupMakeOneHead) {
  Result<int64_t> sa = Status::Internal("not run"), sb = Status::Internal("not run");
  Interleave(
      "Enqueue", [&] { sa = a_->Send("q", {.body = "a", .group_id = std::string("g")}); },
      [&] { sb = b_->Send("q", {.body = "b", .group_id = std::string("g")}); });
  ASSERT_TRUE(sa.ok() && sb.ok()) << sa.status().ToString() << " " << sb.status().ToString();
  EXPECT_LT(*sa, *sb) << "within a group seqs commit in increasing order";
  auto got = b_->Receive("q", {.max_messages = 10});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u) << "one head per group";
  EXPECT_EQ((*got)[0].seq, *sa);
  MQ_ASSERT_OK(b_->Complete("q", (*got)[0].seq, (*got)[0].lock_token));
  got = b_->Receive("q", {.max_messages = 10});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].seq, *sb);
}

// A head's Complete racing a send into its group: B's send waits, then finds
// the group empty and becomes its head. (Unserialised, B would see the head
// still there, join behind it, and the group would have no head for good.)
TEST_F(PgInterleavingTest, Spec5_SendRacingTheHeadsCompleteBecomesTheHead) {
  MQ_ASSERT_OK(a_->Send("q", {.body = "h", .group_id = std::string("g")}).status());
  auto head = a_->Receive("q");
  ASSERT_TRUE(head.ok() && head->size() == 1u);
  Status done = Status::Internal("not run");
  Result<int64_t> sent = Status::Internal("not run");
  Interleave(
      "Settle", [&] { done = a_->Complete("q", (*head)[0].seq, (*head)[0].lock_token); },
      [&] { sent = b_->Send("q", {.body = "n", .group_id = std::string("g")}); });
  MQ_ASSERT_OK(done);
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  auto got = b_->Receive("q");
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u) << "the group was left without a head";
  EXPECT_EQ((*got)[0].seq, *sent);
}

// The same dedup key from two engines: B's lookup waits on the key's lock,
// then finds A's record. (Unlocked, both would miss and both would send.)
TEST_F(PgInterleavingTest, Spec4_TheSameDedupKeyFromTwoEnginesSendsOnce) {
  Result<int64_t> sa = Status::Internal("not run"), sb = Status::Internal("not run");
  Interleave(
      "Enqueue", [&] { sa = a_->Send("q", {.body = "x", .message_id = std::string("k")}); },
      [&] { sb = b_->Send("q", {.body = "x", .message_id = std::string("k")}); });
  ASSERT_TRUE(sa.ok() && sb.ok()) << sa.status().ToString() << " " << sb.status().ToString();
  EXPECT_EQ(*sa, *sb) << "the second send is the first one's duplicate";
  auto stats = b_->Stats("q");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->total, 1);
}

// The same receive attempt id from two engines: B waits on the id's lock,
// then returns A's batch — same seqs, same tokens — and claims nothing new.
TEST_F(PgInterleavingTest, Spec7_3_TheSameAttemptIdFromTwoEnginesClaimsOneBatch) {
  // Distinct bodies: the queue de-duplicates (a body is its own key, SPEC §4).
  for (int i = 0; i < 4; ++i) MQ_ASSERT_OK(a_->Send("q", {.body = "m" + std::to_string(i)}).status());
  Result<std::vector<Message>> ra = Status::Internal("not run"), rb = Status::Internal("not run");
  const ReceiveOptions o{.max_messages = 2, .attempt_id = std::string("att")};
  Interleave("Claim", [&] { ra = a_->Receive("q", o); }, [&] { rb = b_->Receive("q", o); });
  ASSERT_TRUE(ra.ok() && rb.ok()) << ra.status().ToString() << " " << rb.status().ToString();
  ASSERT_EQ(ra->size(), 2u);
  ASSERT_EQ(rb->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*ra)[i].seq, (*rb)[i].seq);
    EXPECT_EQ((*ra)[i].lock_token, (*rb)[i].lock_token);
  }
  auto stats = b_->Stats("q");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->locked, 2);
  EXPECT_EQ(stats->active, 2);
}

// Reclaim against re-claim: A's maintenance returns a lapsed lease to active
// and pauses; B's receive cannot take the row A holds (it waits, or skips
// it), and once A commits the message is claimed exactly once more — and the
// first holder's token is dead.
TEST_F(PgInterleavingTest, Spec6_AReclaimedLeaseIsClaimedOnceAndTheOldTokenIsDead) {
  MQ_ASSERT_OK(a_->Send("q", {.body = "m"}).status());
  auto first = a_->Receive("q");
  ASSERT_TRUE(first.ok() && first->size() == 1u);
  clock_.Advance(2'000);  // past the 1 s lease
  Result<std::vector<Message>> rb = Status::Internal("not run");
  Interleave(
      "ReclaimLocks", [&] { ASSERT_TRUE(a_->RunMaintenance().ok()); },
      [&] { rb = b_->Receive("q"); }, /*b_must_wait=*/false);
  ASSERT_TRUE(rb.ok()) << rb.status().ToString();
  auto ra = a_->Receive("q");
  ASSERT_TRUE(ra.ok());
  EXPECT_EQ(rb->size() + ra->size(), 1u) << "claimed " << rb->size() + ra->size() << " times";
  const std::vector<Message>& again = rb->empty() ? *ra : *rb;
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].delivery_count, 2);
  MQ_EXPECT_CODE(a_->Complete("q", (*first)[0].seq, (*first)[0].lock_token), kLockLost);
}

// ---- A server restart mid-workload -----------------------------------------------

// Sends (each with a message id, resent on any failure: SPEC §4 dedup makes
// a resend of a send that did commit return its seq) and receive/complete
// loops run while the server is restarted with an immediate shutdown, on a
// cluster of this test's own. Afterwards: every message id was sent as
// exactly one message (nothing applied twice), every one was completed and
// the queue is empty (nothing lost).
TEST_F(PgStoreTest, Spec10_AServerRestartMidWorkloadLosesNothingAndAppliesNothingTwice) {
  if (std::system("ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no local PostgreSQL binaries to run a cluster of this test's own";
  }
  const std::string state = "/tmp/mqlite-pg-restart-" + std::to_string(::getpid());
  const std::string script = MQLITE_PG_CLUSTER_SCRIPT;
  ASSERT_EQ(std::system(("env -u MQLITE_TEST_PG_URL bash " + script + " start " + state +
                         " >/dev/null").c_str()),
            0);
  struct Stop {
    std::string cmd;
    ~Stop() { (void)std::system(cmd.c_str()); }
  } stop{"bash " + script + " stop " + state + " >/dev/null; rm -rf " + state};
  std::string url;
  {
    std::ifstream in(state + "/url");
    ASSERT_TRUE(std::getline(in, url));
  }
  PostgresOptions o;
  o.url = url;
  o.schema = "restart";
  auto store = OpenPostgresStore(o);
  ASSERT_TRUE(store.has_value()) << store.status().ToString();
  auto opened = Engine::Open(std::move(*store), {});
  ASSERT_TRUE(opened.has_value()) << opened.status().ToString();
  Engine& e = **opened;
  // A short lease: a Receive whose reply the restart cut may have claimed
  // messages that then stay locked until their lease runs out (§7.1).
  MQ_ASSERT_OK(
      e.CreateQueue({.name = "q", .lock_duration_ms = 1000, .dedup_window_ms = 600'000}).status());

  constexpr int kMessages = 300;
  std::mutex mu;
  std::map<std::string, std::set<int64_t>> seqs_of;  // message id -> seqs it was sent as
  std::map<int64_t, int> completed;
  std::atomic<bool> sending{true};
  std::atomic<int> errors{0};
  std::thread producer([&] {
    for (int i = 0; i < kMessages; ++i) {
      const std::string id = "m" + std::to_string(i);
      for (int attempt = 0;; ++attempt) {
        auto seq = e.Send("q", {.body = id, .message_id = id});
        if (seq.ok()) {
          std::lock_guard<std::mutex> l(mu);
          seqs_of[id].insert(*seq);
          break;
        }
        errors.fetch_add(1);
        if (attempt > 200) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    sending.store(false);
  });
  std::thread consumer([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
      if (std::chrono::steady_clock::now() > give_up) return;
      auto got = e.Receive("q", {.max_messages = 8});
      if (!got.ok()) {
        errors.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      if (got->empty()) {
        // Done when the producer is and nothing is left — not at the first
        // empty receive, which messages under a cut Receive's lease also give.
        if (!sending.load()) {
          auto st = e.Stats("q");
          if (st.ok() && st->total == 0) return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      for (const Message& m : *got) {
        // Retried until it is known to have happened: a receipt (§7.2)
        // answers a retry of a complete that did commit.
        for (int attempt = 0; attempt < 200; ++attempt) {
          const Status s = e.Complete("q", m.seq, m.lock_token);
          if (s.ok()) {
            std::lock_guard<std::mutex> l(mu);
            ++completed[m.seq];
            break;
          }
          errors.fetch_add(1);
          if (s.code() == StatusCode::kLockLost) break;  // redelivered later
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(std::system(("bash " + script + " restart " + state + " >/dev/null").c_str()), 0);
  producer.join();
  consumer.join();
  std::printf("[ restart ] %d failed calls retried across the restart\n", errors.load());
  ASSERT_EQ(seqs_of.size(), static_cast<size_t>(kMessages)) << "a send never succeeded";
  for (const auto& [id, seqs] : seqs_of) {
    EXPECT_EQ(seqs.size(), 1u) << id << " was sent as " << seqs.size() << " messages";
    for (int64_t seq : seqs) EXPECT_GE(completed[seq], 1) << id << " never completed";
  }
  auto stats = e.Stats("q");
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->total, 0) << "messages left behind";
  (void)e.Close();
}

}  // namespace
}  // namespace mqlite
