// TckOrdering — SPEC §5 claim eligibility and ordering: group heads,
// group_fifo, strict_fifo, priority, batches, and a large blocked group in
// front. Every test starts with an empty standard queue "std".
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorOrdering() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

MQLITE_TCK_GRADES(TckOrdering, Spec5_SameGroupIsHeadOfLineUngroupedAreFree, "G2", "G3");
TEST_P(TckOrdering, Spec5_SameGroupIsHeadOfLineUngroupedAreFree) {
  // SPEC §5
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g1, SendMsg(engine(), "std", "g1", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g2, SendMsg(engine(), "std", "g2", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t u1, SendMsg(engine(), "std", "u1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t u2, SendMsg(engine(), "std", "u2"));

  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "std", 10));
  EXPECT_EQ(Seqs(got), (std::vector<int64_t>{g1, u1, u2}));

  // g2 waits behind its locked head.
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany(engine(), "std", 10));
  EXPECT_TRUE(none.empty());

  MQ_ASSERT_OK(engine().Complete("std", g1, got[0].lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message next, ReceiveOne(engine(), "std"));
  EXPECT_EQ(next.seq, g2);
  EXPECT_EQ(next.body, "g2");
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_Spec4_GroupFifoWithoutGroupIdIsGroupRequiredAndWritesNothing,
                  "G1", "G3");
TEST_P(TckOrdering, Spec5_Spec4_GroupFifoWithoutGroupIdIsGroupRequiredAndWritesNothing) {
  // SPEC §5, §4
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK(CreateQueue(engine(), "gf", WithOrdering(Ordering::kGroupFifo)));
  MQ_EXPECT_CODE(SendMsg(engine(), "gf", "no group"), kGroupRequired);

  std::vector<OutgoingMessage> batch(3);
  batch[0].body = "a";
  batch[0].group_id = "A";
  batch[1].body = "missing";  // no group_id
  batch[2].body = "b";
  batch[2].group_id = "B";
  MQ_EXPECT_CODE(engine().SendBatch("gf", batch), kGroupRequired);

  EXPECT_EQ(Total(engine(), "gf"), 0);

  // With a group_id it is accepted.
  MQ_EXPECT_OK(SendMsg(engine(), "gf", "ok", "G"));
  EXPECT_EQ(Total(engine(), "gf"), 1);
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_GroupFifoDeliversEachGroupInSeqOrder, "G2", "G3");
TEST_P(TckOrdering, Spec5_GroupFifoDeliversEachGroupInSeqOrder) {
  // SPEC §5
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK(CreateQueue(engine(), "gf", WithOrdering(Ordering::kGroupFifo)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a1, SendMsg(engine(), "gf", "a1", "A"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b1, SendMsg(engine(), "gf", "b1", "B"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a2, SendMsg(engine(), "gf", "a2", "A"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b2, SendMsg(engine(), "gf", "b2", "B"));

  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first, ReceiveMany(engine(), "gf", 10));
  EXPECT_EQ(Seqs(first), (std::vector<int64_t>{a1, b1}));
  for (const Message& m : first) MQ_ASSERT_OK(engine().Complete("gf", m.seq, m.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> second, ReceiveMany(engine(), "gf", 10));
  EXPECT_EQ(Seqs(second), (std::vector<int64_t>{a2, b2}));
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_StrictFifoAllowsOneMessageInFlightForTheWholeQueue, "G2",
                  "G3");
TEST_P(TckOrdering, Spec5_StrictFifoAllowsOneMessageInFlightForTheWholeQueue) {
  // SPEC §5
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK(CreateQueue(engine(), "strict", WithOrdering(Ordering::kStrictFifo)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendMsg(engine(), "strict", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2,
                          SendMsg(engine(), "strict", "2", "some-group", /*priority=*/9));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3,
                          SendMsg(engine(), "strict", "3", std::nullopt, /*priority=*/5));

  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "strict", 10));
  ASSERT_EQ(Seqs(got), (std::vector<int64_t>{s1}));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany(engine(), "strict", 10));
  EXPECT_TRUE(none.empty());

  MQ_ASSERT_OK(engine().Complete("strict", s1, got[0].lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got2, ReceiveMany(engine(), "strict", 10));
  ASSERT_EQ(Seqs(got2), (std::vector<int64_t>{s2}));
  MQ_ASSERT_OK(engine().Complete("strict", s2, got2[0].lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got3, ReceiveMany(engine(), "strict", 10));
  EXPECT_EQ(Seqs(got3), (std::vector<int64_t>{s3}));
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_Spec6_HeadOfLineSurvivesLeaseExpiryWithoutMaintenance, "G2",
                  "G3", "G6");
TEST_P(TckOrdering, Spec5_Spec6_HeadOfLineSurvivesLeaseExpiryWithoutMaintenance) {
  // SPEC §5, §6: an expired lease still blocks the group; the head comes back
  // first.
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g1, SendMsg(engine(), "std", "g1", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g2, SendMsg(engine(), "std", "g2", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(Message first, ReceiveOne(engine(), "std"));
  ASSERT_EQ(first.seq, g1);
  EXPECT_EQ(first.delivery_count, 1);

  clock().Advance(30'001);  // past the 30 s lease; no RunMaintenance
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> again, ReceiveMany(engine(), "std", 10));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].seq, g1);
  EXPECT_NE(again[0].seq, g2);
  EXPECT_EQ(again[0].delivery_count, 2);
  EXPECT_FALSE(again[0].lock_token.empty());
  EXPECT_NE(again[0].lock_token, first.lock_token);

  // The old token is stale; the new one settles.
  MQ_EXPECT_CODE(engine().Complete("std", g1, first.lock_token), kLockLost);
  MQ_EXPECT_OK(engine().Complete("std", g1, again[0].lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message next, ReceiveOne(engine(), "std"));
  EXPECT_EQ(next.seq, g2);
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_HeadOfLineHoldsWhileExpiredLeaseNotYetReclaimed, "G2", "G3",
                  "G6");
TEST_P(TckOrdering, Spec5_HeadOfLineHoldsWhileExpiredLeaseNotYetReclaimed) {
  // SPEC §5: "locked (whether or not its lease has expired)" blocks the group;
  // the expired head is re-delivered before any later member, even at the
  // exact expiry instant (locked_until == now is expired, SPEC §6).
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g1, SendMsg(engine(), "std", "g1", "G"));
  MQ_ASSERT_OK(SendMsg(engine(), "std", "g2", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(Message first, ReceiveOne(engine(), "std"));
  ASSERT_EQ(first.seq, g1);
  clock().Advance(30'000);  // locked_until == now
  MQ_EXPECT_CODE(engine().Complete("std", g1, first.lock_token), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> again, ReceiveMany(engine(), "std", 10));
  EXPECT_EQ(Seqs(again), (std::vector<int64_t>{g1}));
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_AbandonWithDelayBlocksTheGroupUntilDue, "G2", "G3");
TEST_P(TckOrdering, Spec5_AbandonWithDelayBlocksTheGroupUntilDue) {
  // SPEC §5, §3
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g1, SendMsg(engine(), "std", "g1", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g2, SendMsg(engine(), "std", "g2", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "std"));
  ASSERT_EQ(m.seq, g1);
  MQ_ASSERT_OK(engine().Abandon("std", g1, m.lock_token, /*delay_ms=*/10'000));

  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> blocked, ReceiveMany(engine(), "std", 10));
  EXPECT_TRUE(blocked.empty());
  clock().Advance(9'999);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> still, ReceiveMany(engine(), "std", 10));
  EXPECT_TRUE(still.empty());

  clock().Advance(1);  // due now; no maintenance needed
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> due, ReceiveMany(engine(), "std", 10));
  ASSERT_EQ(Seqs(due), (std::vector<int64_t>{g1}));
  EXPECT_EQ(due[0].delivery_count, 2);
  MQ_ASSERT_OK(engine().Complete("std", g1, due[0].lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message next, ReceiveOne(engine(), "std"));
  EXPECT_EQ(next.seq, g2);
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_DeferredHeadBlocksGroupUntilReceivedDeferredAndCompleted, "G2",
                  "G3", "G4");
TEST_P(TckOrdering, Spec5_DeferredHeadBlocksGroupUntilReceivedDeferredAndCompleted) {
  // SPEC §5, §6
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g1, SendMsg(engine(), "std", "g1", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g2, SendMsg(engine(), "std", "g2", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t u, SendMsg(engine(), "std", "u"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "std"));
  ASSERT_EQ(m.seq, g1);
  MQ_ASSERT_OK(engine().Defer("std", g1, m.lock_token));

  // g2 is not delivered while its head is deferred; the ungrouped one is.
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "std", 10));
  ASSERT_EQ(Seqs(got), (std::vector<int64_t>{u}));
  MQ_ASSERT_OK(engine().Complete("std", u, got[0].lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany(engine(), "std", 10));
  EXPECT_TRUE(none.empty());

  const std::vector<int64_t> want = {g1};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> deferred, engine().ReceiveDeferred("std", want));
  ASSERT_EQ(Seqs(deferred), (std::vector<int64_t>{g1}));
  // Locked via ReceiveDeferred: still blocking.
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none2, ReceiveMany(engine(), "std", 10));
  EXPECT_TRUE(none2.empty());

  MQ_ASSERT_OK(engine().Complete("std", g1, deferred[0].lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message next, ReceiveOne(engine(), "std"));
  EXPECT_EQ(next.seq, g2);
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_RejectOfHeadUnblocksNextMember, "G2", "G3");
TEST_P(TckOrdering, Spec5_RejectOfHeadUnblocksNextMember) {
  // SPEC §5, §6
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g1, SendMsg(engine(), "std", "g1", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g2, SendMsg(engine(), "std", "g2", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "std"));
  ASSERT_EQ(m.seq, g1);
  MQ_ASSERT_OK(engine().Reject("std", g1, m.lock_token, "Poison", "cannot parse"));

  MQ_ASSERT_OK_AND_ASSIGN(Message dl, Find(engine(), "std", g1));
  EXPECT_EQ(dl.state, MessageState::kDeadLettered);
  MQ_ASSERT_OK_AND_ASSIGN(Message next, ReceiveOne(engine(), "std"));
  EXPECT_EQ(next.seq, g2);
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_Spec4_CancelOfScheduledHeadUnblocksGroup, "G2", "G3");
TEST_P(TckOrdering, Spec5_Spec4_CancelOfScheduledHeadUnblocksGroup) {
  // SPEC §5, §4
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g1, SendMsg(engine(), "std", "g1", "G", 0, /*delay_ms=*/60'000));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g2, SendMsg(engine(), "std", "g2", "G"));

  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> blocked, ReceiveMany(engine(), "std", 10));
  EXPECT_TRUE(blocked.empty());

  MQ_ASSERT_OK(engine().Cancel("std", g1));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "std", 10));
  EXPECT_EQ(Seqs(got), (std::vector<int64_t>{g2}));
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_PriorityOrdersHeadsAndUngroupedButNotWithinAGroup, "G2", "G3");
TEST_P(TckOrdering, Spec5_PriorityOrdersHeadsAndUngroupedButNotWithinAGroup) {
  // SPEC §5, §3
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t u_low, SendMsg(engine(), "std", "u-low", std::nullopt, 0));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g1, SendMsg(engine(), "std", "g1", "G", 1));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g2, SendMsg(engine(), "std", "g2", "G", 9));  // waits for g1
  MQ_ASSERT_OK_AND_ASSIGN(int64_t h1, SendMsg(engine(), "std", "h1", "H", 7));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t u_high, SendMsg(engine(), "std", "u-high", std::nullopt, 5));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t u_high2, SendMsg(engine(), "std", "u-high2", std::nullopt, 5));

  // One at a time: priority descending, then seq; g2 never jumps its head.
  std::vector<int64_t> order;
  std::vector<Message> held;
  for (int i = 0; i < 5; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "std"));
    order.push_back(m.seq);
    held.push_back(m);
  }
  EXPECT_EQ(order, (std::vector<int64_t>{h1, u_high, u_high2, g1, u_low}));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany(engine(), "std", 10));
  EXPECT_TRUE(none.empty());

  MQ_ASSERT_OK(engine().Complete("std", g1, held[3].lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message last, ReceiveOne(engine(), "std"));
  EXPECT_EQ(last.seq, g2);
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_PriorityOrderWithinOneBatch, "G2", "G3");
TEST_P(TckOrdering, Spec5_PriorityOrderWithinOneBatch) {
  // SPEC §5: one claim takes the eligible messages in priority-then-seq order.
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a, SendMsg(engine(), "std", "a", std::nullopt, 0));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b, SendMsg(engine(), "std", "b", "B", 3));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t c, SendMsg(engine(), "std", "c", std::nullopt, 9));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t d, SendMsg(engine(), "std", "d", "D", 3));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "std", 3));
  // The top 3 by (priority desc, seq asc): c(9), b(3), d(3); a is left.
  std::vector<int64_t> seqs = Seqs(got);
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(seqs, (std::vector<int64_t>{b, c, d}));
  MQ_ASSERT_OK_AND_ASSIGN(Message rest, ReceiveOne(engine(), "std"));
  EXPECT_EQ(rest.seq, a);
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_PeekLockBatchTakesAtMostOnePerGroup, "G2", "G3");
TEST_P(TckOrdering, Spec5_PeekLockBatchTakesAtMostOnePerGroup) {
  // SPEC §5
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a1, SendMsg(engine(), "std", "a1", "A"));
  MQ_ASSERT_OK(SendMsg(engine(), "std", "a2", "A"));
  MQ_ASSERT_OK(SendMsg(engine(), "std", "a3", "A"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b1, SendMsg(engine(), "std", "b1", "B"));
  MQ_ASSERT_OK(SendMsg(engine(), "std", "b2", "B"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t u1, SendMsg(engine(), "std", "u1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t u2, SendMsg(engine(), "std", "u2"));

  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "std", 10));
  EXPECT_EQ(Seqs(got), (std::vector<int64_t>{a1, b1, u1, u2}));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "std"));
  EXPECT_EQ(st.locked, 4);
  EXPECT_EQ(st.active, 3);
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_ReceiveAndDeleteBatchTakesAtMostOnePerGroup, "G2", "G3");
TEST_P(TckOrdering, Spec5_ReceiveAndDeleteBatchTakesAtMostOnePerGroup) {
  // SPEC §5
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  std::vector<int64_t> group;
  for (int i = 0; i < 5; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(int64_t s, SendMsg(engine(), "std", "m" + std::to_string(i), "G"));
    group.push_back(s);
  }
  for (int i = 0; i < 5; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got,
                            ReceiveIn(engine(), "std", 10, ReceiveMode::kReceiveAndDelete));
    ASSERT_EQ(got.size(), 1u) << "call " << i;
    EXPECT_EQ(got[0].seq, group[i]);
    EXPECT_EQ(got[0].body, "m" + std::to_string(i));
    EXPECT_TRUE(got[0].lock_token.empty());
    EXPECT_EQ(Total(engine(), "std"), 4 - i);
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none,
                          ReceiveIn(engine(), "std", 10, ReceiveMode::kReceiveAndDelete));
  EXPECT_TRUE(none.empty());
}

MQLITE_TCK_GRADES(TckOrdering, Spec5_Spec11_ClaimSkipsLargeBlockedGroupInFront, "G2", "G3");
TEST_P(TckOrdering, Spec5_Spec11_ClaimSkipsLargeBlockedGroupInFront) {
  // SPEC §5, §11: 2,000 members of G behind a locked head, then one
  // ungrouped message: the claim returns exactly the ungrouped one.
  MQ_ASSERT_OK(CreateQueue(engine(), "std"));
  std::vector<OutgoingMessage> batch(1000);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].body = "g" + std::to_string(i);
    batch[i].group_id = "G";
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> first, SendBatchSeqs(engine(), "std", batch));
  MQ_ASSERT_OK(engine().SendBatch("std", batch));
  MQ_ASSERT_OK_AND_ASSIGN(Message head, ReceiveOne(engine(), "std"));
  ASSERT_EQ(head.seq, first[0]);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t u, SendMsg(engine(), "std", "ungrouped"));

  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "std", 10));
  EXPECT_EQ(Seqs(got), (std::vector<int64_t>{u}));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "std"));
  EXPECT_EQ(st.locked, 2);
  EXPECT_EQ(st.active, 1999);
}

}  // namespace
}  // namespace mqlite::tck
