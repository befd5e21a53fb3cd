// SPEC §10 — cancellation and deadlines: a call whose stop token is set or
// whose deadline passed before it starts executes nothing; a call waiting
// (long-poll, the single writer) returns Cancelled promptly and mutates
// nothing; inside Tx the next operation is refused and the Tx rolls back.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "contract_util.h"

namespace mqlite::contract {
namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto kFunctionalBound = std::chrono::seconds(10);  // not a perf budget

CallOptions Stopped() {
  static std::stop_source src = [] {
    std::stop_source s;
    s.request_stop();
    return s;
  }();
  CallOptions c;
  c.stop_token = src.get_token();
  return c;
}

CallOptions PastDeadline() {
  CallOptions c;
  c.deadline = Steady::now() - milliseconds(1);
  return c;
}

OutgoingMessage Out(std::string body) {
  OutgoingMessage m;
  m.body = std::move(body);
  return m;
}

class CancelTest : public ContractTest {
 protected:
  void SetUp() override {
    ContractTest::SetUp();
    MQ_ASSERT_OK(CreateQueue("cq"));
  }
};

TEST_F(CancelTest, Spec10_StopRequestedBeforeSendWritesNothing) {
  // SPEC §10
  MQ_EXPECT_CODE(engine().Send("cq", Out("never"), Stopped()), kCancelled);
  std::vector<OutgoingMessage> batch = {Out("a"), Out("b")};
  MQ_EXPECT_CODE(engine().SendBatch("cq", batch, Stopped()), kCancelled);
  EXPECT_EQ(Total("cq"), 0);
}

TEST_F(CancelTest, Spec10_StopRequestedBeforeReceiveClaimsNothing) {
  // SPEC §10
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody("cq", "m"));
  ReceiveOptions o;
  o.max_messages = 10;
  MQ_EXPECT_CODE(engine().Receive("cq", o, Stopped()), kCancelled);
  o.mode = ReceiveMode::kReceiveAndDelete;
  MQ_EXPECT_CODE(engine().Receive("cq", o, Stopped()), kCancelled);
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find("cq", seq));
  EXPECT_EQ(m.state, MessageState::kActive);
  EXPECT_EQ(m.delivery_count, 0);
  EXPECT_EQ(Total("cq"), 1);
}

TEST_F(CancelTest, Spec10_StopRequestedBeforeCompleteSettlesNothing) {
  // SPEC §10
  MQ_ASSERT_OK(SendBody("cq", "m"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne("cq"));
  MQ_EXPECT_CODE(engine().Complete("cq", m.seq, m.lock_token, Stopped()), kCancelled);
  MQ_EXPECT_CODE(engine().Abandon("cq", m.seq, m.lock_token, 0, Stopped()), kCancelled);
  MQ_EXPECT_CODE(engine().Reject("cq", m.seq, m.lock_token, "r", "", Stopped()), kCancelled);
  MQ_EXPECT_CODE(engine().Defer("cq", m.seq, m.lock_token, Stopped()), kCancelled);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find("cq", m.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  EXPECT_EQ(still.lock_token, m.lock_token);
  // The cancelled settles changed nothing: the lease still completes.
  MQ_EXPECT_OK(engine().Complete("cq", m.seq, m.lock_token));
  EXPECT_EQ(Total("cq"), 0);
}

TEST_F(CancelTest, Spec10_PastDeadlineIsCancelledAndExecutesNothing) {
  // SPEC §10
  MQ_EXPECT_CODE(engine().Send("cq", Out("never"), CallOptions::Timeout(-1)), kCancelled);
  MQ_EXPECT_CODE(engine().Send("cq", Out("never"), PastDeadline()), kCancelled);
  EXPECT_EQ(Total("cq"), 0);

  MQ_ASSERT_OK(SendBody("cq", "m"));
  ReceiveOptions o;
  MQ_EXPECT_CODE(engine().Receive("cq", o, CallOptions::Timeout(-1)), kCancelled);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf("cq"));
  EXPECT_EQ(st.active, 1);
  EXPECT_EQ(st.locked, 0);

  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne("cq"));
  MQ_EXPECT_CODE(engine().Complete("cq", m.seq, m.lock_token, PastDeadline()), kCancelled);
  MQ_EXPECT_CODE(engine().Tx([](TxContext&) { return Status::OK(); }, PastDeadline()),
                 kCancelled);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find("cq", m.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
}

TEST_F(CancelTest, Spec10_Spec5_LongPollIsCancelledPromptlyByStopSource) {
  // SPEC §10, §5
  std::stop_source src;
  CallOptions call;
  call.stop_token = src.get_token();
  ReceiveOptions o;
  o.wait_ms = 20'000;
  auto fut = std::async(std::launch::async, [&] {
    const auto t0 = Steady::now();
    Result<std::vector<Message>> r = engine().Receive("cq", o, call);
    return std::make_pair(r.status(), Steady::now() - t0);
  });
  std::this_thread::sleep_for(milliseconds(150));
  src.request_stop();
  ASSERT_EQ(fut.wait_for(kFunctionalBound), std::future_status::ready)
      << "a 20 s long-poll ignored request_stop()";
  auto [s, took] = fut.get();
  MQ_EXPECT_CODE(s, kCancelled);
  EXPECT_LT(took, kFunctionalBound);
  // A message sent afterwards was not claimed by the cancelled call.
  MQ_ASSERT_OK(SendBody("cq", "later"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf("cq"));
  EXPECT_EQ(st.active, 1);
}

TEST_F(CancelTest, Spec10_LongPollDeadlineEndsTheWaitWithCancelled) {
  // SPEC §10: a deadline shorter than the wait ends it with Cancelled.
  ReceiveOptions o;
  o.wait_ms = 20'000;
  const auto t0 = Steady::now();
  MQ_EXPECT_CODE(engine().Receive("cq", o, CallOptions::Timeout(200)), kCancelled);
  EXPECT_LT(Steady::now() - t0, kFunctionalBound);
}

TEST_F(CancelTest, Spec10_CallWaitingForTheWriterIsCancelledAndWritesNothing) {
  // SPEC §10, §9: thread 1 holds the single writer (a Tx blocked in its
  // callback); thread 2's Send with a 100 ms deadline gives up with Cancelled.
  std::promise<void> inside;
  std::promise<void> release;
  std::shared_future<void> release_f = release.get_future().share();
  auto holder = std::async(std::launch::async, [&] {
    return engine().Tx([&](TxContext& tx) -> Status {
      MQLITE_RETURN_IF_ERROR(tx.Send("cq", Out("from tx")).status());
      inside.set_value();
      release_f.wait();
      return Status::OK();
    });
  });
  inside.get_future().wait();

  const auto t0 = Steady::now();
  Status s = engine().Send("cq", Out("from waiter"), CallOptions::Timeout(100)).status();
  const auto took = Steady::now() - t0;
  release.set_value();
  MQ_ASSERT_OK(holder.get());

  MQ_EXPECT_CODE(s, kCancelled);
  EXPECT_LT(took, kFunctionalBound);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAll("cq"));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].body, "from tx");
}

TEST_F(CancelTest, Spec10_StopWhileWaitingForTheWriterIsCancelled) {
  // SPEC §10: the same with a stop token instead of a deadline, on a settle.
  MQ_ASSERT_OK(SendBody("cq", "m"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne("cq"));
  std::promise<void> inside;
  std::promise<void> release;
  std::shared_future<void> release_f = release.get_future().share();
  auto holder = std::async(std::launch::async, [&] {
    return engine().Tx([&](TxContext&) -> Status {
      inside.set_value();
      release_f.wait();
      return Status::OK();
    });
  });
  inside.get_future().wait();

  std::stop_source src;
  CallOptions call;
  call.stop_token = src.get_token();
  auto waiter = std::async(std::launch::async, [&] {
    return engine().Complete("cq", m.seq, m.lock_token, call);
  });
  std::this_thread::sleep_for(milliseconds(100));
  src.request_stop();
  const bool prompt = waiter.wait_for(kFunctionalBound) == std::future_status::ready;
  release.set_value();
  MQ_ASSERT_OK(holder.get());
  ASSERT_TRUE(prompt) << "Complete waiting for the writer ignored request_stop()";
  MQ_EXPECT_CODE(waiter.get(), kCancelled);

  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find("cq", m.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  MQ_EXPECT_OK(engine().Complete("cq", m.seq, m.lock_token));
}

TEST_F(CancelTest, Spec10_Spec8_StopDuringTxRefusesNextOperationAndRollsBack) {
  // SPEC §10, §8
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
    return sqlite3_exec(db, "CREATE TABLE app (v TEXT)", nullptr, nullptr, nullptr) == SQLITE_OK
               ? Status::OK()
               : Status::Internal("create table");
  }));

  std::stop_source src;
  CallOptions call;
  call.stop_token = src.get_token();
  Status second = Status::OK();
  Status first = Status::Internal("not run");
  Status tx = engine().Tx(
      [&](TxContext& t) -> Status {
        Result<sqlite3*> db = SqliteHandle(t);
        if (!db.has_value()) return db.error();
        if (sqlite3_exec(*db, "INSERT INTO app VALUES ('row')", nullptr, nullptr, nullptr) !=
            SQLITE_OK) {
          return Status::Internal("insert");
        }
        first = t.Send("cq", Out("before stop")).status();
        src.request_stop();
        second = t.Send("cq", Out("after stop")).status();
        return Status::OK();  // the callback ignores the failure
      },
      call);
  MQ_EXPECT_OK(first);
  MQ_EXPECT_CODE(second, kCancelled);
  MQ_EXPECT_CODE(tx, kCancelled);

  // Everything rolled back: neither message, nor the row.
  EXPECT_EQ(Total("cq"), 0);
  int64_t rows = -1;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& t) -> Status {
    MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(t));
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM app", -1, &st, nullptr) != SQLITE_OK) {
      return Status::Internal("prepare");
    }
    if (sqlite3_step(st) == SQLITE_ROW) rows = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return Status::OK();
  }));
  EXPECT_EQ(rows, 0);
}

TEST_F(CancelTest, Spec10_Spec8_StopDuringTxRefusesSettleInside) {
  // SPEC §10, §8: a settle after the stop is refused; the lease is untouched.
  MQ_ASSERT_OK(SendBody("cq", "m"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne("cq"));
  std::stop_source src;
  CallOptions call;
  call.stop_token = src.get_token();
  Status inner = Status::OK();
  Status tx = engine().Tx(
      [&](TxContext& t) -> Status {
        src.request_stop();
        inner = t.Complete("cq", m.seq, m.lock_token);
        return Status::OK();
      },
      call);
  MQ_EXPECT_CODE(inner, kCancelled);
  MQ_EXPECT_CODE(tx, kCancelled);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find("cq", m.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  MQ_EXPECT_OK(engine().Complete("cq", m.seq, m.lock_token));
}

}  // namespace
}  // namespace mqlite::contract
