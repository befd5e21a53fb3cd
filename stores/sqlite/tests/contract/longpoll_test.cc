// SPEC §5 — long-poll: a waiting Receive is woken by a Send in this engine or
// by Close (→ Closed); a short wait on an empty queue returns nothing; wait is
// capped at 20 s. Real threads; the time bounds below are generous functional
// checks ("returned long before the 20 s wait"), not performance budgets.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "contract_util.h"

namespace mqlite::contract {
namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto kFunctionalBound = std::chrono::seconds(10);  // << the 20 s wait

class LongPollTest : public ContractTest {
 protected:
  void SetUp() override {
    ContractTest::SetUp();
    MQ_ASSERT_OK(CreateQueue("lp"));
  }

  ReceiveOptions Wait(int64_t wait_ms) {
    ReceiveOptions o;
    o.max_messages = 1;
    o.wait_ms = wait_ms;
    return o;
  }
};

TEST_F(LongPollTest, Spec5_WaitingReceiveIsWokenBySendFromAnotherThread) {
  // SPEC §5
  std::promise<void> started;
  auto started_f = started.get_future();
  auto fut = std::async(std::launch::async, [&] {
    started.set_value();
    const auto t0 = Steady::now();
    Result<std::vector<Message>> r = engine().Receive("lp", Wait(20'000));
    return std::make_pair(std::move(r), Steady::now() - t0);
  });
  started_f.wait();
  // Give the receiver a moment to start waiting (if it has not, the message
  // is simply there when it looks: same observable result).
  std::this_thread::sleep_for(milliseconds(100));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody("lp", "wake up"));

  ASSERT_EQ(fut.wait_for(kFunctionalBound), std::future_status::ready)
      << "Receive(wait 20 s) was not woken by the Send";
  auto [r, took] = fut.get();
  MQ_ASSERT_OK(r);
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].seq, seq);
  EXPECT_EQ((*r)[0].body, "wake up");
  EXPECT_FALSE((*r)[0].lock_token.empty());
  EXPECT_LT(took, kFunctionalBound);
}

TEST_F(LongPollTest, Spec5_Spec9_CloseWakesAWaitingReceiveWithClosed) {
  // SPEC §5, §9
  std::promise<void> started;
  auto started_f = started.get_future();
  auto fut = std::async(std::launch::async, [&] {
    started.set_value();
    const auto t0 = Steady::now();
    Result<std::vector<Message>> r = engine().Receive("lp", Wait(20'000));
    return std::make_pair(r.status(), Steady::now() - t0);
  });
  started_f.wait();
  std::this_thread::sleep_for(milliseconds(100));
  MQ_ASSERT_OK(engine().Close());

  ASSERT_EQ(fut.wait_for(kFunctionalBound), std::future_status::ready)
      << "Receive(wait 20 s) was not woken by Close";
  auto [s, took] = fut.get();
  MQ_EXPECT_CODE(s, kClosed);
  EXPECT_LT(took, kFunctionalBound);
  // Later calls are fenced too.
  MQ_EXPECT_CODE(engine().Receive("lp", Wait(0)), kClosed);
}

TEST_F(LongPollTest, Spec5_ShortWaitOnEmptyQueueReturnsEmptyOk) {
  // SPEC §5
  const auto t0 = Steady::now();
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, engine().Receive("lp", Wait(200)));
  EXPECT_TRUE(got.empty());
  // It did wait (the wait is real time), and returned once it ended.
  EXPECT_GE(Steady::now() - t0, milliseconds(190));
}

TEST_F(LongPollTest, Spec5_WaitOver20SecondsIsInvalidArgument) {
  // SPEC §5: wait ≤ 20 s.
  MQ_ASSERT_OK(SendBody("lp", "present"));
  MQ_EXPECT_CODE(engine().Receive("lp", Wait(20'001)), kInvalidArgument);
  MQ_EXPECT_CODE(engine().Receive("lp", Wait(-1)), kInvalidArgument);
  // Nothing was claimed by the refused calls; exactly 20 s is accepted.
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf("lp"));
  EXPECT_EQ(st.active, 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, engine().Receive("lp", Wait(20'000)));
  EXPECT_EQ(got.size(), 1u);
}

TEST_F(LongPollTest, Spec5_Spec2_WaiterReceivesOnlyFromItsOwnQueue) {
  // SPEC §5, §2: a send to another queue does not hand the waiter a message
  // from that queue.
  MQ_ASSERT_OK(CreateQueue("other"));
  auto fut = std::async(std::launch::async, [&] {
    return engine().Receive("lp", Wait(20'000));
  });
  std::this_thread::sleep_for(milliseconds(100));
  MQ_ASSERT_OK(SendBody("other", "not for lp"));
  std::this_thread::sleep_for(milliseconds(300));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody("lp", "for lp"));
  ASSERT_EQ(fut.wait_for(kFunctionalBound), std::future_status::ready);
  Result<std::vector<Message>> r = fut.get();
  MQ_ASSERT_OK(r);
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].seq, seq);
  EXPECT_EQ((*r)[0].queue, "lp");
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf("other"));
  EXPECT_EQ(st.active, 1);
}

TEST_F(LongPollTest, Spec5_WaiterIsWokenWhenASettleUnblocksItsGroup) {
  // SPEC §5: a group member becomes eligible when its head is completed.
  MQ_ASSERT_OK(SendBody("lp", "unused"));  // keep seqs non-trivial
  MQ_ASSERT_OK_AND_ASSIGN(Message u, ReceiveOne("lp"));
  OutgoingMessage g1, g2;
  g1.body = "g1";
  g1.group_id = "G";
  g2.body = "g2";
  g2.group_id = "G";
  MQ_ASSERT_OK(engine().Send("lp", g1));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, engine().Send("lp", g2));
  MQ_ASSERT_OK_AND_ASSIGN(Message head, ReceiveOne("lp"));
  ASSERT_EQ(head.body, "g1");

  auto fut = std::async(std::launch::async, [&] {
    return engine().Receive("lp", Wait(20'000));
  });
  std::this_thread::sleep_for(milliseconds(100));
  MQ_ASSERT_OK(engine().Complete("lp", head.seq, head.lock_token));
  ASSERT_EQ(fut.wait_for(kFunctionalBound), std::future_status::ready);
  Result<std::vector<Message>> r = fut.get();
  MQ_ASSERT_OK(r);
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].seq, s2);
  MQ_EXPECT_OK(engine().Complete("lp", u.seq, u.lock_token));
}

}  // namespace
}  // namespace mqlite::contract
