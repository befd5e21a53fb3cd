// TckLifecycle (continued) — claiming: Peek-Lock and Receive-and-Delete
// (SPEC §3 rows 5–6), batches, priority, group heads and strict FIFO (§5), on
// one engine with the fixture's ManualClock. Concurrent claimers are
// TckConcurrency's; the full §5 ordering matrix is TckOrdering's.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorReceive() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

// ---- Receive (SPEC §3 rows 5–6, §5) ------------------------------------------

MQLITE_TCK_GRADES(TckLifecycle, Spec3_PeekLockReceiveLocksWithNewTokenAndLease, "G2");
TEST_P(TckLifecycle, Spec3_PeekLockReceiveLocksWithNewTokenAndLease) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "slow", {.lock_duration_ms = 45'000}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "slow", "x"));
  clock().Advance(100);
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "slow"));
  EXPECT_EQ(m.seq, seq);
  EXPECT_EQ(m.state, MessageState::kLocked);
  EXPECT_EQ(m.delivery_count, 1);
  EXPECT_FALSE(m.lock_token.empty());
  EXPECT_EQ(m.locked_until, kT0 + 100 + 45'000);
  EXPECT_EQ(m.body, "x");

  MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "slow", seq));
  EXPECT_EQ(seen.state, MessageState::kLocked);
  EXPECT_EQ(seen.delivery_count, 1);
  EXPECT_EQ(seen.locked_until, kT0 + 100 + 45'000);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "slow"));
  EXPECT_EQ(st.locked, 1);
  EXPECT_EQ(st.active, 0);
  // A locked message is not eligible again.
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> again, ReceiveMany(engine(), "slow", 10));
  EXPECT_TRUE(again.empty());

  // Every claim mints a new token.
  MQ_ASSERT_OK(engine().Abandon("slow", seq, m.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message m2, ReceiveOne(engine(), "slow"));
  EXPECT_EQ(m2.delivery_count, 2);
  EXPECT_FALSE(m2.lock_token.empty());
  EXPECT_NE(m2.lock_token, m.lock_token);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec3_ReceiveAndDeleteDeletesInTheClaimCommit, "G2", "G6");
TEST_P(TckLifecycle, Spec3_ReceiveAndDeleteDeletesInTheClaimCommit) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "jobs", "gone"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "jobs", ReceiveMode::kReceiveAndDelete));
  EXPECT_EQ(m.seq, seq);
  EXPECT_EQ(m.body, "gone");
  EXPECT_EQ(m.delivery_count, 1);
  EXPECT_TRUE(m.lock_token.empty());
  EXPECT_EQ(m.locked_until, 0);
  MQ_EXPECT_CODE(Find(engine(), "jobs", seq), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_EQ(st.total, 0);
  LockToken some;
  some.bytes[0] = 1;
  MQ_EXPECT_CODE(engine().Complete("jobs", seq, some), kLockLost);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_EXPECT_CODE(Find(engine(), "jobs", seq), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(got.empty());
}

MQLITE_TCK_GRADES(TckLifecycle, Spec5_ReceiveOnEmptyQueueReturnsNothing, "G2");
TEST_P(TckLifecycle, Spec5_ReceiveOnEmptyQueueReturnsNothing) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 256));
  EXPECT_TRUE(got.empty());
}

MQLITE_TCK_GRADES(TckLifecycle, Spec5_ReceiveBatchClaimsSeveralInOneCall, "G2", "G3");
TEST_P(TckLifecycle, Spec5_ReceiveBatchClaimsSeveralInOneCall) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  std::vector<int64_t> sent;
  for (int i = 0; i < 10; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(int64_t s, SendBody(engine(), "jobs", "m" + std::to_string(i)));
    sent.push_back(s);
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 4));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(Seqs(got), std::vector<int64_t>(sent.begin(), sent.begin() + 4));
  std::set<std::string> tokens;
  for (const Message& m : got) {
    EXPECT_EQ(m.state, MessageState::kLocked);
    EXPECT_EQ(m.delivery_count, 1);
    EXPECT_EQ(m.locked_until, kT0 + kLock);
    EXPECT_FALSE(m.lock_token.empty());
    tokens.insert(m.lock_token.ToHex());
  }
  EXPECT_EQ(tokens.size(), 4u) << "every claimed message gets its own token";
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_EQ(st.locked, 4);
  EXPECT_EQ(st.active, 6);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> rest, ReceiveMany(engine(), "jobs", 256));
  EXPECT_EQ(Seqs(rest), std::vector<int64_t>(sent.begin() + 4, sent.end()));
}

// Batches bigger than a store's chunking (the SQLite store writes 64, 32, …
// rows a statement): a SendBatch of 150 with groups and priorities, then one
// Receive of 120 with expired candidates among the live ones, so the claim
// retires some and reads the index again. Every claimable head comes back
// once, in claim order, each with its own token that settles only its message.
MQLITE_TCK_GRADES(TckLifecycle, Spec5_LargeBatchesKeepOrderHeadsAndTheirOwnTokens, "G2", "G3");
TEST_P(TckLifecycle, Spec5_LargeBatchesKeepOrderHeadsAndTheirOwnTokens) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  std::vector<OutgoingMessage> batch;
  for (int i = 0; i < 150; ++i) {
    OutgoingMessage m{.body = "m" + std::to_string(i), .priority = i % 3};
    if (i % 10 == 0) {
      m.group_id = "g" + std::to_string((i / 10) % 3);  // 5 members each
    } else if (i % 7 == 3) {
      m.ttl_ms = 1'000;  // expired by the Receive
    }
    batch.push_back(std::move(m));
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<SendOutcome> sent, engine().SendBatch("jobs", batch));
  ASSERT_EQ(sent.size(), batch.size());
  clock().Advance(2'000);

  // Claimable: the live ungrouped messages and each group's first member,
  // priority desc then seq.
  std::vector<std::pair<int, int64_t>> order;  // (-priority, seq)
  for (int i = 0; i < 150; ++i) {
    const bool head = i % 10 == 0 && i < 30;
    const bool ungrouped_live = i % 10 != 0 && i % 7 != 3;
    if (head || ungrouped_live) order.emplace_back(-(i % 3), sent[i].seq);
  }
  std::sort(order.begin(), order.end());
  std::vector<int64_t> want;
  for (const auto& [p, seq] : order) want.push_back(seq);
  ASSERT_LT(want.size(), 120u);

  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 120));
  EXPECT_EQ(Seqs(got), want);
  std::set<std::string> tokens;
  for (const Message& m : got) tokens.insert(m.lock_token.ToHex());
  EXPECT_EQ(tokens.size(), got.size()) << "every claimed message gets its own token";
  ASSERT_GE(got.size(), 2u);
  EXPECT_FALSE(engine().Complete("jobs", got[0].seq, got[1].lock_token).ok())
      << "a token settles only the message it was minted for";
  for (const Message& m : got) MQ_EXPECT_OK(engine().Complete("jobs", m.seq, m.lock_token));

  // The groups' second members are the heads now (priorities 0, 1, 2).
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> next, ReceiveMany(engine(), "jobs", 120));
  EXPECT_EQ(Seqs(next), (std::vector<int64_t>{sent[50].seq, sent[40].seq, sent[30].seq}));
}

MQLITE_TCK_GRADES(TckLifecycle, Spec5_PriorityHigherFirstThenSeq, "G3");
TEST_P(TckLifecycle, Spec5_PriorityHigherFirstThenSeq) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  std::vector<int64_t> s;
  for (int p : {0, 5, 9, 5, 0, 9}) {
    MQ_ASSERT_OK_AND_ASSIGN(
        int64_t seq, engine().Send("jobs", {.body = "p" + std::to_string(p), .priority = p}));
    s.push_back(seq);
  }
  std::vector<int64_t> want = {s[2], s[5], s[1], s[3], s[0], s[4]};
  std::vector<int64_t> order;
  for (size_t i = 0; i < want.size(); ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "jobs"));
    order.push_back(m.seq);
  }
  EXPECT_EQ(order, want);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec5_BatchReceiveFollowsPriorityOrder, "G2", "G3");
TEST_P(TckLifecycle, Spec5_BatchReceiveFollowsPriorityOrder) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  std::vector<int64_t> s;
  for (int p : {1, 3, 2, 3, 0}) {
    MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", {.body = "b", .priority = p}));
    s.push_back(seq);
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 3));
  EXPECT_EQ(Seqs(got), (std::vector<int64_t>{s[1], s[3], s[2]}));
}

MQLITE_TCK_GRADES(TckLifecycle, Spec5_GroupedMessagesAreClaimedHeadFirstOnePerGroup, "G2", "G3");
TEST_P(TckLifecycle, Spec5_GroupedMessagesAreClaimedHeadFirstOnePerGroup) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a1, engine().Send("jobs", {.body = "a1", .group_id = "A"}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a2, engine().Send("jobs", {.body = "a2", .group_id = "A"}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b1, engine().Send("jobs", {.body = "b1", .group_id = "B"}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t u, SendBody(engine(), "jobs", "ungrouped"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 10));
  EXPECT_EQ(Seqs(got), (std::vector<int64_t>{a1, b1, u}));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(none.empty()) << "a2 waits behind its locked head a1";
  MQ_ASSERT_OK(engine().Complete("jobs", a1, got[0].lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message next, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(next.seq, a2);
  EXPECT_EQ(next.group_id, std::optional<std::string>("A"));
}

MQLITE_TCK_GRADES(TckLifecycle, Spec5_StrictFifoHasAtMostOneInFlight, "G2", "G3");
TEST_P(TckLifecycle, Spec5_StrictFifoHasAtMostOneInFlight) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "strict", {.ordering = Ordering::kStrictFifo}));
  std::vector<int64_t> s;
  for (int i = 0; i < 3; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(
        int64_t seq, engine().Send("strict", {.body = std::to_string(i), .priority = 1 + i * 4}));
    s.push_back(seq);
  }
  for (int i = 0; i < 3; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "strict", 10));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].seq, s[i]);
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany(engine(), "strict", 10));
    EXPECT_TRUE(none.empty());
    MQ_ASSERT_OK(engine().Complete("strict", got[0].seq, got[0].lock_token));
  }
}

}  // namespace
}  // namespace mqlite::tck
