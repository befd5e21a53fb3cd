// TckIdempotency — what makes retries safe: duplicate detection on send
// (SPEC §4), settlement receipts (§7.2) and receive attempt ids (§7.3). Every
// expiry is checked against the fixture's ManualClock, never left to
// maintenance.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorIdempotency() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

constexpr int64_t kWindow = 60'000;                             // dedup window of "dq"
constexpr int64_t kDefaultReceiptRetention = 30LL * 60 * 1000;  // SPEC §7.2
constexpr int64_t kDefaultAttemptRetention = 5LL * 60 * 1000;   // SPEC §7.3
constexpr int64_t kLongLock = 3'600'000;  // 1 h: leases outlive the attempt record

// ---- duplicate detection (SPEC §4); queue "dq" with a 60 s window ----------------------

MQLITE_TCK_GRADES(TckIdempotency, Spec4_SameMessageIdSameBodyReturnsOriginalSeqAndWritesNothing,
                  "G1", "G4");
TEST_P(TckIdempotency, Spec4_SameMessageIdSameBodyReturnsOriginalSeqAndWritesNothing) {
  // SPEC §4
  MQ_ASSERT_OK(CreateQueue(engine(), "dq", WithDedup(kWindow)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, engine().Send("dq", Out("payload", "id-1")));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats before, StatsOf(engine(), "dq"));
  clock().Advance(kWindow - 1);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, engine().Send("dq", Out("payload", "id-1")));
  EXPECT_EQ(s2, s1);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats after, StatsOf(engine(), "dq"));
  EXPECT_EQ(after.total, 1);
  EXPECT_EQ(after.total, before.total);
  EXPECT_EQ(after.body_bytes, before.body_bytes);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec4_WithoutMessageIdTheKeyIsTheBodyHash, "G4");
TEST_P(TckIdempotency, Spec4_WithoutMessageIdTheKeyIsTheBodyHash) {
  // SPEC §4
  MQ_ASSERT_OK(CreateQueue(engine(), "dq", WithDedup(kWindow)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, engine().Send("dq", Out("same body")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, engine().Send("dq", Out("same body")));
  EXPECT_EQ(s2, s1);
  // An empty message_id counts as absent: the body hash is the key.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, engine().Send("dq", Out("same body", "")));
  EXPECT_EQ(s3, s1);
  // A different body is a different key: a new message, no conflict.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s4, engine().Send("dq", Out("other body")));
  EXPECT_GT(s4, s1);
  EXPECT_EQ(Total(engine(), "dq"), 2);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec4_MessageIdKeyIsIndependentOfBodyHashKey, "G4");
TEST_P(TckIdempotency, Spec4_MessageIdKeyIsIndependentOfBodyHashKey) {
  // SPEC §4: a message with an id is keyed by the id, not by its body.
  MQ_ASSERT_OK(CreateQueue(engine(), "dq", WithDedup(kWindow)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, engine().Send("dq", Out("body")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, engine().Send("dq", Out("body", "id-x")));
  EXPECT_NE(s2, s1);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, engine().Send("dq", Out("body", "id-y")));
  EXPECT_NE(s3, s2);
  EXPECT_EQ(Total(engine(), "dq"), 3);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec4_SameIdDifferentBodyIsDedupConflictAndWritesNothing, "G4");
TEST_P(TckIdempotency, Spec4_SameIdDifferentBodyIsDedupConflictAndWritesNothing) {
  // SPEC §4
  MQ_ASSERT_OK(CreateQueue(engine(), "dq", WithDedup(kWindow)));
  MQ_ASSERT_OK(engine().Send("dq", Out("original", "id-1")));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats before, StatsOf(engine(), "dq"));
  MQ_EXPECT_CODE(engine().Send("dq", Out("changed", "id-1")), kDedupConflict);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats after, StatsOf(engine(), "dq"));
  EXPECT_TRUE(StatsEq(after, before));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAllOf(engine(), "dq"));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].body, "original");
}

MQLITE_TCK_GRADES(TckIdempotency, Spec4_BatchConflictSlotGetsSeqZeroOthersCommit, "G1", "G4");
TEST_P(TckIdempotency, Spec4_BatchConflictSlotGetsSeqZeroOthersCommit) {
  // SPEC §4
  MQ_ASSERT_OK(CreateQueue(engine(), "dq", WithDedup(kWindow)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t orig, engine().Send("dq", Out("original", "k")));
  std::vector<OutgoingMessage> batch = {Out("first", "a"), Out("changed", "k"), Out("third", "c"),
                                        Out("original", "k")};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<SendOutcome> out, engine().SendBatch("dq", batch));
  ASSERT_EQ(out.size(), 4u);
  const std::vector<int64_t> seqs = SeqsOf(out);
  EXPECT_GT(seqs[0], orig);
  EXPECT_EQ(seqs[1], 0);
  EXPECT_GT(seqs[2], seqs[0]);
  EXPECT_EQ(seqs[3], orig);  // same key, same body: the original
  // Per-slot outcomes (issue 9): the conflicting slot says why and names the
  // key and the original; the replayed slot says it wrote nothing.
  MQ_EXPECT_OK(out[0].status);
  EXPECT_FALSE(out[0].duplicate);
  MQ_EXPECT_CODE(out[1].status, kDedupConflict);
  EXPECT_TRUE(MessageHas(out[1].status, "message_id 'k'"));
  EXPECT_TRUE(MessageHas(out[1].status, "seq " + std::to_string(orig)));
  EXPECT_FALSE(out[1].duplicate);
  MQ_EXPECT_OK(out[2].status);
  MQ_EXPECT_OK(out[3].status);
  EXPECT_TRUE(out[3].duplicate);
  EXPECT_EQ(Total(engine(), "dq"), 3);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAllOf(engine(), "dq"));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].body, "original");
  EXPECT_EQ(all[1].body, "first");
  EXPECT_EQ(all[2].body, "third");
}

MQLITE_TCK_GRADES(TckIdempotency, Spec4_DuplicatesInsideOneBatch, "G4");
TEST_P(TckIdempotency, Spec4_DuplicatesInsideOneBatch) {
  // SPEC §4: a later slot with the same key and body gets the earlier slot's
  // seq; with another body it gets 0.
  MQ_ASSERT_OK(CreateQueue(engine(), "dq", WithDedup(kWindow)));
  std::vector<OutgoingMessage> batch = {Out("one", "d"), Out("x"), Out("one", "d"), Out("two", "d"),
                                        Out("x")};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<SendOutcome> out, engine().SendBatch("dq", batch));
  ASSERT_EQ(out.size(), 5u);
  const std::vector<int64_t> seqs = SeqsOf(out);
  EXPECT_FALSE(out[0].duplicate);
  EXPECT_TRUE(out[2].duplicate);  // an earlier slot of this batch
  MQ_EXPECT_CODE(out[3].status, kDedupConflict);
  EXPECT_TRUE(MessageHas(out[3].status, "earlier in this batch, message 0"));
  EXPECT_TRUE(out[4].duplicate);
  EXPECT_GT(seqs[0], 0);
  EXPECT_GT(seqs[1], 0);
  EXPECT_NE(seqs[0], seqs[1]);
  EXPECT_EQ(seqs[2], seqs[0]);
  EXPECT_EQ(seqs[3], 0);
  EXPECT_EQ(seqs[4], seqs[1]);
  EXPECT_EQ(Total(engine(), "dq"), 2);
  // The in-batch record is durable: a later single resend replays/conflicts.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t again, engine().Send("dq", Out("one", "d")));
  EXPECT_EQ(again, seqs[0]);
  MQ_EXPECT_CODE(engine().Send("dq", Out("two", "d")), kDedupConflict);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec4_RecordOutlivesTheMessage, "G4");
TEST_P(TckIdempotency, Spec4_RecordOutlivesTheMessage) {
  // SPEC §4
  MQ_ASSERT_OK(CreateQueue(engine(), "dq", WithDedup(kWindow)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, engine().Send("dq", Out("work", "job-7")));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "dq"));
  ASSERT_EQ(m.seq, s1);
  MQ_ASSERT_OK(engine().Complete("dq", m.seq, m.lock_token));
  EXPECT_EQ(Total(engine(), "dq"), 0);

  clock().Advance(kWindow / 2);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, engine().Send("dq", Out("work", "job-7")));
  EXPECT_EQ(s2, s1);
  EXPECT_EQ(Total(engine(), "dq"), 0);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany(engine(), "dq", 10));
  EXPECT_TRUE(none.empty());
  // Still a conflict with another body.
  MQ_EXPECT_CODE(engine().Send("dq", Out("other", "job-7")), kDedupConflict);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec4_AfterTheWindowASendIsNewWithoutMaintenance, "G4");
TEST_P(TckIdempotency, Spec4_AfterTheWindowASendIsNewWithoutMaintenance) {
  // SPEC §4, §7: expiry is checked against now, no maintenance run.
  MQ_ASSERT_OK(CreateQueue(engine(), "dq", WithDedup(kWindow)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, engine().Send("dq", Out("body", "id-1")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t h1, engine().Send("dq", Out("hashed")));
  clock().Advance(kWindow + 1);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, engine().Send("dq", Out("body", "id-1")));
  EXPECT_GT(s2, s1);
  EXPECT_GT(s2, h1);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t h2, engine().Send("dq", Out("hashed")));
  EXPECT_GT(h2, s2);
  // Another body after the window is not a conflict either.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, engine().Send("dq", Out("new body", "id-2")));
  EXPECT_GT(s3, h2);
  EXPECT_EQ(Total(engine(), "dq"), 5);
  // The new send opened a new window.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s4, engine().Send("dq", Out("body", "id-1")));
  EXPECT_EQ(s4, s2);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec4_ExpiredWindowAfterConflictAcceptsOtherBody, "G4");
TEST_P(TckIdempotency, Spec4_ExpiredWindowAfterConflictAcceptsOtherBody) {
  // SPEC §4: a conflict only exists within the window.
  MQ_ASSERT_OK(CreateQueue(engine(), "dq", WithDedup(kWindow)));
  MQ_ASSERT_OK(engine().Send("dq", Out("v1", "id")));
  MQ_EXPECT_CODE(engine().Send("dq", Out("v2", "id")), kDedupConflict);
  clock().Advance(kWindow + 1);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s, engine().Send("dq", Out("v2", "id")));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "dq", s));
  EXPECT_EQ(m.body, "v2");
}

MQLITE_TCK_GRADES(TckIdempotency, Spec4_DedupOffEverySendIsNew, "G4");
TEST_P(TckIdempotency, Spec4_DedupOffEverySendIsNew) {
  // SPEC §4, §2: dedup_window 0 = off.
  MQ_ASSERT_OK(CreateQueue(engine(), "dq", WithDedup(kWindow)));
  MQ_ASSERT_OK(CreateQueue(engine(), "plain"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a, engine().Send("plain", Out("same", "id")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b, engine().Send("plain", Out("same", "id")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t c, engine().Send("plain", Out("different", "id")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t d, engine().Send("plain", Out("same")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t e, engine().Send("plain", Out("same")));
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_LT(c, d);
  EXPECT_LT(d, e);
  std::vector<OutgoingMessage> batch = {Out("same", "id"), Out("same", "id")};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> seqs, SendBatchSeqs(engine(), "plain", batch));
  ASSERT_EQ(seqs.size(), 2u);
  EXPECT_GT(seqs[0], e);
  EXPECT_GT(seqs[1], seqs[0]);
  EXPECT_EQ(Total(engine(), "plain"), 7);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec4_Spec2_QueuesAreIndependentDedupNamespaces, "G4");
TEST_P(TckIdempotency, Spec4_Spec2_QueuesAreIndependentDedupNamespaces) {
  // SPEC §4, §2
  MQ_ASSERT_OK(CreateQueue(engine(), "dq", WithDedup(kWindow)));
  MQ_ASSERT_OK(CreateQueue(engine(), "dq2", WithDedup(kWindow)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a, engine().Send("dq", Out("body", "shared-id")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b, engine().Send("dq2", Out("body", "shared-id")));
  EXPECT_NE(a, b);
  // Another body under the same id in the other queue is not a conflict.
  MQ_ASSERT_OK(CreateQueue(engine(), "dq3", WithDedup(kWindow)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t c, engine().Send("dq3", Out("other", "shared-id")));
  EXPECT_NE(c, a);
  // Body-hash keys are per queue too.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t h1, engine().Send("dq", Out("anon")));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t h2, engine().Send("dq2", Out("anon")));
  EXPECT_NE(h1, h2);
  EXPECT_EQ(Total(engine(), "dq"), 2);
  EXPECT_EQ(Total(engine(), "dq2"), 2);
  EXPECT_EQ(Total(engine(), "dq3"), 1);
}

// ---- settlement receipts (SPEC §7.2); queue "q" with a 30 s lease ----------------------

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_CompleteReplayIsOkWithNoNewEffect, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_CompleteReplayIsOkWithNoNewEffect) {
  // SPEC §7.2
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t other, SendBody(engine(), "q", "other"));
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "q"));
  EXPECT_EQ(st.total, 1);
  EXPECT_EQ(st.active, 1);
  MQ_EXPECT_OK(Find(engine(), "q", other));
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_AbandonReplayIsOkWithNoNewEffect, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_AbandonReplayIsOkWithNoNewEffect) {
  // SPEC §7.2
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK(engine().Abandon("q", m.seq, m.lock_token));
  MQ_EXPECT_OK(engine().Abandon("q", m.seq, m.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find(engine(), "q", m.seq));
  EXPECT_EQ(after.state, MessageState::kActive);
  EXPECT_EQ(after.delivery_count, 1);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "q"));
  EXPECT_EQ(st.active, 1);
  EXPECT_EQ(st.total, 1);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_AbandonWithDelayReplayKeepsTheSchedule, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_AbandonWithDelayReplayKeepsTheSchedule) {
  // SPEC §7.2: the replay does not reschedule.
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK(engine().Abandon("q", m.seq, m.lock_token, 5'000));
  MQ_ASSERT_OK_AND_ASSIGN(Message first, Find(engine(), "q", m.seq));
  EXPECT_EQ(first.state, MessageState::kScheduled);
  clock().Advance(2'000);
  MQ_EXPECT_OK(engine().Abandon("q", m.seq, m.lock_token, 5'000));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find(engine(), "q", m.seq));
  EXPECT_EQ(after.state, MessageState::kScheduled);
  EXPECT_EQ(after.visible_at, first.visible_at);
  clock().Advance(3'000);  // due at the original time
  MQ_ASSERT_OK_AND_ASSIGN(Message again, ReceiveOne(engine(), "q"));
  EXPECT_EQ(again.seq, m.seq);
  EXPECT_EQ(again.delivery_count, 2);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_RejectReplayIsOkWithNoNewEffect, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_RejectReplayIsOkWithNoNewEffect) {
  // SPEC §7.2
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK(engine().Reject("q", m.seq, m.lock_token, "Poison", "bad json"));
  MQ_EXPECT_OK(engine().Reject("q", m.seq, m.lock_token, "Poison", "bad json"));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find(engine(), "q", m.seq));
  EXPECT_EQ(after.state, MessageState::kDeadLettered);
  EXPECT_EQ(after.dead_letter_reason, "Poison");
  EXPECT_EQ(after.dead_letter_description, "bad json");
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "q"));
  EXPECT_EQ(st.dead_lettered, 1);
  EXPECT_EQ(st.total, 1);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_DeferReplayIsOkWithNoNewEffect, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_DeferReplayIsOkWithNoNewEffect) {
  // SPEC §7.2
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK(engine().Defer("q", m.seq, m.lock_token));
  MQ_EXPECT_OK(engine().Defer("q", m.seq, m.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find(engine(), "q", m.seq));
  EXPECT_EQ(after.state, MessageState::kDeferred);
  EXPECT_EQ(after.delivery_count, 1);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "q"));
  EXPECT_EQ(st.deferred, 1);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_OtherOperationAfterSettleIsLockLost, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_OtherOperationAfterSettleIsLockLost) {
  // SPEC §7.2: the operation is part of the receipt key.
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_CODE(engine().Abandon("q", m.seq, m.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Reject("q", m.seq, m.lock_token, "r"), kLockLost);
  MQ_EXPECT_CODE(engine().Defer("q", m.seq, m.lock_token), kLockLost);

  MQ_ASSERT_OK_AND_ASSIGN(Message d, SendAndReceive(engine(), "d", "q"));
  MQ_ASSERT_OK(engine().Defer("q", d.seq, d.lock_token));
  MQ_EXPECT_CODE(engine().Complete("q", d.seq, d.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Abandon("q", d.seq, d.lock_token), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find(engine(), "q", d.seq));
  EXPECT_EQ(after.state, MessageState::kDeferred);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_OtherTokenIsLockLost, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_OtherTokenIsLockLost) {
  // SPEC §7.2: the token is part of the receipt key.
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_CODE(engine().Complete("q", m.seq, ForeignToken()), kLockLost);
  // And a receipt does not carry over to another seq.
  MQ_ASSERT_OK_AND_ASSIGN(Message n, SendAndReceive(engine(), "n", "q"));
  MQ_EXPECT_CODE(engine().Complete("q", n.seq, m.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Complete("q", m.seq + 1000, m.lock_token), kLockLost);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_AbandonWithAnotherDelayIsLockLost, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_AbandonWithAnotherDelayIsLockLost) {
  // SPEC §7.2: Abandon's delay is part of the key.
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK(engine().Abandon("q", m.seq, m.lock_token, 1'000));
  MQ_EXPECT_CODE(engine().Abandon("q", m.seq, m.lock_token, 2'000), kLockLost);
  MQ_EXPECT_CODE(engine().Abandon("q", m.seq, m.lock_token, 0), kLockLost);
  MQ_EXPECT_OK(engine().Abandon("q", m.seq, m.lock_token, 1'000));

  MQ_ASSERT_OK_AND_ASSIGN(Message n, SendAndReceive(engine(), "n", "q"));
  MQ_ASSERT_OK(engine().Abandon("q", n.seq, n.lock_token));  // delay 0
  MQ_EXPECT_CODE(engine().Abandon("q", n.seq, n.lock_token, 1), kLockLost);
  MQ_EXPECT_OK(engine().Abandon("q", n.seq, n.lock_token, 0));
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_RejectWithAnotherReasonOrDescriptionIsLockLost, "G2",
                  "G4");
TEST_P(TckIdempotency, Spec7_2_RejectWithAnotherReasonOrDescriptionIsLockLost) {
  // SPEC §7.2: Reject's reason and description are part of the key.
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK(engine().Reject("q", m.seq, m.lock_token, "Poison", "bad json"));
  MQ_EXPECT_CODE(engine().Reject("q", m.seq, m.lock_token, "Other", "bad json"), kLockLost);
  MQ_EXPECT_CODE(engine().Reject("q", m.seq, m.lock_token, "Poison", "other text"), kLockLost);
  MQ_EXPECT_CODE(engine().Reject("q", m.seq, m.lock_token, "Poison"), kLockLost);
  MQ_EXPECT_OK(engine().Reject("q", m.seq, m.lock_token, "Poison", "bad json"));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find(engine(), "q", m.seq));
  EXPECT_EQ(after.dead_letter_reason, "Poison");
  EXPECT_EQ(after.dead_letter_description, "bad json");
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_ReplayWorksAfterTheLeaseWouldHaveExpired, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_ReplayWorksAfterTheLeaseWouldHaveExpired) {
  // SPEC §7.2
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK_AND_ASSIGN(Message a, SendAndReceive(engine(), "a", "q"));
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_ASSERT_OK(engine().Abandon("q", a.seq, a.lock_token, 500'000));
  clock().Advance(kLock * 3);
  MQ_EXPECT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_OK(engine().Abandon("q", a.seq, a.lock_token, 500'000));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find(engine(), "q", a.seq));
  EXPECT_EQ(after.state, MessageState::kScheduled);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_ReceiptExpiresAfterDefaultRetentionWithoutMaintenance,
                  "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_ReceiptExpiresAfterDefaultRetentionWithoutMaintenance) {
  // SPEC §7.2: retained 30 minutes; expiry is checked against now.
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  clock().Advance(kDefaultReceiptRetention - 1);
  MQ_EXPECT_OK(engine().Complete("q", m.seq, m.lock_token));
  clock().Advance(2);
  MQ_EXPECT_CODE(engine().Complete("q", m.seq, m.lock_token), kLockLost);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_ReceiptRetentionIsConfigurable, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_ReceiptRetentionIsConfigurable) {
  // SPEC §7.2: "Retained 30 minutes (configurable)" via
  // EngineOptions::receipt_retention_ms.
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  engine_options().receipt_retention_ms = 60'000;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK_AND_ASSIGN(Message r, SendAndReceive(engine(), "r", "q"));
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_ASSERT_OK(engine().Reject("q", r.seq, r.lock_token, "Why"));
  clock().Advance(59'999);
  MQ_EXPECT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_OK(engine().Reject("q", r.seq, r.lock_token, "Why"));
  clock().Advance(2);
  MQ_EXPECT_CODE(engine().Complete("q", m.seq, m.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Reject("q", r.seq, r.lock_token, "Why"), kLockLost);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_Spec6_RenewNeverReplays, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_Spec6_RenewNeverReplays) {
  // SPEC §7.2, §6
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t until, engine().Renew("q", m.seq, m.lock_token));
  EXPECT_GE(until, m.locked_until);
  MQ_ASSERT_OK(engine().Complete("q", m.seq, m.lock_token));
  MQ_EXPECT_CODE(engine().Renew("q", m.seq, m.lock_token), kLockLost);

  // A Renew's own success leaves nothing to replay once the lease is gone.
  MQ_ASSERT_OK_AND_ASSIGN(Message n, SendAndReceive(engine(), "n", "q"));
  MQ_ASSERT_OK(engine().Renew("q", n.seq, n.lock_token));
  clock().Advance(kLock);  // locked_until == now: expired
  MQ_EXPECT_CODE(engine().Renew("q", n.seq, n.lock_token), kLockLost);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_AbandonReplayDoesNotDisturbTheNextConsumersLock, "G2",
                  "G4");
TEST_P(TckIdempotency, Spec7_2_AbandonReplayDoesNotDisturbTheNextConsumersLock) {
  // SPEC §7.2: a receipt replays the original effect, never a new one.
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message a, SendAndReceive(engine(), "m", "q"));
  MQ_ASSERT_OK(engine().Abandon("q", a.seq, a.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message b, ReceiveOne(engine(), "q"));  // consumer B
  ASSERT_EQ(b.seq, a.seq);
  ASSERT_NE(b.lock_token, a.lock_token);
  EXPECT_EQ(b.delivery_count, 2);

  MQ_EXPECT_OK(engine().Abandon("q", a.seq, a.lock_token));  // A's retry: replay
  MQ_ASSERT_OK_AND_ASSIGN(Message now, Find(engine(), "q", a.seq));
  EXPECT_EQ(now.state, MessageState::kLocked);
  EXPECT_EQ(now.locked_until, b.locked_until);  // B's lease, untouched (Peek shows no token;
                                                 // B's Complete below proves it is B's)
  EXPECT_EQ(now.delivery_count, 2);
  // A's other settles under the old token stay refused.
  MQ_EXPECT_CODE(engine().Complete("q", a.seq, a.lock_token), kLockLost);
  MQ_EXPECT_OK(engine().Complete("q", b.seq, b.lock_token));
  EXPECT_EQ(Total(engine(), "q"), 0);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_Spec6_CompleteBatchItemsReplay, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_Spec6_CompleteBatchItemsReplay) {
  // SPEC §7.2, §6
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m1, SendAndReceive(engine(), "1", "q"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m2, SendAndReceive(engine(), "2", "q"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m3, SendAndReceive(engine(), "3", "q"));
  std::vector<SettleItem> items = {{m1.seq, m1.lock_token}, {m2.seq, m2.lock_token}};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> first, engine().CompleteBatch("q", items));
  ASSERT_EQ(first.size(), 2u);
  MQ_EXPECT_OK(first[0]);
  MQ_EXPECT_OK(first[1]);
  EXPECT_EQ(Total(engine(), "q"), 1);

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
  EXPECT_EQ(Total(engine(), "q"), 0);

  // A single Complete and a batch item are the same request.
  MQ_EXPECT_OK(engine().Complete("q", m3.seq, m3.lock_token));
  // Batch items expire like single receipts.
  clock().Advance(kDefaultReceiptRetention + 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> third, engine().CompleteBatch("q", items));
  ASSERT_EQ(third.size(), 2u);
  MQ_EXPECT_CODE(third[0], kLockLost);
  MQ_EXPECT_CODE(third[1], kLockLost);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_2_FailedSettleWritesNoReceipt, "G2", "G4");
TEST_P(TckIdempotency, Spec7_2_FailedSettleWritesNoReceipt) {
  // SPEC §7.2: only a successful settle writes a receipt, so a LockLost
  // request never turns into a later "replay".
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLock)));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "m", "q"));
  clock().Advance(kLock + 1);  // lease expired
  MQ_ASSERT_OK_AND_ASSIGN(Message b, ReceiveOne(engine(), "q"));
  ASSERT_EQ(b.seq, m.seq);
  MQ_EXPECT_CODE(engine().Complete("q", m.seq, m.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Complete("q", m.seq, m.lock_token), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "q", m.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  EXPECT_EQ(still.locked_until, b.locked_until);
  MQ_EXPECT_OK(engine().Renew("q", b.seq, b.lock_token)) << "B still holds the lease";
}

// ---- receive attempts (SPEC §7.3); queues "q" and "other" with 1 h leases --------------

MQLITE_TCK_GRADES(TckIdempotency, Spec7_3_RetryReturnsSameSeqsAndTokensAndClaimsNothingNew, "G2",
                  "G4");
TEST_P(TckIdempotency, Spec7_3_RetryReturnsSameSeqsAndTokensAndClaimsNothingNew) {
  // SPEC §7.3
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLongLock)));
  MQ_ASSERT_OK(CreateQueue(engine(), "other", WithLock(kLongLock)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody(engine(), "q", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody(engine(), "q", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, SendBody(engine(), "q", "3"));

  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first, ReceiveAttempt(engine(), "q", 2, "att-1"));
  ASSERT_EQ(Seqs(first), (std::vector<int64_t>{s1, s2}));

  clock().Advance(1'000);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> retry, ReceiveAttempt(engine(), "q", 2, "att-1"));
  ASSERT_EQ(Seqs(retry), (std::vector<int64_t>{s1, s2}));
  for (size_t i = 0; i < retry.size(); ++i) {
    EXPECT_EQ(retry[i].lock_token, first[i].lock_token);
    EXPECT_EQ(retry[i].delivery_count, 1);
    EXPECT_EQ(retry[i].body, first[i].body);
    EXPECT_EQ(retry[i].locked_until, first[i].locked_until);
  }

  // Nothing new claimed: s3 is still active, delivery counts unchanged.
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "q"));
  EXPECT_EQ(st.locked, 2);
  EXPECT_EQ(st.active, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message p1, Find(engine(), "q", s1));
  EXPECT_EQ(p1.delivery_count, 1);
  EXPECT_EQ(p1.locked_until, first[0].locked_until);  // the same lease (Peek shows no token)
  MQ_ASSERT_OK_AND_ASSIGN(Message p3, Find(engine(), "q", s3));
  EXPECT_EQ(p3.state, MessageState::kActive);
  EXPECT_EQ(p3.delivery_count, 0);

  // The replayed tokens are the live ones.
  MQ_EXPECT_OK(engine().Complete("q", s1, retry[0].lock_token));
  MQ_EXPECT_OK(engine().Complete("q", s2, retry[1].lock_token));
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_3_RetryAfterSettleStillReplaysWithoutClaiming, "G2", "G4");
TEST_P(TckIdempotency, Spec7_3_RetryAfterSettleStillReplaysWithoutClaiming) {
  // SPEC §7.3: within retention the attempt id always maps to its batch.
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLongLock)));
  MQ_ASSERT_OK(CreateQueue(engine(), "other", WithLock(kLongLock)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody(engine(), "q", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody(engine(), "q", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first, ReceiveAttempt(engine(), "q", 1, "att"));
  ASSERT_EQ(Seqs(first), (std::vector<int64_t>{s1}));
  MQ_ASSERT_OK(engine().Complete("q", s1, first[0].lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> retry, ReceiveAttempt(engine(), "q", 1, "att"));
  EXPECT_EQ(Seqs(retry), (std::vector<int64_t>{s1}));
  MQ_ASSERT_OK_AND_ASSIGN(Message p2, Find(engine(), "q", s2));
  EXPECT_EQ(p2.state, MessageState::kActive);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_3_SameIdWithAnotherQueueOrModeIsInvalidArgument, "G2",
                  "G4");
TEST_P(TckIdempotency, Spec7_3_SameIdWithAnotherQueueOrModeIsInvalidArgument) {
  // SPEC §7.3
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLongLock)));
  MQ_ASSERT_OK(CreateQueue(engine(), "other", WithLock(kLongLock)));
  MQ_ASSERT_OK(SendBody(engine(), "q", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody(engine(), "q", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t o1, SendBody(engine(), "other", "o"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first, ReceiveAttempt(engine(), "q", 1, "att-x"));
  ASSERT_EQ(first.size(), 1u);

  MQ_EXPECT_CODE(ReceiveAttempt(engine(), "other", 1, "att-x"), kInvalidArgument);
  MQ_EXPECT_CODE(ReceiveAttempt(engine(), "q", 1, "att-x", ReceiveMode::kReceiveAndDelete),
                 kInvalidArgument);
  // Nothing was claimed or deleted by the refused calls.
  MQ_ASSERT_OK_AND_ASSIGN(Message po, Find(engine(), "other", o1));
  EXPECT_EQ(po.state, MessageState::kActive);
  EXPECT_EQ(po.delivery_count, 0);
  MQ_ASSERT_OK_AND_ASSIGN(Message p2, Find(engine(), "q", s2));
  EXPECT_EQ(p2.state, MessageState::kActive);
  EXPECT_EQ(Total(engine(), "q"), 2);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_3_ReceiveAndDeleteIdUsedWithPeekLockIsInvalidArgument, "G2",
                  "G4");
TEST_P(TckIdempotency, Spec7_3_ReceiveAndDeleteIdUsedWithPeekLockIsInvalidArgument) {
  // SPEC §7.3: the mode check works in both directions.
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLongLock)));
  MQ_ASSERT_OK(CreateQueue(engine(), "other", WithLock(kLongLock)));
  MQ_ASSERT_OK(SendBody(engine(), "q", "1"));
  MQ_ASSERT_OK(SendBody(engine(), "q", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> rd,
                          ReceiveAttempt(engine(), "q", 1, "rd", ReceiveMode::kReceiveAndDelete));
  ASSERT_EQ(rd.size(), 1u);
  MQ_EXPECT_CODE(ReceiveAttempt(engine(), "q", 1, "rd", ReceiveMode::kPeekLock), kInvalidArgument);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "q"));
  EXPECT_EQ(st.active, 1);
  EXPECT_EQ(st.locked, 0);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_3_AfterDefaultRetentionARetryClaimsAfresh, "G2", "G4");
TEST_P(TckIdempotency, Spec7_3_AfterDefaultRetentionARetryClaimsAfresh) {
  // SPEC §7.3: remembered 5 minutes; checked against now (no maintenance).
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLongLock)));
  MQ_ASSERT_OK(CreateQueue(engine(), "other", WithLock(kLongLock)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody(engine(), "q", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody(engine(), "q", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first, ReceiveAttempt(engine(), "q", 1, "att"));
  ASSERT_EQ(Seqs(first), (std::vector<int64_t>{s1}));

  clock().Advance(kDefaultAttemptRetention - 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> still, ReceiveAttempt(engine(), "q", 1, "att"));
  EXPECT_EQ(Seqs(still), (std::vector<int64_t>{s1}));

  clock().Advance(2);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> fresh, ReceiveAttempt(engine(), "q", 1, "att"));
  ASSERT_EQ(Seqs(fresh), (std::vector<int64_t>{s2}));
  EXPECT_NE(fresh[0].lock_token, first[0].lock_token);
  EXPECT_EQ(fresh[0].delivery_count, 1);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "q"));
  EXPECT_EQ(st.locked, 2);
  EXPECT_EQ(st.active, 0);
  // And the fresh claim is itself recorded.
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> replay, ReceiveAttempt(engine(), "q", 1, "att"));
  ASSERT_EQ(Seqs(replay), (std::vector<int64_t>{s2}));
  EXPECT_EQ(replay[0].lock_token, fresh[0].lock_token);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_3_AttemptRetentionIsConfigurable, "G2", "G4");
TEST_P(TckIdempotency, Spec7_3_AttemptRetentionIsConfigurable) {
  // SPEC §7.3 with EngineOptions::attempt_retention_ms.
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLongLock)));
  MQ_ASSERT_OK(CreateQueue(engine(), "other", WithLock(kLongLock)));
  engine_options().attempt_retention_ms = 10'000;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody(engine(), "q", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody(engine(), "q", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first, ReceiveAttempt(engine(), "q", 1, "att"));
  ASSERT_EQ(Seqs(first), (std::vector<int64_t>{s1}));
  clock().Advance(9'999);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> same, ReceiveAttempt(engine(), "q", 1, "att"));
  EXPECT_EQ(Seqs(same), (std::vector<int64_t>{s1}));
  clock().Advance(2);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> fresh, ReceiveAttempt(engine(), "q", 1, "att"));
  EXPECT_EQ(Seqs(fresh), (std::vector<int64_t>{s2}));
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_3_AnAttemptThatClaimedNothingIsNotRecorded, "G2", "G4");
TEST_P(TckIdempotency, Spec7_3_AnAttemptThatClaimedNothingIsNotRecorded) {
  // SPEC §7.3
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLongLock)));
  MQ_ASSERT_OK(CreateQueue(engine(), "other", WithLock(kLongLock)));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> empty, ReceiveAttempt(engine(), "q", 4, "att-e"));
  EXPECT_TRUE(empty.empty());
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody(engine(), "q", "late"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveAttempt(engine(), "q", 4, "att-e"));
  ASSERT_EQ(Seqs(got), (std::vector<int64_t>{s1}));
  // An empty attempt also leaves the id free for another queue or mode.
  MQ_ASSERT_OK_AND_ASSIGN(
      std::vector<Message> none,
      ReceiveAttempt(engine(), "other", 1, "att-f", ReceiveMode::kReceiveAndDelete));
  EXPECT_TRUE(none.empty());
  MQ_ASSERT_OK(SendBody(engine(), "q", "x"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got2, ReceiveAttempt(engine(), "q", 1, "att-f"));
  EXPECT_EQ(got2.size(), 1u);
}

MQLITE_TCK_GRADES(TckIdempotency, Spec7_3_ReceiveAndDeleteReplayReturnsTheSameDeletedMessages, "G2",
                  "G4");
TEST_P(TckIdempotency, Spec7_3_ReceiveAndDeleteReplayReturnsTheSameDeletedMessages) {
  // SPEC §7.3, §3
  MQ_ASSERT_OK(CreateQueue(engine(), "q", WithLock(kLongLock)));
  MQ_ASSERT_OK(CreateQueue(engine(), "other", WithLock(kLongLock)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody(engine(), "q", "one"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody(engine(), "q", "two"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> first,
                          ReceiveAttempt(engine(), "q", 5, "rd-1", ReceiveMode::kReceiveAndDelete));
  ASSERT_EQ(Seqs(first), (std::vector<int64_t>{s1, s2}));
  EXPECT_EQ(Total(engine(), "q"), 0);

  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, SendBody(engine(), "q", "three"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> retry,
                          ReceiveAttempt(engine(), "q", 5, "rd-1", ReceiveMode::kReceiveAndDelete));
  ASSERT_EQ(Seqs(retry), (std::vector<int64_t>{s1, s2}));
  EXPECT_EQ(retry[0].body, "one");
  EXPECT_EQ(retry[1].body, "two");
  EXPECT_EQ(retry[0].delivery_count, first[0].delivery_count);
  EXPECT_TRUE(retry[0].lock_token.empty());
  // s3 was not consumed by the replay.
  MQ_ASSERT_OK_AND_ASSIGN(Message p3, Find(engine(), "q", s3));
  EXPECT_EQ(p3.state, MessageState::kActive);
  EXPECT_EQ(Total(engine(), "q"), 1);
}

}  // namespace
}  // namespace mqlite::tck
