// SPEC §4 — duplicate detection: key = message_id (non-empty) or SHA-256 of
// the body; same key + same body within the window → original seq, nothing
// written; same key + other body → DedupConflict (single) or seq 0 (batch slot).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "contract_util.h"

namespace mqlite::contract {
namespace {


constexpr int64_t kWindow = 60'000;

OutgoingMessage Msg(std::string body, std::optional<std::string> id = std::nullopt) {
  OutgoingMessage m;
  m.body = std::move(body);
  m.message_id = std::move(id);
  return m;
}

class DedupTest : public ContractTest {
 protected:
  void SetUp() override {
    ContractTest::SetUp();
    MQ_ASSERT_OK(CreateQueue("dq", WithDedup(kWindow)));
  }
};

TEST_F(DedupTest, Spec4_SameMessageIdSameBodyReturnsOriginalSeqAndWritesNothing) {
  // SPEC §4
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, engine().Send("dq", Msg("payload", "id-1")));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats before, StatsOf("dq"));
  clock_.Advance(kWindow - 1);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, engine().Send("dq", Msg("payload", "id-1")));
  EXPECT_EQ(s2, s1);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats after, StatsOf("dq"));
  EXPECT_EQ(after.total, 1);
  EXPECT_EQ(after.total, before.total);
  EXPECT_EQ(after.body_bytes, before.body_bytes);
}

TEST_F(DedupTest, Spec4_WithoutMessageIdTheKeyIsTheBodyHash) {
  // SPEC §4
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, engine().Send("dq", Msg("same body")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, engine().Send("dq", Msg("same body")));
  EXPECT_EQ(s2, s1);
  // An empty message_id counts as absent: the body hash is the key.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, engine().Send("dq", Msg("same body", "")));
  EXPECT_EQ(s3, s1);
  // A different body is a different key: a new message, no conflict.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s4, engine().Send("dq", Msg("other body")));
  EXPECT_GT(s4, s1);
  EXPECT_EQ(Total("dq"), 2);
}

TEST_F(DedupTest, Spec4_MessageIdKeyIsIndependentOfBodyHashKey) {
  // SPEC §4: a message with an id is keyed by the id, not by its body.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, engine().Send("dq", Msg("body")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, engine().Send("dq", Msg("body", "id-x")));
  EXPECT_NE(s2, s1);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, engine().Send("dq", Msg("body", "id-y")));
  EXPECT_NE(s3, s2);
  EXPECT_EQ(Total("dq"), 3);
}

TEST_F(DedupTest, Spec4_SameIdDifferentBodyIsDedupConflictAndWritesNothing) {
  // SPEC §4
  MQ_ASSERT_OK(engine().Send("dq", Msg("original", "id-1")));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats before, StatsOf("dq"));
  MQ_EXPECT_CODE(engine().Send("dq", Msg("changed", "id-1")), kDedupConflict);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats after, StatsOf("dq"));
  EXPECT_TRUE(mqlite::testing::StatsEq(after, before));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAll("dq"));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].body, "original");
}

TEST_F(DedupTest, Spec4_BatchConflictSlotGetsSeqZeroOthersCommit) {
  // SPEC §4
  MQ_ASSERT_OK_AND_ASSIGN(int64_t orig, engine().Send("dq", Msg("original", "k")));
  std::vector<OutgoingMessage> batch = {Msg("first", "a"), Msg("changed", "k"), Msg("third", "c"),
                                        Msg("original", "k")};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> seqs, engine().SendBatch("dq", batch));
  ASSERT_EQ(seqs.size(), 4u);
  EXPECT_GT(seqs[0], orig);
  EXPECT_EQ(seqs[1], 0);
  EXPECT_GT(seqs[2], seqs[0]);
  EXPECT_EQ(seqs[3], orig);  // same key, same body: the original
  EXPECT_EQ(Total("dq"), 3);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAll("dq"));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].body, "original");
  EXPECT_EQ(all[1].body, "first");
  EXPECT_EQ(all[2].body, "third");
}

TEST_F(DedupTest, Spec4_DuplicatesInsideOneBatch) {
  // SPEC §4: a later slot with the same key and body gets the earlier slot's
  // seq; with another body it gets 0.
  std::vector<OutgoingMessage> batch = {Msg("one", "d"), Msg("x"), Msg("one", "d"),
                                        Msg("two", "d"), Msg("x")};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> seqs, engine().SendBatch("dq", batch));
  ASSERT_EQ(seqs.size(), 5u);
  EXPECT_GT(seqs[0], 0);
  EXPECT_GT(seqs[1], 0);
  EXPECT_NE(seqs[0], seqs[1]);
  EXPECT_EQ(seqs[2], seqs[0]);
  EXPECT_EQ(seqs[3], 0);
  EXPECT_EQ(seqs[4], seqs[1]);
  EXPECT_EQ(Total("dq"), 2);
  // The in-batch record is durable: a later single resend replays/conflicts.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t again, engine().Send("dq", Msg("one", "d")));
  EXPECT_EQ(again, seqs[0]);
  MQ_EXPECT_CODE(engine().Send("dq", Msg("two", "d")), kDedupConflict);
}

TEST_F(DedupTest, Spec4_RecordOutlivesTheMessage) {
  // SPEC §4
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, engine().Send("dq", Msg("work", "job-7")));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne("dq"));
  ASSERT_EQ(m.seq, s1);
  MQ_ASSERT_OK(engine().Complete("dq", m.seq, m.lock_token));
  EXPECT_EQ(Total("dq"), 0);

  clock_.Advance(kWindow / 2);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, engine().Send("dq", Msg("work", "job-7")));
  EXPECT_EQ(s2, s1);
  EXPECT_EQ(Total("dq"), 0);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany("dq", 10));
  EXPECT_TRUE(none.empty());
  // Still a conflict with another body.
  MQ_EXPECT_CODE(engine().Send("dq", Msg("other", "job-7")), kDedupConflict);
}

TEST_F(DedupTest, Spec4_AfterTheWindowASendIsNewWithoutMaintenance) {
  // SPEC §4, §7: expiry is checked against now, no maintenance run.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, engine().Send("dq", Msg("body", "id-1")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t h1, engine().Send("dq", Msg("hashed")));
  clock_.Advance(kWindow + 1);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, engine().Send("dq", Msg("body", "id-1")));
  EXPECT_GT(s2, s1);
  EXPECT_GT(s2, h1);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t h2, engine().Send("dq", Msg("hashed")));
  EXPECT_GT(h2, s2);
  // Another body after the window is not a conflict either.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, engine().Send("dq", Msg("new body", "id-2")));
  EXPECT_GT(s3, h2);
  EXPECT_EQ(Total("dq"), 5);
  // The new send opened a new window.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s4, engine().Send("dq", Msg("body", "id-1")));
  EXPECT_EQ(s4, s2);
}

TEST_F(DedupTest, Spec4_ExpiredWindowAfterConflictAcceptsOtherBody) {
  // SPEC §4: a conflict only exists within the window.
  MQ_ASSERT_OK(engine().Send("dq", Msg("v1", "id")));
  MQ_EXPECT_CODE(engine().Send("dq", Msg("v2", "id")), kDedupConflict);
  clock_.Advance(kWindow + 1);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s, engine().Send("dq", Msg("v2", "id")));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find("dq", s));
  EXPECT_EQ(m.body, "v2");
}

TEST_F(DedupTest, Spec4_DedupOffEverySendIsNew) {
  // SPEC §4, §2: dedup_window 0 = off.
  MQ_ASSERT_OK(CreateQueue("plain"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a, engine().Send("plain", Msg("same", "id")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b, engine().Send("plain", Msg("same", "id")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t c, engine().Send("plain", Msg("different", "id")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t d, engine().Send("plain", Msg("same")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t e, engine().Send("plain", Msg("same")));
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_LT(c, d);
  EXPECT_LT(d, e);
  std::vector<OutgoingMessage> batch = {Msg("same", "id"), Msg("same", "id")};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> seqs, engine().SendBatch("plain", batch));
  ASSERT_EQ(seqs.size(), 2u);
  EXPECT_GT(seqs[0], e);
  EXPECT_GT(seqs[1], seqs[0]);
  EXPECT_EQ(Total("plain"), 7);
}

TEST_F(DedupTest, Spec4_Spec2_QueuesAreIndependentDedupNamespaces) {
  // SPEC §4, §2
  MQ_ASSERT_OK(CreateQueue("dq2", WithDedup(kWindow)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a, engine().Send("dq", Msg("body", "shared-id")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b, engine().Send("dq2", Msg("body", "shared-id")));
  EXPECT_NE(a, b);
  // Another body under the same id in the other queue is not a conflict.
  MQ_ASSERT_OK(CreateQueue("dq3", WithDedup(kWindow)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t c, engine().Send("dq3", Msg("other", "shared-id")));
  EXPECT_NE(c, a);
  // Body-hash keys are per queue too.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t h1, engine().Send("dq", Msg("anon")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t h2, engine().Send("dq2", Msg("anon")));
  EXPECT_NE(h1, h2);
  EXPECT_EQ(Total("dq"), 2);
  EXPECT_EQ(Total("dq2"), 2);
  EXPECT_EQ(Total("dq3"), 1);
}

}  // namespace
}  // namespace mqlite::contract
