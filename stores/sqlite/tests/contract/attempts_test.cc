// SPEC §7.3 — receive attempts: a retry with the same attempt_id returns the
// same seqs and tokens and claims nothing new; another queue or mode is
// InvalidArgument; records expire after attempt retention (5 min).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "contract_util.h"

namespace mqlite::contract {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kDefaultAttemptRetention = 5LL * 60 * 1000;
constexpr int64_t kLongLock = 3'600'000;  // 1 h: leases outlive the attempt record

class AttemptsTest : public ContractTest {
 protected:
  void SetUp() override {
    ContractTest::SetUp();
    MQ_ASSERT_OK(CreateQueue("q", WithLock(kLongLock)));
    MQ_ASSERT_OK(CreateQueue("other", WithLock(kLongLock)));
  }
};

TEST_F(AttemptsTest, Spec7_3_RetryReturnsSameSeqsAndTokensAndClaimsNothingNew) {
  // SPEC §7.3
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody("q", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody("q", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, SendBody("q", "3"));

  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first, ReceiveAttempt("q", 2, "att-1"));
  ASSERT_THAT(Seqs(first), ElementsAre(s1, s2));

  clock_.Advance(1'000);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> retry, ReceiveAttempt("q", 2, "att-1"));
  ASSERT_THAT(Seqs(retry), ElementsAre(s1, s2));
  for (size_t i = 0; i < retry.size(); ++i) {
    EXPECT_EQ(retry[i].lock_token, first[i].lock_token);
    EXPECT_EQ(retry[i].delivery_count, 1);
    EXPECT_EQ(retry[i].body, first[i].body);
    EXPECT_EQ(retry[i].locked_until, first[i].locked_until);
  }

  // Nothing new claimed: s3 is still active, delivery counts unchanged.
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf("q"));
  EXPECT_EQ(st.locked, 2);
  EXPECT_EQ(st.active, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message p1, Find("q", s1));
  EXPECT_EQ(p1.delivery_count, 1);
  EXPECT_EQ(p1.lock_token, first[0].lock_token);
  MQ_ASSERT_OK_AND_ASSIGN(Message p3, Find("q", s3));
  EXPECT_EQ(p3.state, MessageState::kActive);
  EXPECT_EQ(p3.delivery_count, 0);

  // The replayed tokens are the live ones.
  MQ_EXPECT_OK(engine().Complete("q", s1, retry[0].lock_token));
  MQ_EXPECT_OK(engine().Complete("q", s2, retry[1].lock_token));
}

TEST_F(AttemptsTest, Spec7_3_RetryAfterSettleStillReplaysWithoutClaiming) {
  // SPEC §7.3: within retention the attempt id always maps to its batch.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody("q", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody("q", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first, ReceiveAttempt("q", 1, "att"));
  ASSERT_THAT(Seqs(first), ElementsAre(s1));
  MQ_ASSERT_OK(engine().Complete("q", s1, first[0].lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> retry, ReceiveAttempt("q", 1, "att"));
  EXPECT_THAT(Seqs(retry), ElementsAre(s1));
  MQ_ASSERT_OK_AND_ASSIGN(Message p2, Find("q", s2));
  EXPECT_EQ(p2.state, MessageState::kActive);
}

TEST_F(AttemptsTest, Spec7_3_SameIdWithAnotherQueueOrModeIsInvalidArgument) {
  // SPEC §7.3
  MQ_ASSERT_OK(SendBody("q", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody("q", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t o1, SendBody("other", "o"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first, ReceiveAttempt("q", 1, "att-x"));
  ASSERT_EQ(first.size(), 1u);

  MQ_EXPECT_CODE(ReceiveAttempt("other", 1, "att-x"), kInvalidArgument);
  MQ_EXPECT_CODE(ReceiveAttempt("q", 1, "att-x", ReceiveMode::kReceiveAndDelete),
                 kInvalidArgument);
  // Nothing was claimed or deleted by the refused calls.
  MQ_ASSERT_OK_AND_ASSIGN(Message po, Find("other", o1));
  EXPECT_EQ(po.state, MessageState::kActive);
  EXPECT_EQ(po.delivery_count, 0);
  MQ_ASSERT_OK_AND_ASSIGN(Message p2, Find("q", s2));
  EXPECT_EQ(p2.state, MessageState::kActive);
  EXPECT_EQ(Total("q"), 2);
}

TEST_F(AttemptsTest, Spec7_3_ReceiveAndDeleteIdUsedWithPeekLockIsInvalidArgument) {
  // SPEC §7.3: the mode check works in both directions.
  MQ_ASSERT_OK(SendBody("q", "1"));
  MQ_ASSERT_OK(SendBody("q", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> rd,
                          ReceiveAttempt("q", 1, "rd", ReceiveMode::kReceiveAndDelete));
  ASSERT_EQ(rd.size(), 1u);
  MQ_EXPECT_CODE(ReceiveAttempt("q", 1, "rd", ReceiveMode::kPeekLock), kInvalidArgument);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf("q"));
  EXPECT_EQ(st.active, 1);
  EXPECT_EQ(st.locked, 0);
}

TEST_F(AttemptsTest, Spec7_3_AfterDefaultRetentionARetryClaimsAfresh) {
  // SPEC §7.3: remembered 5 minutes; checked against now (no maintenance).
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody("q", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody("q", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first, ReceiveAttempt("q", 1, "att"));
  ASSERT_THAT(Seqs(first), ElementsAre(s1));

  clock_.Advance(kDefaultAttemptRetention - 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> still, ReceiveAttempt("q", 1, "att"));
  EXPECT_THAT(Seqs(still), ElementsAre(s1));

  clock_.Advance(2);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> fresh, ReceiveAttempt("q", 1, "att"));
  ASSERT_THAT(Seqs(fresh), ElementsAre(s2));
  EXPECT_NE(fresh[0].lock_token, first[0].lock_token);
  EXPECT_EQ(fresh[0].delivery_count, 1);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf("q"));
  EXPECT_EQ(st.locked, 2);
  EXPECT_EQ(st.active, 0);
  // And the fresh claim is itself recorded.
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> replay, ReceiveAttempt("q", 1, "att"));
  ASSERT_THAT(Seqs(replay), ElementsAre(s2));
  EXPECT_EQ(replay[0].lock_token, fresh[0].lock_token);
}

TEST_F(AttemptsTest, Spec7_3_AttemptRetentionIsConfigurable) {
  // SPEC §7.3 with EngineOptions::attempt_retention_ms.
  EngineOptions o = DefaultOptions();
  o.attempt_retention_ms = 10'000;
  MQ_ASSERT_OK(OpenEngine(o));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody("q", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody("q", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first, ReceiveAttempt("q", 1, "att"));
  ASSERT_THAT(Seqs(first), ElementsAre(s1));
  clock_.Advance(9'999);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> same, ReceiveAttempt("q", 1, "att"));
  EXPECT_THAT(Seqs(same), ElementsAre(s1));
  clock_.Advance(2);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> fresh, ReceiveAttempt("q", 1, "att"));
  EXPECT_THAT(Seqs(fresh), ElementsAre(s2));
}

TEST_F(AttemptsTest, Spec7_3_AnAttemptThatClaimedNothingIsNotRecorded) {
  // SPEC §7.3
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> empty, ReceiveAttempt("q", 4, "att-e"));
  EXPECT_THAT(empty, IsEmpty());
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody("q", "late"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveAttempt("q", 4, "att-e"));
  ASSERT_THAT(Seqs(got), ElementsAre(s1));
  // An empty attempt also leaves the id free for another queue or mode.
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none,
                          ReceiveAttempt("other", 1, "att-f", ReceiveMode::kReceiveAndDelete));
  EXPECT_THAT(none, IsEmpty());
  MQ_ASSERT_OK(SendBody("q", "x"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got2, ReceiveAttempt("q", 1, "att-f"));
  EXPECT_EQ(got2.size(), 1u);
}

TEST_F(AttemptsTest, Spec7_3_ReceiveAndDeleteReplayReturnsTheSameDeletedMessages) {
  // SPEC §7.3, §3
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody("q", "one"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody("q", "two"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first,
                          ReceiveAttempt("q", 5, "rd-1", ReceiveMode::kReceiveAndDelete));
  ASSERT_THAT(Seqs(first), ElementsAre(s1, s2));
  EXPECT_EQ(Total("q"), 0);

  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, SendBody("q", "three"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> retry,
                          ReceiveAttempt("q", 5, "rd-1", ReceiveMode::kReceiveAndDelete));
  ASSERT_THAT(Seqs(retry), ElementsAre(s1, s2));
  EXPECT_EQ(retry[0].body, "one");
  EXPECT_EQ(retry[1].body, "two");
  EXPECT_EQ(retry[0].delivery_count, first[0].delivery_count);
  EXPECT_TRUE(retry[0].lock_token.empty());
  // s3 was not consumed by the replay.
  MQ_ASSERT_OK_AND_ASSIGN(Message p3, Find("q", s3));
  EXPECT_EQ(p3.state, MessageState::kActive);
  EXPECT_EQ(Total("q"), 1);
}

}  // namespace
}  // namespace mqlite::contract
