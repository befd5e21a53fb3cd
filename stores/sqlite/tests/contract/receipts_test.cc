// SPEC §7.2 — settlement receipts: an identical retry of a successful settle
// replays (OK, no new effect); any difference is LockLost; receipts expire
// against the clock (no maintenance); Renew never replays.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "contract_util.h"

namespace mqlite::contract {
namespace {

constexpr int64_t kLock = 30'000;
constexpr int64_t kDefaultReceiptRetention = 30LL * 60 * 1000;

class ReceiptsTest : public ContractTest {
 protected:
  void SetUp() override {
    ContractTest::SetUp();
    MQ_ASSERT_OK(CreateQueue("q", WithLock(kLock)));
  }

  // Sends one message and locks it.
  Message SendAndLock(std::string body = "m") {
    Result<int64_t> s = SendBody("q", body);
    EXPECT_TRUE(mqlite::testing::IsOk(s));
    Result<Message> m = ReceiveOne("q");
    EXPECT_TRUE(mqlite::testing::IsOk(m));
    if (!m.has_value()) return Message{};
    EXPECT_EQ(m->seq, *s);
    return *m;
  }
};

TEST_F(ReceiptsTest, Spec7_2_CompleteReplayIsOkWithNoNewEffect) {
  // SPEC §7.2
  Message m = SendAndLock();
  MQ_ASSERT_OK_AND_ASSIGN(int64_t other, SendBody("q", "other"));
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf("q"));
  EXPECT_EQ(st.total, 1);
  EXPECT_EQ(st.active, 1);
  MQ_EXPECT_OK(Find("q", other));
}

TEST_F(ReceiptsTest, Spec7_2_AbandonReplayIsOkWithNoNewEffect) {
  // SPEC §7.2
  Message m = SendAndLock();
  MQ_ASSERT_OK(engine().Abandon("q", m.seq, m.lock_token));
  MQ_EXPECT_OK(engine().Abandon("q", m.seq, m.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find("q", m.seq));
  EXPECT_EQ(after.state, MessageState::kActive);
  EXPECT_EQ(after.delivery_count, 1);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf("q"));
  EXPECT_EQ(st.active, 1);
  EXPECT_EQ(st.total, 1);
}

TEST_F(ReceiptsTest, Spec7_2_AbandonWithDelayReplayKeepsTheSchedule) {
  // SPEC §7.2: the replay does not reschedule.
  Message m = SendAndLock();
  MQ_ASSERT_OK(engine().Abandon("q", m.seq, m.lock_token, 5'000));
  MQ_ASSERT_OK_AND_ASSIGN(Message first, Find("q", m.seq));
  EXPECT_EQ(first.state, MessageState::kScheduled);
  clock_.Advance(2'000);
  MQ_EXPECT_OK(engine().Abandon("q", m.seq, m.lock_token, 5'000));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find("q", m.seq));
  EXPECT_EQ(after.state, MessageState::kScheduled);
  EXPECT_EQ(after.visible_at, first.visible_at);
  clock_.Advance(3'000);  // due at the original time
  MQ_ASSERT_OK_AND_ASSIGN(Message again, ReceiveOne("q"));
  EXPECT_EQ(again.seq, m.seq);
  EXPECT_EQ(again.delivery_count, 2);
}

TEST_F(ReceiptsTest, Spec7_2_RejectReplayIsOkWithNoNewEffect) {
  // SPEC §7.2
  Message m = SendAndLock();
  MQ_ASSERT_OK(engine().Reject("q", m.seq, m.lock_token, "Poison", "bad json"));
  MQ_EXPECT_OK(engine().Reject("q", m.seq, m.lock_token, "Poison", "bad json"));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find("q", m.seq));
  EXPECT_EQ(after.state, MessageState::kDeadLettered);
  EXPECT_EQ(after.dead_letter_reason, "Poison");
  EXPECT_EQ(after.dead_letter_description, "bad json");
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf("q"));
  EXPECT_EQ(st.dead_lettered, 1);
  EXPECT_EQ(st.total, 1);
}

TEST_F(ReceiptsTest, Spec7_2_DeferReplayIsOkWithNoNewEffect) {
  // SPEC §7.2
  Message m = SendAndLock();
  MQ_ASSERT_OK(engine().Defer("q", m.seq, m.lock_token));
  MQ_EXPECT_OK(engine().Defer("q", m.seq, m.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find("q", m.seq));
  EXPECT_EQ(after.state, MessageState::kDeferred);
  EXPECT_EQ(after.delivery_count, 1);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf("q"));
  EXPECT_EQ(st.deferred, 1);
}

TEST_F(ReceiptsTest, Spec7_2_OtherOperationAfterSettleIsLockLost) {
  // SPEC §7.2: the operation is part of the receipt key.
  Message m = SendAndLock();
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_CODE(engine().Abandon("q", m.seq, m.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Reject("q", m.seq, m.lock_token, "r"), kLockLost);
  MQ_EXPECT_CODE(engine().Defer("q", m.seq, m.lock_token), kLockLost);

  Message d = SendAndLock("d");
  MQ_ASSERT_OK(engine().Defer("q", d.seq, d.lock_token));
  MQ_EXPECT_CODE(engine().Complete("q", d.seq, d.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Abandon("q", d.seq, d.lock_token), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find("q", d.seq));
  EXPECT_EQ(after.state, MessageState::kDeferred);
}

TEST_F(ReceiptsTest, Spec7_2_OtherTokenIsLockLost) {
  // SPEC §7.2: the token is part of the receipt key.
  Message m = SendAndLock();
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_CODE(engine().Complete("q", m.seq, ForeignToken()), kLockLost);
  // And a receipt does not carry over to another seq.
  Message n = SendAndLock("n");
  MQ_EXPECT_CODE(engine().Complete("q", n.seq, m.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Complete("q", m.seq + 1000, m.lock_token), kLockLost);
}

TEST_F(ReceiptsTest, Spec7_2_AbandonWithAnotherDelayIsLockLost) {
  // SPEC §7.2: Abandon's delay is part of the key.
  Message m = SendAndLock();
  MQ_ASSERT_OK(engine().Abandon("q", m.seq, m.lock_token, 1'000));
  MQ_EXPECT_CODE(engine().Abandon("q", m.seq, m.lock_token, 2'000), kLockLost);
  MQ_EXPECT_CODE(engine().Abandon("q", m.seq, m.lock_token, 0), kLockLost);
  MQ_EXPECT_OK(engine().Abandon("q", m.seq, m.lock_token, 1'000));

  Message n = SendAndLock("n");
  MQ_ASSERT_OK(engine().Abandon("q", n.seq, n.lock_token));  // delay 0
  MQ_EXPECT_CODE(engine().Abandon("q", n.seq, n.lock_token, 1), kLockLost);
  MQ_EXPECT_OK(engine().Abandon("q", n.seq, n.lock_token, 0));
}

TEST_F(ReceiptsTest, Spec7_2_RejectWithAnotherReasonOrDescriptionIsLockLost) {
  // SPEC §7.2: Reject's reason and description are part of the key.
  Message m = SendAndLock();
  MQ_ASSERT_OK(engine().Reject("q", m.seq, m.lock_token, "Poison", "bad json"));
  MQ_EXPECT_CODE(engine().Reject("q", m.seq, m.lock_token, "Other", "bad json"), kLockLost);
  MQ_EXPECT_CODE(engine().Reject("q", m.seq, m.lock_token, "Poison", "other text"), kLockLost);
  MQ_EXPECT_CODE(engine().Reject("q", m.seq, m.lock_token, "Poison"), kLockLost);
  MQ_EXPECT_OK(engine().Reject("q", m.seq, m.lock_token, "Poison", "bad json"));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find("q", m.seq));
  EXPECT_EQ(after.dead_letter_reason, "Poison");
  EXPECT_EQ(after.dead_letter_description, "bad json");
}

TEST_F(ReceiptsTest, Spec7_2_ReplayWorksAfterTheLeaseWouldHaveExpired) {
  // SPEC §7.2
  Message m = SendAndLock();
  Message a = SendAndLock("a");
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_ASSERT_OK(engine().Abandon("q", a.seq, a.lock_token, 500'000));
  clock_.Advance(kLock * 3);
  MQ_EXPECT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_OK(engine().Abandon("q", a.seq, a.lock_token, 500'000));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find("q", a.seq));
  EXPECT_EQ(after.state, MessageState::kScheduled);
}

TEST_F(ReceiptsTest, Spec7_2_ReceiptExpiresAfterDefaultRetentionWithoutMaintenance) {
  // SPEC §7.2: retained 30 minutes; expiry is checked against now.
  Message m = SendAndLock();
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  clock_.Advance(kDefaultReceiptRetention - 1);
  MQ_EXPECT_OK(engine().Complete("q", m.seq, m.lock_token));
  clock_.Advance(2);
  MQ_EXPECT_CODE(engine().Complete("q", m.seq, m.lock_token), kLockLost);
}

TEST_F(ReceiptsTest, Spec7_2_ReceiptRetentionIsConfigurable) {
  // SPEC §7.2: "Retained 30 minutes (configurable)" via
  // EngineOptions::receipt_retention_ms.
  EngineOptions o = DefaultOptions();
  o.receipt_retention_ms = 60'000;
  MQ_ASSERT_OK(OpenEngine(o));
  Message m = SendAndLock();
  Message r = SendAndLock("r");
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_ASSERT_OK(engine().Reject("q", r.seq, r.lock_token, "Why"));
  clock_.Advance(59'999);
  MQ_EXPECT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_OK(engine().Reject("q", r.seq, r.lock_token, "Why"));
  clock_.Advance(2);
  MQ_EXPECT_CODE(engine().Complete("q", m.seq, m.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Reject("q", r.seq, r.lock_token, "Why"), kLockLost);
}

TEST_F(ReceiptsTest, Spec7_2_Spec6_RenewNeverReplays) {
  // SPEC §7.2, §6
  Message m = SendAndLock();
  MQ_ASSERT_OK_AND_ASSIGN(int64_t until, engine().Renew("q", m.seq, m.lock_token));
  EXPECT_GE(until, m.locked_until);
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_CODE(engine().Renew("q", m.seq, m.lock_token), kLockLost);

  // A Renew's own success leaves nothing to replay once the lease is gone.
  Message n = SendAndLock("n");
  MQ_ASSERT_OK(engine().Renew("q", n.seq, n.lock_token));
  clock_.Advance(kLock);  // locked_until == now: expired
  MQ_EXPECT_CODE(engine().Renew("q", n.seq, n.lock_token), kLockLost);
}

TEST_F(ReceiptsTest, Spec7_2_AbandonReplayDoesNotDisturbTheNextConsumersLock) {
  // SPEC §7.2: a receipt replays the original effect, never a new one.
  Message a = SendAndLock();
  MQ_ASSERT_OK(engine().Abandon("q", a.seq, a.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message b, ReceiveOne("q"));  // consumer B
  ASSERT_EQ(b.seq, a.seq);
  ASSERT_NE(b.lock_token, a.lock_token);
  EXPECT_EQ(b.delivery_count, 2);

  MQ_EXPECT_OK(engine().Abandon("q", a.seq, a.lock_token));  // A's retry: replay
  MQ_ASSERT_OK_AND_ASSIGN(Message now, Find("q", a.seq));
  EXPECT_EQ(now.state, MessageState::kLocked);
  EXPECT_EQ(now.lock_token, b.lock_token);
  EXPECT_EQ(now.locked_until, b.locked_until);
  EXPECT_EQ(now.delivery_count, 2);
  // A's other settles under the old token stay refused.
  MQ_EXPECT_CODE(engine().Complete("q", a.seq, a.lock_token), kLockLost);
  MQ_EXPECT_OK(engine().Complete("q", b.seq, b.lock_token));
  EXPECT_EQ(Total("q"), 0);
}

TEST_F(ReceiptsTest, Spec7_2_Spec6_CompleteBatchItemsReplay) {
  // SPEC §7.2, §6
  Message m1 = SendAndLock("1");
  Message m2 = SendAndLock("2");
  Message m3 = SendAndLock("3");
  std::vector<SettleItem> items = {{m1.seq, m1.lock_token}, {m2.seq, m2.lock_token}};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> first, engine().CompleteBatch("q", items));
  ASSERT_EQ(first.size(), 2u);
  MQ_EXPECT_OK(first[0]);
  MQ_EXPECT_OK(first[1]);
  EXPECT_EQ(Total("q"), 1);

  // Retry: replays; a new item settles; a wrong token fails alone.
  std::vector<SettleItem> retry = {{m1.seq, m1.lock_token},
                                   {m2.seq, ForeignToken()},
                                   {m3.seq, m3.lock_token},
                                   {m2.seq, m2.lock_token}};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> second, engine().CompleteBatch("q", retry));
  ASSERT_EQ(second.size(), 4u);
  MQ_EXPECT_OK(second[0]);
  MQ_EXPECT_CODE(second[1], kLockLost);
  MQ_EXPECT_OK(second[2]);
  MQ_EXPECT_OK(second[3]);
  EXPECT_EQ(Total("q"), 0);

  // A single Complete and a batch item are the same request.
  MQ_EXPECT_OK(engine().Complete("q", m3.seq, m3.lock_token));
  // Batch items expire like single receipts.
  clock_.Advance(kDefaultReceiptRetention + 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> third, engine().CompleteBatch("q", items));
  ASSERT_EQ(third.size(), 2u);
  MQ_EXPECT_CODE(third[0], kLockLost);
  MQ_EXPECT_CODE(third[1], kLockLost);
}

TEST_F(ReceiptsTest, Spec7_2_FailedSettleWritesNoReceipt) {
  // SPEC §7.2: only a successful settle writes a receipt, so a LockLost
  // request never turns into a later "replay".
  Message m = SendAndLock();
  clock_.Advance(kLock + 1);  // lease expired
  MQ_ASSERT_OK_AND_ASSIGN(Message b, ReceiveOne("q"));
  ASSERT_EQ(b.seq, m.seq);
  MQ_EXPECT_CODE(engine().Complete("q", m.seq, m.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Complete("q", m.seq, m.lock_token), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find("q", m.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  EXPECT_EQ(still.lock_token, b.lock_token);
}

}  // namespace
}  // namespace mqlite::contract
