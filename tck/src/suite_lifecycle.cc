// TckLifecycle — the message lifecycle through the public Engine API, driven
// by the fixture's ManualClock (no sleeps): every row of the SPEC §3
// transition table, settle fencing and batches (§6), stats and peek (§6),
// retention (§6), field round-trips and seqs (§3), queues (§2), recovery on
// open (§7.1) and open/close (§9). Test names cite the § they pin.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
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

int AnchorLifecycle() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

// Sends `body` to `queue`, receives it (Peek-Lock) and returns the message.
Result<Message> SendAndReceive(Engine& e, std::string body, std::string_view queue = "jobs") {
  Result<int64_t> seq = SendBody(e, queue, std::move(body));
  if (!seq.has_value()) return seq.status();
  Result<Message> m = ReceiveOne(e, queue);
  if (m.has_value() && m->seq != *seq) {
    return Status::Internal("received seq " + std::to_string(m->seq) + ", sent " +
                            std::to_string(*seq));
  }
  return m;
}

// Dead-letters one fresh message with Reject; returns its seq.
Result<int64_t> MakeDeadLetter(Engine& e, std::string body, std::string_view queue = "jobs") {
  Result<Message> m = SendAndReceive(e, std::move(body), queue);
  if (!m.has_value()) return m.status();
  Status s = e.Reject(queue, m->seq, m->lock_token, "Test", "made by the test");
  if (!s.ok()) return s;
  return m->seq;
}

// ---- send → active / scheduled (SPEC §3 rows 1–2, §4) ------------------------

TEST_P(TckLifecycle, Spec3_SendDueNowIsActive) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  clock().Advance(123);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "jobs", "hello"));
  EXPECT_GT(seq, 0);
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "jobs", seq));
  EXPECT_EQ(m.state, MessageState::kActive);
  EXPECT_EQ(m.queue, "jobs");
  EXPECT_EQ(m.body, "hello");
  EXPECT_EQ(m.enqueued_at, kT0 + 123);
  EXPECT_EQ(m.visible_at, kT0 + 123);
  EXPECT_EQ(m.expires_at, 0);
  EXPECT_EQ(m.delivery_count, 0);
  EXPECT_EQ(m.locked_until, 0);
  EXPECT_TRUE(m.lock_token.empty());
  EXPECT_FALSE(m.dead_letter_reason.has_value());
  EXPECT_FALSE(m.dead_letter_description.has_value());
  EXPECT_EQ(m.dead_lettered_at, 0);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_EQ(st.active, 1);
  EXPECT_EQ(st.total, 1);
}

TEST_P(TckLifecycle, Spec3_SendWithScheduleAtNotInTheFutureIsActive) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t at_now,
                          engine().Send("jobs", {.body = "a", .schedule_at_ms = kT0}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t past,
                          engine().Send("jobs", {.body = "b", .schedule_at_ms = kT0 - 60'000}));
  for (int64_t seq : {at_now, past}) {
    MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "jobs", seq));
    EXPECT_EQ(m.state, MessageState::kActive) << seq;
    EXPECT_LE(m.visible_at, kT0);
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 10));
  EXPECT_EQ(Seqs(got), (std::vector<int64_t>{at_now, past}));
}

TEST_P(TckLifecycle, Spec3_SendWithDelayIsScheduled) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", {.body = "later", .delay_ms = 5'000}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "jobs", seq));
  EXPECT_EQ(m.state, MessageState::kScheduled);
  EXPECT_EQ(m.enqueued_at, kT0);
  EXPECT_EQ(m.visible_at, kT0 + 5'000);
  EXPECT_EQ(m.delivery_count, 0);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(got.empty());
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_EQ(st.scheduled, 1);
  EXPECT_EQ(st.active, 0);
  EXPECT_EQ(st.oldest_claimable_age_ms, 0);
}

TEST_P(TckLifecycle, Spec3_SendWithScheduleAtIsScheduled) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq,
                          engine().Send("jobs", {.body = "later", .schedule_at_ms = kT0 + 60'000}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "jobs", seq));
  EXPECT_EQ(m.state, MessageState::kScheduled);
  EXPECT_EQ(m.visible_at, kT0 + 60'000);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(got.empty());
}

// ---- scheduled → active when due (SPEC §3 row 3) ------------------------------

TEST_P(TckLifecycle, Spec3_ScheduledBecomesActiveByMaintenanceExactlyWhenDue) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", {.body = "x", .delay_ms = 5'000}));
  clock().Advance(4'999);
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r1, engine().RunMaintenance());
  EXPECT_EQ(r1.promoted, 0);
  MQ_ASSERT_OK_AND_ASSIGN(Message before, Find(engine(), "jobs", seq));
  EXPECT_EQ(before.state, MessageState::kScheduled);

  clock().Advance(1);  // now == visible_at: due (visible_at ≤ now, SPEC §5)
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r2, engine().RunMaintenance());
  EXPECT_EQ(r2.promoted, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find(engine(), "jobs", seq));
  EXPECT_EQ(after.state, MessageState::kActive);
  EXPECT_EQ(after.visible_at, kT0 + 5'000);
  EXPECT_EQ(after.delivery_count, 0);
  MQ_ASSERT_OK_AND_ASSIGN(Message got, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(got.seq, seq);
}

TEST_P(TckLifecycle, Spec3_ScheduledDueIsClaimedByReceiveWithoutMaintenance) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", {.body = "x", .delay_ms = 5'000}));
  clock().Advance(4'999);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> early, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(early.empty());
  clock().Advance(2);
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(m.seq, seq);
  EXPECT_EQ(m.state, MessageState::kLocked);
  EXPECT_EQ(m.delivery_count, 1);
  EXPECT_EQ(m.locked_until, kT0 + 5'001 + kLock);
}

// ---- Cancel (SPEC §3 row 4, §4) ----------------------------------------------

TEST_P(TckLifecycle, Spec4_CancelDeletesScheduledNeverDelivered) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", {.body = "x", .delay_ms = 5'000}));
  MQ_ASSERT_OK(engine().Cancel("jobs", seq));
  MQ_EXPECT_CODE(Find(engine(), "jobs", seq), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_EQ(st.total, 0);
  EXPECT_EQ(st.body_bytes, 0);
  MQ_EXPECT_CODE(engine().Cancel("jobs", seq), kNotFound);
  clock().Advance(10'000);
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(got.empty());
}

TEST_P(TckLifecycle, Spec4_CancelOfAnythingButNeverDeliveredScheduledIsNotFound) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  // locked
  MQ_ASSERT_OK_AND_ASSIGN(Message locked, SendAndReceive(engine(), "locked"));
  // scheduled again after a delivery (Abandon with delay): delivered once, so not cancellable
  MQ_ASSERT_OK_AND_ASSIGN(Message redelayed, SendAndReceive(engine(), "redelayed"));
  MQ_ASSERT_OK(engine().Abandon("jobs", redelayed.seq, redelayed.lock_token, 60'000));
  // deferred
  MQ_ASSERT_OK_AND_ASSIGN(Message deferred, SendAndReceive(engine(), "deferred"));
  MQ_ASSERT_OK(engine().Defer("jobs", deferred.seq, deferred.lock_token));
  // dead-lettered
  MQ_ASSERT_OK_AND_ASSIGN(int64_t dead, MakeDeadLetter(engine(), "dead"));
  // active
  MQ_ASSERT_OK_AND_ASSIGN(int64_t active, SendBody(engine(), "jobs", "active"));

  MQ_ASSERT_OK_AND_ASSIGN(QueueStats before, StatsOf(engine(), "jobs"));
  for (int64_t seq : {locked.seq, redelayed.seq, deferred.seq, dead, active}) {
    MQ_EXPECT_CODE(engine().Cancel("jobs", seq), kNotFound) << "seq " << seq;
  }
  MQ_EXPECT_CODE(engine().Cancel("jobs", active + 1'000), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats after, StatsOf(engine(), "jobs"));
  EXPECT_TRUE(StatsEq(before, after));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "jobs", redelayed.seq));
  EXPECT_EQ(m.state, MessageState::kScheduled);
  EXPECT_EQ(m.delivery_count, 1);
}

// ---- Receive (SPEC §3 rows 5–6, §5) ------------------------------------------

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

TEST_P(TckLifecycle, Spec5_ReceiveOnEmptyQueueReturnsNothing) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 256));
  EXPECT_TRUE(got.empty());
}

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

// ---- Complete / Abandon / Reject / Defer (SPEC §3 rows 7–11, §6) --------------

TEST_P(TckLifecycle, Spec3_CompleteDeletes) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "done"));
  MQ_ASSERT_OK(engine().Complete("jobs", m.seq, m.lock_token));
  MQ_EXPECT_CODE(Find(engine(), "jobs", m.seq), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_EQ(st.total, 0);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_EXPECT_CODE(Find(engine(), "jobs", m.seq), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(got.empty());
}

TEST_P(TckLifecycle, Spec3_AbandonWithoutDelayMakesActive) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "retry"));
  clock().Advance(10);
  MQ_ASSERT_OK(engine().Abandon("jobs", m.seq, m.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "jobs", m.seq));
  EXPECT_EQ(seen.state, MessageState::kActive);
  EXPECT_EQ(seen.delivery_count, 1);
  EXPECT_EQ(seen.locked_until, 0);
  EXPECT_TRUE(seen.lock_token.empty());
  EXPECT_FALSE(seen.dead_letter_reason.has_value());
  MQ_ASSERT_OK_AND_ASSIGN(Message again, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(again.seq, m.seq);
  EXPECT_EQ(again.delivery_count, 2);
  EXPECT_NE(again.lock_token, m.lock_token);
}

TEST_P(TckLifecycle, Spec3_AbandonAtMaxDeliveryCountDeadLetters) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "twice", {.max_delivery_count = 2}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m1, SendAndReceive(engine(), "x", "twice"));
  MQ_ASSERT_OK(engine().Abandon("twice", m1.seq, m1.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message after1, Find(engine(), "twice", m1.seq));
  EXPECT_EQ(after1.state, MessageState::kActive);

  MQ_ASSERT_OK_AND_ASSIGN(Message m2, ReceiveOne(engine(), "twice"));
  EXPECT_EQ(m2.delivery_count, 2);
  clock().Advance(777);
  MQ_ASSERT_OK(engine().Abandon("twice", m2.seq, m2.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "twice", m2.seq));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::optional<std::string>("MaxDeliveryCountExceeded"));
  EXPECT_EQ(dead.delivery_count, 2);
  EXPECT_EQ(dead.locked_until, 0);
  EXPECT_TRUE(dead.lock_token.empty());
  EXPECT_EQ(dead.dead_lettered_at, kT0 + 777);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "twice", 10));
  EXPECT_TRUE(got.empty());
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "twice"));
  EXPECT_EQ(st.dead_lettered, 1);
  EXPECT_EQ(st.active, 0);
}

TEST_P(TckLifecycle, Spec3_AbandonWithDelaySchedulesAtNowPlusDelay) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  clock().Advance(10);
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "later"));
  clock().Advance(90);  // now = kT0 + 100
  MQ_ASSERT_OK(engine().Abandon("jobs", m.seq, m.lock_token, 7'000));
  MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "jobs", m.seq));
  EXPECT_EQ(seen.state, MessageState::kScheduled);
  EXPECT_EQ(seen.visible_at, kT0 + 100 + 7'000);
  EXPECT_EQ(seen.delivery_count, 1);
  EXPECT_TRUE(seen.lock_token.empty());
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> early, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(early.empty());
  clock().Advance(6'999);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> still_early, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(still_early.empty());
  clock().Advance(1);
  MQ_ASSERT_OK_AND_ASSIGN(Message again, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(again.seq, m.seq);
  EXPECT_EQ(again.delivery_count, 2);
}

TEST_P(TckLifecycle, Spec3_AbandonWithDelayAtMaxDeliveryCountDeadLetters) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "once", {.max_delivery_count = 1}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "x", "once"));
  MQ_ASSERT_OK(engine().Abandon("once", m.seq, m.lock_token, 7'000));
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "once", m.seq));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::optional<std::string>("MaxDeliveryCountExceeded"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "once"));
  EXPECT_EQ(st.scheduled, 0);
  EXPECT_EQ(st.dead_lettered, 1);
}

TEST_P(TckLifecycle, Spec3_RejectDeadLettersWithReasonAndDescription) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "poison"));
  clock().Advance(42);
  const std::string reason = "BadPayload";
  const std::string description = "field 'x' missing \xE2\x80\x94 ünïcødé";
  MQ_ASSERT_OK(engine().Reject("jobs", m.seq, m.lock_token, reason, description));
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "jobs", m.seq));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::optional<std::string>(reason));
  EXPECT_EQ(dead.dead_letter_description, std::optional<std::string>(description));
  EXPECT_EQ(dead.dead_lettered_at, kT0 + 42);
  EXPECT_EQ(dead.delivery_count, 1);
  EXPECT_TRUE(dead.lock_token.empty());
  EXPECT_EQ(dead.locked_until, 0);
  EXPECT_EQ(dead.body, "poison");
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> dlq,
                          PeekAllOf(engine(), "jobs", MessageState::kDeadLettered));
  EXPECT_EQ(Seqs(dlq), std::vector<int64_t>{m.seq});
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(got.empty());
}

TEST_P(TckLifecycle, Spec3_DeferThenReceiveDeferredLocksAgain) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "defer me"));
  MQ_ASSERT_OK(engine().Defer("jobs", m.seq, m.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "jobs", m.seq));
  EXPECT_EQ(seen.state, MessageState::kDeferred);
  EXPECT_EQ(seen.delivery_count, 1);
  EXPECT_EQ(seen.locked_until, 0);
  EXPECT_TRUE(seen.lock_token.empty());
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(none.empty()) << "deferred messages are fetched only by seq";
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_EQ(st.deferred, 1);

  clock().Advance(500);
  const int64_t seqs[] = {m.seq};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, engine().ReceiveDeferred("jobs", seqs));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].seq, m.seq);
  EXPECT_EQ(got[0].state, MessageState::kLocked);
  EXPECT_EQ(got[0].delivery_count, 2);
  EXPECT_FALSE(got[0].lock_token.empty());
  EXPECT_NE(got[0].lock_token, m.lock_token);
  EXPECT_EQ(got[0].locked_until, kT0 + 500 + kLock);
  EXPECT_EQ(got[0].body, "defer me");
  MQ_EXPECT_CODE(engine().Complete("jobs", m.seq, m.lock_token), kLockLost);
  MQ_ASSERT_OK(engine().Complete("jobs", m.seq, got[0].lock_token));
  MQ_EXPECT_CODE(Find(engine(), "jobs", m.seq), kNotFound);
}

TEST_P(TckLifecycle, Spec6_ReceiveDeferredTakesSeveralSeqs) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message a, SendAndReceive(engine(), "a"));
  MQ_ASSERT_OK_AND_ASSIGN(Message b, SendAndReceive(engine(), "b"));
  MQ_ASSERT_OK(engine().Defer("jobs", a.seq, a.lock_token));
  MQ_ASSERT_OK(engine().Defer("jobs", b.seq, b.lock_token));
  const int64_t seqs[] = {b.seq, a.seq};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, engine().ReceiveDeferred("jobs", seqs));
  ASSERT_EQ(got.size(), 2u);
  std::set<int64_t> got_seqs = {got[0].seq, got[1].seq};
  EXPECT_EQ(got_seqs, (std::set<int64_t>{a.seq, b.seq}));
  for (const Message& m : got) {
    EXPECT_EQ(m.state, MessageState::kLocked);
    EXPECT_EQ(m.delivery_count, 2);
  }
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_EQ(st.locked, 2);
  EXPECT_EQ(st.deferred, 0);
}

// ---- Renew (SPEC §3 row 12, §6) -------------------------------------------------

TEST_P(TckLifecycle, Spec3_RenewExtendsTheLease) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "long job"));
  ASSERT_EQ(m.locked_until, kT0 + kLock);
  clock().Advance(10'000);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t until, engine().Renew("jobs", m.seq, m.lock_token));
  EXPECT_EQ(until, kT0 + 10'000 + kLock);
  MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "jobs", m.seq));
  EXPECT_EQ(seen.locked_until, kT0 + 10'000 + kLock);
  EXPECT_EQ(seen.state, MessageState::kLocked);
  EXPECT_EQ(seen.delivery_count, 1) << "a renew is not a delivery";
  // Past the original lease, within the renewed one: the token still settles.
  clock().Advance(25'000);
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r, engine().RunMaintenance());
  EXPECT_EQ(r.reclaimed, 0);
  MQ_ASSERT_OK(engine().Complete("jobs", m.seq, m.lock_token));
}

TEST_P(TckLifecycle, Spec3_RenewNeverShortensTheLease) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "x"));
  ASSERT_EQ(m.locked_until, kT0 + kLock);
  // Lower the queue's lock_duration: now + 5 s is earlier than the current lease.
  MQ_ASSERT_OK(engine().UpdateQueue({.name = "jobs", .lock_duration_ms = 5'000}));
  clock().Advance(1'000);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t until, engine().Renew("jobs", m.seq, m.lock_token));
  EXPECT_EQ(until, kT0 + kLock);
  MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "jobs", m.seq));
  EXPECT_EQ(seen.locked_until, kT0 + kLock);
  // Later, now + 5 s passes the old lease and does extend it.
  clock().Advance(27'000);  // now = kT0 + 28 s
  MQ_ASSERT_OK_AND_ASSIGN(int64_t until2, engine().Renew("jobs", m.seq, m.lock_token));
  EXPECT_EQ(until2, kT0 + 28'000 + 5'000);
}

TEST_P(TckLifecycle, Spec6_RenewAfterExpiryIsLockLostAndDoesNotRevive) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "x"));
  clock().Advance(kLock + 1);
  MQ_EXPECT_CODE(engine().Renew("jobs", m.seq, m.lock_token), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "jobs", m.seq));
  EXPECT_EQ(seen.locked_until, kT0 + kLock);
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r, engine().RunMaintenance());
  EXPECT_EQ(r.reclaimed, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message after, Find(engine(), "jobs", m.seq));
  EXPECT_EQ(after.state, MessageState::kActive);
}

// ---- lease expiry (SPEC §3 row 13) ---------------------------------------------

TEST_P(TckLifecycle, Spec3_LeaseExpiryByMaintenanceMakesActive) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "x"));
  clock().Advance(kLock - 1);
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r1, engine().RunMaintenance());
  EXPECT_EQ(r1.reclaimed, 0);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "jobs", m.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);

  clock().Advance(1);  // now == locked_until: expired
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r2, engine().RunMaintenance());
  EXPECT_EQ(r2.reclaimed, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "jobs", m.seq));
  EXPECT_EQ(seen.state, MessageState::kActive);
  EXPECT_EQ(seen.delivery_count, 1);
  EXPECT_EQ(seen.locked_until, 0);
  EXPECT_TRUE(seen.lock_token.empty());
  MQ_ASSERT_OK_AND_ASSIGN(Message again, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(again.seq, m.seq);
  EXPECT_EQ(again.delivery_count, 2);
}

TEST_P(TckLifecycle, Spec3_LeaseExpiryByMaintenanceAtMaxDeadLetters) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "once", {.max_delivery_count = 1}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "x", "once"));
  clock().Advance(kLock);
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r, engine().RunMaintenance());
  EXPECT_EQ(r.reclaimed, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "once", m.seq));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::optional<std::string>("MaxDeliveryCountExceeded"));
  EXPECT_EQ(dead.delivery_count, 1);
  EXPECT_EQ(dead.dead_lettered_at, kT0 + kLock);
}

TEST_P(TckLifecycle, Spec3_LeaseExpiryThenReceiveRedeliversWithoutMaintenance) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "x"));
  clock().Advance(kLock);
  MQ_ASSERT_OK_AND_ASSIGN(Message again, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(again.seq, m.seq);
  EXPECT_EQ(again.delivery_count, 2);
  EXPECT_NE(again.lock_token, m.lock_token);
  EXPECT_EQ(again.locked_until, kT0 + 2 * kLock);
}

TEST_P(TckLifecycle, Spec3_LeaseExpiryThenReceiveAtMaxDeadLettersWithoutMaintenance) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "once", {.max_delivery_count = 1}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "x", "once"));
  clock().Advance(kLock);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "once", 10));
  EXPECT_TRUE(got.empty()) << "§7.4: never delivered more than max_delivery_count times";
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "once", m.seq));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::optional<std::string>("MaxDeliveryCountExceeded"));
}

// ---- TTL (SPEC §3 row 15) --------------------------------------------------------

TEST_P(TckLifecycle, Spec3_TtlExpiresActiveToDeadLetterQueue) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", {.body = "x", .ttl_ms = 10'000}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "jobs", seq));
  EXPECT_EQ(m.expires_at, kT0 + 10'000);
  clock().Advance(9'999);
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r1, engine().RunMaintenance());
  EXPECT_EQ(r1.expired, 0);
  MQ_ASSERT_OK_AND_ASSIGN(Message alive, Find(engine(), "jobs", seq));
  EXPECT_EQ(alive.state, MessageState::kActive);
  clock().Advance(1);  // now == expires_at: expired
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r2, engine().RunMaintenance());
  EXPECT_EQ(r2.expired, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "jobs", seq));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::optional<std::string>("TTLExpired"));
  EXPECT_EQ(dead.delivery_count, 0);
  EXPECT_EQ(dead.dead_lettered_at, kT0 + 10'000);
}

TEST_P(TckLifecycle, Spec5_ExpiredMessageIsNotClaimedEvenBeforeMaintenance) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", {.body = "x", .ttl_ms = 10'000}));
  clock().Advance(10'000);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(got.empty());
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "jobs", seq));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::optional<std::string>("TTLExpired"));
}

TEST_P(TckLifecycle, Spec3_TtlExpiredIsDeletedWhenDeadLetterOnExpireIsOff) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "drop", {.dead_letter_on_expire = false}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("drop", {.body = "x", .ttl_ms = 1'000}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t keep, SendBody(engine(), "drop", "no ttl"));
  clock().Advance(1'000);
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r, engine().RunMaintenance());
  EXPECT_EQ(r.expired, 1);
  MQ_EXPECT_CODE(Find(engine(), "drop", seq), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "drop"));
  EXPECT_EQ(st.dead_lettered, 0);
  EXPECT_EQ(st.active, 1);
  EXPECT_EQ(st.total, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message k, Find(engine(), "drop", keep));
  EXPECT_EQ(k.state, MessageState::kActive);
}

TEST_P(TckLifecycle, Spec3_TtlExpiresScheduledMessage) {
  // A message abandoned with a delay that outlives its TTL expires while
  // still scheduled.
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", {.body = "x", .ttl_ms = 20'000}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "jobs"));
  ASSERT_EQ(m.seq, seq);
  MQ_ASSERT_OK(engine().Abandon("jobs", seq, m.lock_token, 60'000));
  MQ_ASSERT_OK_AND_ASSIGN(Message sched, Find(engine(), "jobs", seq));
  ASSERT_EQ(sched.state, MessageState::kScheduled);
  clock().Advance(20'000);
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r, engine().RunMaintenance());
  EXPECT_EQ(r.expired, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "jobs", seq));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::optional<std::string>("TTLExpired"));
}

TEST_P(TckLifecycle, Spec3_TtlExpiresDeferredMessage) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", {.body = "x", .ttl_ms = 20'000}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "jobs"));
  MQ_ASSERT_OK(engine().Defer("jobs", seq, m.lock_token));
  clock().Advance(19'999);
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "jobs", seq));
  EXPECT_EQ(still.state, MessageState::kDeferred);
  clock().Advance(1);
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r, engine().RunMaintenance());
  EXPECT_EQ(r.expired, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "jobs", seq));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::optional<std::string>("TTLExpired"));
  const int64_t seqs[] = {seq};
  MQ_EXPECT_CODE(engine().ReceiveDeferred("jobs", seqs), kNotFound);
}

TEST_P(TckLifecycle, Spec3_LockedMessageDoesNotExpireWhileLeaseLives) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", {.body = "x", .ttl_ms = 10'000}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "jobs"));
  clock().Advance(15'000);  // past expires_at, lease alive until kT0 + 30 s
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r, engine().RunMaintenance());
  EXPECT_EQ(r.expired, 0);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "jobs", seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  // The consumer still owns it and may settle.
  MQ_ASSERT_OK(engine().Complete("jobs", seq, m.lock_token));
  MQ_EXPECT_CODE(Find(engine(), "jobs", seq), kNotFound);
}

TEST_P(TckLifecycle, Spec3_LockedMessageExpiresOnceItsLeaseEndsUnsettled) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", {.body = "x", .ttl_ms = 10'000}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "jobs"));
  clock().Advance(15'000);
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "jobs", seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  clock().Advance(15'000);  // lease ends unsettled at kT0 + 30 s
  // One pass may reclaim and a second expire; the end state is what counts.
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "jobs", seq));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::optional<std::string>("TTLExpired"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 10));
  EXPECT_TRUE(got.empty());
  (void)m;
}

TEST_P(TckLifecycle, Spec3_TtlIsAnchoredAtVisibleAtForScheduledMessages) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(
      int64_t seq, engine().Send("jobs", {.body = "x", .delay_ms = 10'000, .ttl_ms = 5'000}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "jobs", seq));
  EXPECT_EQ(m.visible_at, kT0 + 10'000);
  EXPECT_EQ(m.expires_at, kT0 + 15'000);
  clock().Advance(10'000);
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK_AND_ASSIGN(Message due, Find(engine(), "jobs", seq));
  EXPECT_EQ(due.state, MessageState::kActive);
  clock().Advance(4'999);
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK_AND_ASSIGN(Message alive, Find(engine(), "jobs", seq));
  EXPECT_EQ(alive.state, MessageState::kActive);
  clock().Advance(1);
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "jobs", seq));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::optional<std::string>("TTLExpired"));
}

TEST_P(TckLifecycle, Spec2_DefaultTtlAppliesAndCapsLongerTtls) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "ttl", {.default_ttl_ms = 10'000}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t none, engine().Send("ttl", {.body = "default"}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t longer, engine().Send("ttl", {.body = "long", .ttl_ms = 60'000}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t shorter,
                          engine().Send("ttl", {.body = "short", .ttl_ms = 5'000}));
  MQ_ASSERT_OK_AND_ASSIGN(
      int64_t sched, engine().Send("ttl", {.body = "sched", .delay_ms = 1'000, .ttl_ms = 60'000}));
  std::map<int64_t, int64_t> want = {{none, kT0 + 10'000},
                                     {longer, kT0 + 10'000},
                                     {shorter, kT0 + 5'000},
                                     {sched, kT0 + 1'000 + 10'000}};
  for (auto [seq, expires] : want) {
    MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "ttl", seq));
    EXPECT_EQ(m.expires_at, expires) << "seq " << seq;
  }
  clock().Advance(10'000);
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> dlq,
                          PeekAllOf(engine(), "ttl", MessageState::kDeadLettered));
  EXPECT_EQ(Seqs(dlq), (std::vector<int64_t>{none, longer, shorter}));
  MQ_ASSERT_OK_AND_ASSIGN(Message s, Find(engine(), "ttl", sched));
  EXPECT_EQ(s.state, MessageState::kActive);
}

TEST_P(TckLifecycle, Spec3_NoTtlNeverExpires) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "jobs", "forever"));
  clock().Advance(400LL * 24 * 3600 * 1000);
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r, engine().RunMaintenance());
  EXPECT_EQ(r.expired, 0);
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "jobs", seq));
  EXPECT_EQ(m.state, MessageState::kActive);
  EXPECT_EQ(m.expires_at, 0);
}

// ---- Redrive, Purge, retention (SPEC §3 rows 16–17, §6) ---------------------------

TEST_P(TckLifecycle, Spec3_RedriveToSameQueueMakesActiveWithDeliveryCountZero) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "once", {.max_delivery_count = 1}));
  OutgoingMessage out{.body = "again",
                      .message_id = "id-1",
                      .subject = "subj",
                      .properties = {{"k", "v"}},
                      .priority = 4};
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("once", out));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "once"));
  MQ_ASSERT_OK(engine().Abandon("once", seq, m.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "once", seq));
  ASSERT_EQ(dead.state, MessageState::kDeadLettered);

  clock().Advance(1'000);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t moved, engine().Redrive("once"));
  EXPECT_EQ(moved, 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAllOf(engine(), "once"));
  ASSERT_EQ(all.size(), 1u);
  const Message& r = all[0];
  EXPECT_EQ(r.state, MessageState::kActive);
  EXPECT_EQ(r.delivery_count, 0);
  EXPECT_EQ(r.body, "again");
  EXPECT_EQ(r.message_id, out.message_id);
  EXPECT_EQ(r.subject, out.subject);
  EXPECT_EQ(r.properties, out.properties);
  EXPECT_EQ(r.priority, 4);
  EXPECT_FALSE(r.dead_letter_reason.has_value());
  EXPECT_FALSE(r.dead_letter_description.has_value());
  EXPECT_EQ(r.dead_lettered_at, 0);
  EXPECT_TRUE(r.lock_token.empty());
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "once"));
  EXPECT_EQ(st.dead_lettered, 0);
  EXPECT_EQ(st.active, 1);
  // A fresh delivery budget.
  MQ_ASSERT_OK_AND_ASSIGN(Message again, ReceiveOne(engine(), "once"));
  EXPECT_EQ(again.delivery_count, 1);
  EXPECT_EQ(again.body, "again");
}

TEST_P(TckLifecycle, Spec3_RedriveToAnotherQueue) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "other"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, MakeDeadLetter(engine(), "move me"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t active, SendBody(engine(), "jobs", "stay"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t moved, engine().Redrive("jobs", {.target_queue = "other"}));
  EXPECT_EQ(moved, 1);
  MQ_EXPECT_CODE(Find(engine(), "jobs", seq), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats src, StatsOf(engine(), "jobs"));
  EXPECT_EQ(src.dead_lettered, 0);
  EXPECT_EQ(src.active, 1);
  EXPECT_EQ(src.total, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message stay, Find(engine(), "jobs", active));
  EXPECT_EQ(stay.body, "stay");
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> there, PeekAllOf(engine(), "other"));
  ASSERT_EQ(there.size(), 1u);
  EXPECT_EQ(there[0].queue, "other");
  EXPECT_EQ(there[0].body, "move me");
  EXPECT_EQ(there[0].state, MessageState::kActive);
  EXPECT_EQ(there[0].delivery_count, 0);
  EXPECT_FALSE(there[0].dead_letter_reason.has_value());
  MQ_ASSERT_OK_AND_ASSIGN(Message got, ReceiveOne(engine(), "other"));
  EXPECT_EQ(got.body, "move me");
}

TEST_P(TckLifecycle, Spec6_RedriveHonoursMaxAndOlderThanOldestFirst) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  std::vector<int64_t> dead;
  for (int i = 0; i < 4; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(int64_t s, MakeDeadLetter(engine(), "d" + std::to_string(i)));
    dead.push_back(s);
    clock().Advance(1'000);
  }
  // Dead-lettered at kT0, +1 s, +2 s, +3 s; now = kT0 + 10 s.
  clock().Advance(6'000);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t n1, engine().Redrive("jobs", {.older_than_ms = 8'500}));
  EXPECT_EQ(n1, 2);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t n2, engine().Redrive("jobs", {.max_messages = 1}));
  EXPECT_EQ(n2, 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> dlq,
                          PeekAllOf(engine(), "jobs", MessageState::kDeadLettered));
  ASSERT_EQ(dlq.size(), 1u);
  EXPECT_EQ(dlq[0].body, "d3");
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> active,
                          PeekAllOf(engine(), "jobs", MessageState::kActive));
  std::set<std::string> bodies;
  for (const Message& m : active) bodies.insert(m.body);
  EXPECT_EQ(bodies, (std::set<std::string>{"d0", "d1", "d2"}));
}

TEST_P(TckLifecycle, Spec3_PurgeDeletesOnlyDeadLetters) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t d1, MakeDeadLetter(engine(), "d1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t d2, MakeDeadLetter(engine(), "d2"));
  MQ_ASSERT_OK_AND_ASSIGN(Message locked, SendAndReceive(engine(), "locked"));
  MQ_ASSERT_OK_AND_ASSIGN(Message deferred, SendAndReceive(engine(), "deferred"));
  MQ_ASSERT_OK(engine().Defer("jobs", deferred.seq, deferred.lock_token));
  MQ_ASSERT_OK(engine().Send("jobs", {.body = "scheduled", .delay_ms = 60'000}));
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "active"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats before, StatsOf(engine(), "jobs"));
  ASSERT_EQ(before.dead_lettered, 2);

  MQ_ASSERT_OK_AND_ASSIGN(int64_t purged, engine().Purge("jobs"));
  EXPECT_EQ(purged, 2);
  MQ_EXPECT_CODE(Find(engine(), "jobs", d1), kNotFound);
  MQ_EXPECT_CODE(Find(engine(), "jobs", d2), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats after, StatsOf(engine(), "jobs"));
  EXPECT_EQ(after.dead_lettered, 0);
  EXPECT_EQ(after.active, before.active);
  EXPECT_EQ(after.locked, before.locked);
  EXPECT_EQ(after.deferred, before.deferred);
  EXPECT_EQ(after.scheduled, before.scheduled);
  EXPECT_EQ(after.total, before.total - 2);
  EXPECT_EQ(after.body_bytes, before.body_bytes - 4);
  MQ_ASSERT_OK(engine().Complete("jobs", locked.seq, locked.lock_token));
}

TEST_P(TckLifecycle, Spec6_PurgeHonoursMaxAndOlderThan) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  for (int i = 0; i < 4; ++i) {
    MQ_ASSERT_OK(MakeDeadLetter(engine(), "d" + std::to_string(i)));
    clock().Advance(1'000);
  }
  clock().Advance(6'000);  // dead-lettered at kT0 .. +3 s; now kT0 + 10 s
  MQ_ASSERT_OK_AND_ASSIGN(int64_t n1, engine().Purge("jobs", {.older_than_ms = 8'500}));
  EXPECT_EQ(n1, 2);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t n2, engine().Purge("jobs", {.max_messages = 1}));
  EXPECT_EQ(n2, 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> dlq,
                          PeekAllOf(engine(), "jobs", MessageState::kDeadLettered));
  ASSERT_EQ(dlq.size(), 1u);
  EXPECT_EQ(dlq[0].body, "d3");
}

TEST_P(TckLifecycle, Spec6_RetentionByCountDropsOldestDeadLettersFirstOnly) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "ret", {.dlq_max_count = 2}));
  // Three messages, dead-lettered in reverse seq order so "oldest dead letter"
  // is the newest seq.
  std::vector<int64_t> s;
  for (const char* b : {"A", "B", "C"}) {
    MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "ret", b));
    s.push_back(seq);
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "ret", 3));
  ASSERT_EQ(got.size(), 3u);
  for (int i = 2; i >= 0; --i) {
    MQ_ASSERT_OK(engine().Reject("ret", got[i].seq, got[i].lock_token, "r"));
    clock().Advance(1'000);
  }
  // Bystanders in every other state.
  MQ_ASSERT_OK_AND_ASSIGN(Message locked, SendAndReceive(engine(), "locked", "ret"));
  MQ_ASSERT_OK_AND_ASSIGN(Message deferred, SendAndReceive(engine(), "deferred", "ret"));
  MQ_ASSERT_OK(engine().Defer("ret", deferred.seq, deferred.lock_token));
  MQ_ASSERT_OK(engine().Send("ret", {.body = "scheduled", .delay_ms = 600'000}));
  MQ_ASSERT_OK(SendBody(engine(), "ret", "active"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats before, StatsOf(engine(), "ret"));

  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r, engine().RunMaintenance());
  EXPECT_EQ(r.retention_dropped, 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> dlq,
                          PeekAllOf(engine(), "ret", MessageState::kDeadLettered));
  EXPECT_EQ(Seqs(dlq), (std::vector<int64_t>{s[0], s[1]})) << "C was dead-lettered first";
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats after, StatsOf(engine(), "ret"));
  EXPECT_EQ(after.dead_lettered, 2);
  EXPECT_EQ(after.active, before.active);
  EXPECT_EQ(after.locked, before.locked);
  EXPECT_EQ(after.deferred, before.deferred);
  EXPECT_EQ(after.scheduled, before.scheduled);
  EXPECT_EQ(after.total, before.total - 1);
  // Idempotent: within bounds now.
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r2, engine().RunMaintenance());
  EXPECT_EQ(r2.retention_dropped, 0);
  MQ_ASSERT_OK(engine().Complete("ret", locked.seq, locked.lock_token));
}

TEST_P(TckLifecycle, Spec6_RetentionByAge) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "ret", {.dlq_max_age_ms = 10'000}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t old_dead, MakeDeadLetter(engine(), "old", "ret"));
  clock().Advance(5'000);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t young_dead, MakeDeadLetter(engine(), "young", "ret"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t active, SendBody(engine(), "ret", "active"));
  clock().Advance(7'000);  // ages: 12 s and 7 s
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r, engine().RunMaintenance());
  EXPECT_EQ(r.retention_dropped, 1);
  MQ_EXPECT_CODE(Find(engine(), "ret", old_dead), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(Message young, Find(engine(), "ret", young_dead));
  EXPECT_EQ(young.state, MessageState::kDeadLettered);
  MQ_ASSERT_OK_AND_ASSIGN(Message a, Find(engine(), "ret", active));
  EXPECT_EQ(a.state, MessageState::kActive);
}

TEST_P(TckLifecycle, Spec6_RetentionByBytes) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "ret", {.dlq_max_bytes = 25}));
  std::vector<int64_t> dead;
  for (char c : {'a', 'b', 'c'}) {
    MQ_ASSERT_OK_AND_ASSIGN(int64_t s, MakeDeadLetter(engine(), std::string(10, c), "ret"));
    dead.push_back(s);
    clock().Advance(10);
  }
  MQ_ASSERT_OK_AND_ASSIGN(int64_t big, SendBody(engine(), "ret", std::string(100, 'z')));
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r, engine().RunMaintenance());
  EXPECT_EQ(r.retention_dropped, 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> dlq,
                          PeekAllOf(engine(), "ret", MessageState::kDeadLettered));
  EXPECT_EQ(Seqs(dlq), (std::vector<int64_t>{dead[1], dead[2]}));
  MQ_ASSERT_OK_AND_ASSIGN(Message b, Find(engine(), "ret", big));
  EXPECT_EQ(b.state, MessageState::kActive);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "ret"));
  EXPECT_EQ(st.body_bytes, 120);
}

TEST_P(TckLifecycle, Spec2_RetentionInheritsEngineDefaultUnlessUnbounded) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  engine_options().dlq_max_count = 1;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK(CreateQueue(engine(), "inherit"));  // 0 = inherit the engine's bound of 1
  MQ_ASSERT_OK(CreateQueue(engine(), "unbounded", {.dlq_max_count = -1}));  // explicitly unbounded
  for (const char* q : {"inherit", "unbounded"}) {
    for (int i = 0; i < 3; ++i) {
      MQ_ASSERT_OK(MakeDeadLetter(engine(), "d" + std::to_string(i), q));
      clock().Advance(10);
    }
  }
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> inherit,
                          PeekAllOf(engine(), "inherit", MessageState::kDeadLettered));
  ASSERT_EQ(inherit.size(), 1u);
  EXPECT_EQ(inherit[0].body, "d2");
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> unbounded,
                          PeekAllOf(engine(), "unbounded", MessageState::kDeadLettered));
  EXPECT_EQ(unbounded.size(), 3u);
}

// ---- settle fencing (SPEC §6) -------------------------------------------------------

TEST_P(TckLifecycle, Spec6_WrongTokenIsLockLostForEverySettleAndChangesNothing) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "x"));
  LockToken wrong = Tampered(m.lock_token);
  MQ_EXPECT_CODE(engine().Complete("jobs", m.seq, wrong), kLockLost);
  MQ_EXPECT_CODE(engine().Abandon("jobs", m.seq, wrong), kLockLost);
  MQ_EXPECT_CODE(engine().Abandon("jobs", m.seq, wrong, 5'000), kLockLost);
  MQ_EXPECT_CODE(engine().Reject("jobs", m.seq, wrong, "r", "d"), kLockLost);
  MQ_EXPECT_CODE(engine().Defer("jobs", m.seq, wrong), kLockLost);
  MQ_EXPECT_CODE(engine().Renew("jobs", m.seq, wrong), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "jobs", m.seq));
  EXPECT_EQ(seen.state, MessageState::kLocked);
  EXPECT_EQ(seen.locked_until, m.locked_until);
  EXPECT_EQ(seen.delivery_count, 1);
  MQ_ASSERT_OK(engine().Complete("jobs", m.seq, m.lock_token));
}

TEST_P(TckLifecycle, Spec6_SettleOnUnlockedMessageIsLockLost) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "jobs", "active"));
  LockToken t;
  t.bytes[3] = 9;
  MQ_EXPECT_CODE(engine().Complete("jobs", seq, t), kLockLost);
  MQ_EXPECT_CODE(engine().Renew("jobs", seq, t), kLockLost);
  MQ_EXPECT_CODE(engine().Complete("jobs", seq + 1'000, t), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "jobs", seq));
  EXPECT_EQ(seen.state, MessageState::kActive);
}

TEST_P(TckLifecycle, Spec6_TokenAtExactlyLockedUntilIsLockLostWithoutMaintenance) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  for (int i = 0; i < 7; ++i) MQ_ASSERT_OK(SendBody(engine(), "jobs", "m" + std::to_string(i)));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 7));
  ASSERT_EQ(got.size(), 7u);
  const int64_t until = kT0 + kLock;
  for (const Message& m : got) ASSERT_EQ(m.locked_until, until);

  // One millisecond before the end the lease is alive.
  clock().Set(until - 1);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t renewed, engine().Renew("jobs", got[0].seq, got[0].lock_token));
  EXPECT_EQ(renewed, until - 1 + kLock);

  // now == locked_until: already expired (SPEC §6), maintenance or not.
  clock().Set(until);
  MQ_EXPECT_CODE(engine().Complete("jobs", got[1].seq, got[1].lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Abandon("jobs", got[2].seq, got[2].lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Reject("jobs", got[3].seq, got[3].lock_token, "r"), kLockLost);
  MQ_EXPECT_CODE(engine().Defer("jobs", got[4].seq, got[4].lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Renew("jobs", got[5].seq, got[5].lock_token), kLockLost);
  const SettleItem items[] = {{got[6].seq, got[6].lock_token}};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> results, engine().CompleteBatch("jobs", items));
  ASSERT_EQ(results.size(), 1u);
  MQ_EXPECT_CODE(results[0], kLockLost);
  for (int i = 1; i < 7; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "jobs", got[i].seq));
    EXPECT_EQ(seen.state, MessageState::kLocked) << "nothing changed for seq " << got[i].seq;
    EXPECT_EQ(seen.locked_until, until);
  }
  // The renewed one is still alive.
  MQ_ASSERT_OK(engine().Complete("jobs", got[0].seq, got[0].lock_token));
}

TEST_P(TckLifecycle, Spec6_OldTokenAfterRedeliveryIsLockLost) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message first, SendAndReceive(engine(), "x"));
  clock().Advance(kLock);
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK_AND_ASSIGN(Message second, ReceiveOne(engine(), "jobs"));
  ASSERT_EQ(second.seq, first.seq);
  ASSERT_NE(second.lock_token, first.lock_token);
  MQ_EXPECT_CODE(engine().Complete("jobs", first.seq, first.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Abandon("jobs", first.seq, first.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Reject("jobs", first.seq, first.lock_token, "r"), kLockLost);
  MQ_EXPECT_CODE(engine().Defer("jobs", first.seq, first.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Renew("jobs", first.seq, first.lock_token), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "jobs", first.seq));
  EXPECT_EQ(seen.state, MessageState::kLocked);
  EXPECT_EQ(seen.delivery_count, 2);
  MQ_ASSERT_OK(engine().Complete("jobs", second.seq, second.lock_token));
}

TEST_P(TckLifecycle, Spec7_2_IdenticalRetryOfASuccessfulSettleReplays) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, SendAndReceive(engine(), "x"));
  MQ_ASSERT_OK(engine().Complete("jobs", m.seq, m.lock_token));
  // The identical request again: replayed from the receipt.
  MQ_EXPECT_OK(engine().Complete("jobs", m.seq, m.lock_token));
  // Any difference in the key (here the operation) is LockLost.
  MQ_EXPECT_CODE(engine().Abandon("jobs", m.seq, m.lock_token), kLockLost);
  MQ_EXPECT_CODE(engine().Complete("jobs", m.seq, Tampered(m.lock_token)), kLockLost);
  // Receipts live 30 minutes; expiry is checked against now.
  clock().Advance(31LL * 60 * 1000);
  MQ_EXPECT_CODE(engine().Complete("jobs", m.seq, m.lock_token), kLockLost);
}

// ---- batch settles (SPEC §6) ----------------------------------------------------------

TEST_P(TckLifecycle, Spec6_CompleteBatchReportsPerItemAndAStaleItemFailsAlone) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  for (int i = 0; i < 3; ++i) MQ_ASSERT_OK(SendBody(engine(), "jobs", "m" + std::to_string(i)));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 3));
  ASSERT_EQ(got.size(), 3u);
  const SettleItem items[] = {
      {got[0].seq, got[0].lock_token},
      {got[1].seq, Tampered(got[1].lock_token)},
      {got[2].seq, got[2].lock_token},
      {got[2].seq + 1'000, got[2].lock_token},
  };
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> results, engine().CompleteBatch("jobs", items));
  ASSERT_EQ(results.size(), 4u);
  MQ_EXPECT_OK(results[0]);
  MQ_EXPECT_CODE(results[1], kLockLost);
  MQ_EXPECT_OK(results[2]);
  MQ_EXPECT_CODE(results[3], kLockLost);
  MQ_EXPECT_CODE(Find(engine(), "jobs", got[0].seq), kNotFound);
  MQ_EXPECT_CODE(Find(engine(), "jobs", got[2].seq), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(Message stale, Find(engine(), "jobs", got[1].seq));
  EXPECT_EQ(stale.state, MessageState::kLocked);
  MQ_ASSERT_OK(engine().Complete("jobs", got[1].seq, got[1].lock_token));
}

TEST_P(TckLifecycle, Spec6_CompleteBatchWithAStaleTokenAfterRedelivery) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message a, SendAndReceive(engine(), "a"));
  clock().Advance(kLock);
  MQ_ASSERT_OK_AND_ASSIGN(Message a2, ReceiveOne(engine(), "jobs"));
  ASSERT_EQ(a2.seq, a.seq);
  MQ_ASSERT_OK_AND_ASSIGN(Message b, SendAndReceive(engine(), "b"));
  const SettleItem items[] = {{a.seq, a.lock_token}, {b.seq, b.lock_token}};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> results, engine().CompleteBatch("jobs", items));
  ASSERT_EQ(results.size(), 2u);
  MQ_EXPECT_CODE(results[0], kLockLost);
  MQ_EXPECT_OK(results[1]);
  MQ_ASSERT_OK_AND_ASSIGN(Message seen, Find(engine(), "jobs", a.seq));
  EXPECT_EQ(seen.state, MessageState::kLocked);
  EXPECT_EQ(seen.delivery_count, 2);
}

TEST_P(TckLifecycle, Spec6_RenewBatchPerItemAndNeverRevivesAnExpiredLease) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message a, SendAndReceive(engine(), "a"));  // lease to kT0 + 30 s
  clock().Advance(10'000);
  MQ_ASSERT_OK_AND_ASSIGN(Message b, SendAndReceive(engine(), "b"));  // lease to kT0 + 40 s
  clock().Advance(20'000);  // now = kT0 + 30 s: a's lease just ended, b's is alive
  const SettleItem items[] = {
      {a.seq, a.lock_token},
      {b.seq, b.lock_token},
      {b.seq, Tampered(b.lock_token)},
  };
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<RenewOutcome> out, engine().RenewBatch("jobs", items));
  ASSERT_EQ(out.size(), 3u);
  MQ_EXPECT_CODE(out[0].status, kLockLost);
  MQ_EXPECT_OK(out[1].status);
  EXPECT_EQ(out[1].locked_until, kT0 + 30'000 + kLock);
  MQ_EXPECT_CODE(out[2].status, kLockLost);

  MQ_ASSERT_OK_AND_ASSIGN(Message seen_a, Find(engine(), "jobs", a.seq));
  EXPECT_EQ(seen_a.locked_until, kT0 + kLock) << "the expired lease was not revived";
  MQ_ASSERT_OK_AND_ASSIGN(Message seen_b, Find(engine(), "jobs", b.seq));
  EXPECT_EQ(seen_b.locked_until, kT0 + 30'000 + kLock);
  MQ_EXPECT_CODE(engine().Complete("jobs", a.seq, a.lock_token), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport r, engine().RunMaintenance());
  EXPECT_EQ(r.reclaimed, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message after_a, Find(engine(), "jobs", a.seq));
  EXPECT_EQ(after_a.state, MessageState::kActive);
  MQ_ASSERT_OK(engine().Complete("jobs", b.seq, b.lock_token));
}

// ---- Stats and Peek (SPEC §6) ------------------------------------------------------------

TEST_P(TckLifecycle, Spec6_StatsOfAnEmptyQueueAreZero) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_TRUE(StatsEq(st, QueueStats{}));
}

TEST_P(TckLifecycle, Spec6_StatsCountEveryStateBytesAndOldestClaimableAge) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b, SendBody(engine(), "jobs", "bb"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t c, SendBody(engine(), "jobs", "ccc"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t d, SendBody(engine(), "jobs", "dddd"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 3));
  ASSERT_EQ(Seqs(got), (std::vector<int64_t>{b, c, d}));
  MQ_ASSERT_OK(engine().Defer("jobs", c, got[1].lock_token));
  MQ_ASSERT_OK(engine().Reject("jobs", d, got[2].lock_token, "r"));
  clock().Advance(1'000);
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "a"));  // oldest claimable, enqueued kT0 + 1 s
  MQ_ASSERT_OK(engine().Send("jobs", {.body = "eeeee", .delay_ms = 60'000}));
  clock().Advance(2'000);
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "ffffff"));  // younger claimable
  clock().Advance(2'000);                              // now = kT0 + 5 s

  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  QueueStats want;
  want.active = 2;
  want.locked = 1;
  want.deferred = 1;
  want.scheduled = 1;
  want.dead_lettered = 1;
  want.total = 6;
  want.body_bytes = 2 + 3 + 4 + 1 + 5 + 6;
  want.oldest_claimable_age_ms = 4'000;
  EXPECT_TRUE(StatsEq(st, want));
}

TEST_P(TckLifecycle, Spec6_OldestClaimableAgeIgnoresLockedAndScheduled) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "old"));
  MQ_ASSERT_OK(ReceiveOne(engine(), "jobs"));  // locked: not claimable
  MQ_ASSERT_OK(engine().Send("jobs", {.body = "s", .delay_ms = 100'000}));
  clock().Advance(3'000);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats none, StatsOf(engine(), "jobs"));
  EXPECT_EQ(none.oldest_claimable_age_ms, 0);
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "new"));
  clock().Advance(500);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_EQ(st.oldest_claimable_age_ms, 500);
}

TEST_P(TckLifecycle, Spec6_PeekByStateAndPagingBySeq) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  std::vector<int64_t> s;
  for (int i = 0; i < 10; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "jobs", "m" + std::to_string(i)));
    s.push_back(seq);
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> locked, ReceiveMany(engine(), "jobs", 3));
  ASSERT_EQ(locked.size(), 3u);

  PeekOptions o{.state = MessageState::kActive, .from_seq = 0, .max_messages = 3};
  std::vector<std::vector<int64_t>> pages;
  for (;;) {
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> page, engine().Peek("jobs", o));
    if (page.empty()) break;
    ASSERT_LE(page.size(), 3u);
    for (const Message& m : page) EXPECT_EQ(m.state, MessageState::kActive);
    pages.push_back(Seqs(page));
    o.from_seq = page.back().seq;
    ASSERT_LT(pages.size(), 10u);
  }
  EXPECT_EQ(pages,
            (std::vector<std::vector<int64_t>>{{s[3], s[4], s[5]}, {s[6], s[7], s[8]}, {s[9]}}));

  MQ_ASSERT_OK_AND_ASSIGN(
      std::vector<Message> lk,
      engine().Peek("jobs", {.state = MessageState::kLocked, .max_messages = 100}));
  EXPECT_EQ(Seqs(lk), (std::vector<int64_t>{s[0], s[1], s[2]}));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, engine().Peek("jobs", {.max_messages = 100}));
  EXPECT_EQ(Seqs(all), s);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> mid,
                          engine().Peek("jobs", {.from_seq = s[4], .max_messages = 2}));
  EXPECT_EQ(Seqs(mid), (std::vector<int64_t>{s[5], s[6]}));
  MQ_ASSERT_OK_AND_ASSIGN(
      std::vector<Message> deferred,
      engine().Peek("jobs", {.state = MessageState::kDeferred, .max_messages = 100}));
  EXPECT_TRUE(deferred.empty());
}

TEST_P(TckLifecycle, Spec6_PeekTakesNoLockAndChangesNothing) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "jobs", "look"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats before, StatsOf(engine(), "jobs"));
  for (int i = 0; i < 3; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> page, engine().Peek("jobs"));
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].state, MessageState::kActive);
    EXPECT_EQ(page[0].delivery_count, 0);
    EXPECT_TRUE(page[0].lock_token.empty());
    EXPECT_EQ(page[0].locked_until, 0);
  }
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats after, StatsOf(engine(), "jobs"));
  EXPECT_TRUE(StatsEq(before, after));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(m.seq, seq);
  EXPECT_EQ(m.delivery_count, 1);
}

TEST_P(TckLifecycle, Spec6_PeekShowsDeadLettersWithTheirReason) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t dead, MakeDeadLetter(engine(), "dl"));
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "live"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> dlq,
                          PeekAllOf(engine(), "jobs", MessageState::kDeadLettered));
  ASSERT_EQ(dlq.size(), 1u);
  EXPECT_EQ(dlq[0].seq, dead);
  EXPECT_EQ(dlq[0].dead_letter_reason, std::optional<std::string>("Test"));
  EXPECT_EQ(dlq[0].dead_letter_description, std::optional<std::string>("made by the test"));
}

// ---- fields, seqs, namespaces (SPEC §2, §3) ---------------------------------------------

void ExpectSameFields(const Message& got, const OutgoingMessage& sent) {
  EXPECT_EQ(got.body, sent.body);
  EXPECT_EQ(got.message_id, sent.message_id);
  EXPECT_EQ(got.group_id, sent.group_id);
  EXPECT_EQ(got.subject, sent.subject);
  EXPECT_EQ(got.correlation_id, sent.correlation_id);
  EXPECT_EQ(got.content_type, sent.content_type);
  EXPECT_EQ(got.properties, sent.properties);
  EXPECT_EQ(got.priority, sent.priority);
}

TEST_P(TckLifecycle, Spec3_AllFieldsRoundTripByteExact) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  std::string body;
  for (int round = 0; round < 3; ++round) {
    for (int c = 0; c < 256; ++c) body.push_back(static_cast<char>(c));
  }
  body += std::string(5, '\0');
  OutgoingMessage full;
  full.body = body;
  full.message_id = std::string("id\0with\0nuls", 12);
  full.group_id = "gr\xC3\xBCppe-\xF0\x9F\x9A\x80";  // "grüppe-🚀"
  static constexpr char kSubject[] =
      "Gr\xC3\xBC\xC3\x9F"
      "e \xE6\x97\xA5\xE6\x9C\xAC\0end";
  full.subject = std::string(kSubject, sizeof(kSubject) - 1);  // keeps the NUL
  full.correlation_id = "";  // present but empty: not the same as absent
  full.content_type = std::nullopt;
  full.properties = {{std::string("k\0ey", 4), std::string("v\0al", 4)},
                     {"empty", ""},
                     {"\xC3\xBCni", "\xF0\x9F\x9A\x80"},
                     {std::string(128, 'k'), std::string(4096, 'v')}};
  full.priority = 7;

  OutgoingMessage bare;  // every optional absent, empty body
  bare.body = "";

  MQ_ASSERT_OK_AND_ASSIGN(int64_t s_full, engine().Send("jobs", full));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s_bare, engine().Send("jobs", bare));

  MQ_ASSERT_OK_AND_ASSIGN(Message p_full, Find(engine(), "jobs", s_full));
  ExpectSameFields(p_full, full);
  EXPECT_TRUE(p_full.correlation_id.has_value());
  EXPECT_FALSE(p_full.content_type.has_value());
  MQ_ASSERT_OK_AND_ASSIGN(Message p_bare, Find(engine(), "jobs", s_bare));
  ExpectSameFields(p_bare, bare);
  EXPECT_FALSE(p_bare.message_id.has_value());
  EXPECT_FALSE(p_bare.correlation_id.has_value());
  EXPECT_TRUE(p_bare.properties.empty());

  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK_AND_ASSIGN(Message r_full, Find(engine(), "jobs", s_full));
  ExpectSameFields(r_full, full);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 2));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].seq, s_full);
  ExpectSameFields(got[0], full);
  EXPECT_EQ(got[1].seq, s_bare);
  ExpectSameFields(got[1], bare);
  // And through Receive-and-Delete after a redrive (a copy of every field).
  MQ_ASSERT_OK(engine().Reject("jobs", s_full, got[0].lock_token, "r"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t moved, engine().Redrive("jobs"));
  ASSERT_EQ(moved, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message rd, ReceiveOne(engine(), "jobs", ReceiveMode::kReceiveAndDelete));
  ExpectSameFields(rd, full);
}

TEST_P(TckLifecycle, Spec3_SeqStrictlyIncreasesAcrossQueuesAndBatches) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "other"));
  std::vector<int64_t> all;
  for (int i = 0; i < 3; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(int64_t a, SendBody(engine(), "jobs", "a"));
    MQ_ASSERT_OK_AND_ASSIGN(int64_t b, SendBody(engine(), "other", "b"));
    all.push_back(a);
    all.push_back(b);
    std::vector<OutgoingMessage> batch(4, OutgoingMessage{.body = "batch"});
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> bs, SendBatchSeqs(engine(), "jobs", batch));
    ASSERT_EQ(bs.size(), 4u);
    all.insert(all.end(), bs.begin(), bs.end());
  }
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1], all[i]) << i;
  EXPECT_GT(all.front(), 0);
}

TEST_P(TckLifecycle, Spec3_SeqNeverReusedAfterDeletingTheNewestAndReopening) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody(engine(), "jobs", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody(engine(), "jobs", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 2));
  ASSERT_EQ(got.size(), 2u);
  MQ_ASSERT_OK(engine().Complete("jobs", s2, got[1].lock_token));  // the newest
  MQ_ASSERT_OK(engine().Complete("jobs", s1, got[0].lock_token));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, SendBody(engine(), "jobs", "3"));
  EXPECT_GT(s3, s2);

  // Newest deleted by Cancel, Receive-and-Delete and DeleteQueue: still never reused.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s4, engine().Send("jobs", {.body = "4", .delay_ms = 1'000}));
  MQ_ASSERT_OK(engine().Cancel("jobs", s4));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s5, SendBody(engine(), "jobs", "5"));
  EXPECT_GT(s5, s4);
  MQ_ASSERT_OK(ReceiveMany(engine(), "jobs", 256));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s6, SendBody(engine(), "jobs", "6"));
  MQ_ASSERT_OK_AND_ASSIGN(Message rd, ReceiveOne(engine(), "jobs", ReceiveMode::kReceiveAndDelete));
  EXPECT_EQ(rd.seq, s6);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s7, SendBody(engine(), "jobs", "7"));
  EXPECT_GT(s7, s6);
  MQ_ASSERT_OK(engine().DeleteQueue("jobs"));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s8, SendBody(engine(), "jobs", "8"));
  EXPECT_GT(s8, s7);
}

TEST_P(TckLifecycle, Spec2_SeqsAndTokensOfOneQueueAreUnknownInAnother) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "b"));
  MQ_ASSERT_OK_AND_ASSIGN(Message a_locked, SendAndReceive(engine(), "a-locked"));
  MQ_ASSERT_OK_AND_ASSIGN(Message a_def, SendAndReceive(engine(), "a-deferred"));
  MQ_ASSERT_OK(engine().Defer("jobs", a_def.seq, a_def.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a_sched,
                          engine().Send("jobs", {.body = "s", .delay_ms = 60'000}));
  MQ_ASSERT_OK(MakeDeadLetter(engine(), "a-dead"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b_own, SendBody(engine(), "b", "b-own"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats a_before, StatsOf(engine(), "jobs"));

  const LockToken& t = a_locked.lock_token;
  MQ_EXPECT_CODE(engine().Complete("b", a_locked.seq, t), kLockLost);
  MQ_EXPECT_CODE(engine().Abandon("b", a_locked.seq, t), kLockLost);
  MQ_EXPECT_CODE(engine().Reject("b", a_locked.seq, t, "r"), kLockLost);
  MQ_EXPECT_CODE(engine().Defer("b", a_locked.seq, t), kLockLost);
  MQ_EXPECT_CODE(engine().Renew("b", a_locked.seq, t), kLockLost);
  const SettleItem items[] = {{a_locked.seq, t}};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> cb, engine().CompleteBatch("b", items));
  ASSERT_EQ(cb.size(), 1u);
  MQ_EXPECT_CODE(cb[0], kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<RenewOutcome> rb, engine().RenewBatch("b", items));
  ASSERT_EQ(rb.size(), 1u);
  MQ_EXPECT_CODE(rb[0].status, kLockLost);
  MQ_EXPECT_CODE(engine().Cancel("b", a_sched), kNotFound);
  const int64_t deferred[] = {a_def.seq};
  MQ_EXPECT_CODE(engine().ReceiveDeferred("b", deferred), kNotFound);
  MQ_EXPECT_CODE(Find(engine(), "b", a_locked.seq), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t redriven, engine().Redrive("b"));
  EXPECT_EQ(redriven, 0);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t purged, engine().Purge("b"));
  EXPECT_EQ(purged, 0);

  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> b_all, PeekAllOf(engine(), "b"));
  EXPECT_EQ(Seqs(b_all), std::vector<int64_t>{b_own});
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats b_stats, StatsOf(engine(), "b"));
  EXPECT_EQ(b_stats.total, 1);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats a_after, StatsOf(engine(), "jobs"));
  EXPECT_TRUE(StatsEq(a_before, a_after));
  MQ_ASSERT_OK_AND_ASSIGN(Message got_b, ReceiveOne(engine(), "b"));
  EXPECT_EQ(got_b.seq, b_own);
  MQ_ASSERT_OK(engine().Complete("jobs", a_locked.seq, t));
}

// ---- recovery (SPEC §7.1) -------------------------------------------------------------

// An exclusive store has no other live engine, so every lock found at open is
// an orphan (SPEC §7.1).
TEST_P(TckLifecycle, Spec7_1_ReopenReclaimsLockedMessagesImmediately) {
  if (SkipUnlessExclusive()) return;
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "once", {.max_delivery_count = 1}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody(engine(), "jobs", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody(engine(), "jobs", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 2));
  ASSERT_EQ(Seqs(got), (std::vector<int64_t>{s1, s2}));
  MQ_ASSERT_OK_AND_ASSIGN(Message def, SendAndReceive(engine(), "deferred"));
  MQ_ASSERT_OK(engine().Defer("jobs", def.seq, def.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, SendBody(engine(), "jobs", "3"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t sched, engine().Send("jobs", {.body = "s", .delay_ms = 60'000}));
  MQ_ASSERT_OK_AND_ASSIGN(Message last, SendAndReceive(engine(), "last chance", "once"));

  ASSERT_NO_FATAL_FAILURE(Reopen());  // the clock does not move: the leases are still "live"

  for (int64_t seq : {s1, s2}) {
    MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "jobs", seq));
    EXPECT_EQ(m.state, MessageState::kActive) << seq;
    EXPECT_EQ(m.delivery_count, 1) << seq;
    EXPECT_EQ(m.locked_until, 0);
    EXPECT_TRUE(m.lock_token.empty());
  }
  MQ_ASSERT_OK_AND_ASSIGN(Message m3, Find(engine(), "jobs", s3));
  EXPECT_EQ(m3.state, MessageState::kActive);
  EXPECT_EQ(m3.delivery_count, 0);
  MQ_ASSERT_OK_AND_ASSIGN(Message d, Find(engine(), "jobs", def.seq));
  EXPECT_EQ(d.state, MessageState::kDeferred);
  MQ_ASSERT_OK_AND_ASSIGN(Message sc, Find(engine(), "jobs", sched));
  EXPECT_EQ(sc.state, MessageState::kScheduled);
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "once", last.seq));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::optional<std::string>("MaxDeliveryCountExceeded"));
  EXPECT_EQ(dead.delivery_count, 1);

  // Old tokens are dead; the next delivery counts on.
  MQ_EXPECT_CODE(engine().Complete("jobs", s1, got[0].lock_token), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> again, ReceiveMany(engine(), "jobs", 10));
  ASSERT_EQ(Seqs(again), (std::vector<int64_t>{s1, s2, s3}));
  EXPECT_EQ(again[0].delivery_count, 2);
  EXPECT_EQ(again[1].delivery_count, 2);
  EXPECT_EQ(again[2].delivery_count, 1);
}

// A shared store cannot tell a dead engine from a live one, so opening
// reclaims only expired leases; a live lease and its token survive (SPEC §7.1).
TEST_P(TckLifecycle, Spec7_1_SharedStoreReopenKeepsLiveLeases) {
  if (SkipUnlessShared()) return;
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(Message expired,
                          SendAndReceive(engine(), "expires"));  // until kT0 + 30 s
  clock().Advance(10'000);
  MQ_ASSERT_OK_AND_ASSIGN(Message live, SendAndReceive(engine(), "lives"));  // until kT0 + 40 s
  clock().Advance(20'000);  // now = kT0 + 30 s: the first lease just ended

  ASSERT_NO_FATAL_FAILURE(Reopen());

  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "jobs", live.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  EXPECT_EQ(still.lock_token, live.lock_token);
  EXPECT_EQ(still.locked_until, kT0 + 10'000 + kLock);
  MQ_EXPECT_CODE(engine().Complete("jobs", expired.seq, expired.lock_token), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(Message again, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(again.seq, expired.seq);
  EXPECT_EQ(again.delivery_count, 2);
  MQ_EXPECT_OK(engine().Complete("jobs", live.seq, live.lock_token));
}

// ---- queues (SPEC §2) -------------------------------------------------------------------

TEST_P(TckLifecycle, Spec2_CreateQueueIsIdempotentAndUpdateQueueChangesTheConfig) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  QueueConfig c{.name = "cfg",
                .lock_duration_ms = 5'000,
                .max_delivery_count = 3,
                .default_ttl_ms = 60'000,
                .dead_letter_on_expire = false};
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig first, engine().CreateQueue(c));
  EXPECT_EQ(first.name, "cfg");
  EXPECT_EQ(first.lock_duration_ms, 5'000);
  EXPECT_EQ(first.max_delivery_count, 3);
  EXPECT_EQ(first.default_ttl_ms, 60'000);
  EXPECT_FALSE(first.dead_letter_on_expire);
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig again, engine().CreateQueue(c));
  EXPECT_EQ(again, first);
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig looked, engine().GetQueue("cfg"));
  EXPECT_EQ(looked, first);

  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "cfg", "kept"));
  c.lock_duration_ms = 7'000;
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig unchanged, engine().CreateQueue(c));
  EXPECT_EQ(unchanged, first) << "CreateQueue never changes an existing queue";
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig updated, engine().UpdateQueue(c));
  EXPECT_EQ(updated.lock_duration_ms, 7'000);
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "cfg"));
  EXPECT_EQ(m.seq, seq) << "an update keeps the queue's messages";
  EXPECT_EQ(m.locked_until, kT0 + 7'000);

  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig persisted, engine().GetQueue("cfg"));
  EXPECT_EQ(persisted, updated);
}

TEST_P(TckLifecycle, Spec2_ListAndDeleteQueues) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(CreateQueue(engine(), "zeta"));
  MQ_ASSERT_OK(CreateQueue(engine(), "alpha"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<QueueConfig> qs, engine().ListQueues());
  std::vector<std::string> names;
  for (const QueueConfig& q : qs) names.push_back(q.name);
  EXPECT_EQ(names, (std::vector<std::string>{"alpha", "jobs", "zeta"}));

  MQ_ASSERT_OK(MakeDeadLetter(engine(), "dead", "zeta"));
  MQ_ASSERT_OK(SendBody(engine(), "zeta", "x"));
  MQ_ASSERT_OK(engine().DeleteQueue("zeta"));
  MQ_EXPECT_CODE(engine().GetQueue("zeta"), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Stats("zeta"), kQueueNotFound);
  MQ_ASSERT_OK(CreateQueue(engine(), "zeta"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "zeta"));
  EXPECT_EQ(st.total, 0) << "a deleted queue's messages are gone";
}

// ---- open and close (SPEC §9) ---------------------------------------------------------

// Creates "jobs" holding one message, "payload".
void SeedJobs(Engine& e) {
  MQ_ASSERT_OK(CreateQueue(e, "jobs"));
  MQ_ASSERT_OK(SendBody(e, "jobs", "payload"));
}

// The engine is unharmed by a refused second open: it still sends, receives
// and completes, and sees its data.
void ExpectStillWorks(Engine& e, int64_t want_total_before) {
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, e.Stats("jobs"));
  EXPECT_EQ(st.total, want_total_before);
  MQ_ASSERT_OK(SendBody(e, "jobs", "after"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, e.Receive("jobs", {.max_messages = 10}));
  ASSERT_EQ(got.size(), static_cast<size_t>(want_total_before + 1));
  for (const Message& m : got) MQ_EXPECT_OK(e.Complete("jobs", m.seq, m.lock_token));
}

TEST_P(TckLifecycle, Spec9_SecondOpenWhileOpenIsDbLocked) {
  if (SkipUnlessExclusive()) return;
  ASSERT_NO_FATAL_FAILURE(SeedJobs(engine()));
  MQ_EXPECT_CODE(fixture().Open(), kDbLocked);
  MQ_EXPECT_CODE(OpenEngine(), kDbLocked);
  ExpectStillWorks(engine(), 1);
}

TEST_P(TckLifecycle, Spec9_SharedStoreAdmitsASecondEngine) {
  if (SkipUnlessShared()) return;
  ASSERT_NO_FATAL_FAILURE(SeedJobs(engine()));
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> second, OpenEngine());
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, second->Stats("jobs"));
  EXPECT_EQ(st.total, 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, second->Receive("jobs"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body, "payload");
  MQ_EXPECT_OK(second->Complete("jobs", got[0].seq, got[0].lock_token));
  MQ_EXPECT_OK(second->Close());
  ExpectStillWorks(engine(), 0);
}

TEST_P(TckLifecycle, Spec9_ReopenAfterCloseSucceedsAndKeepsData) {
  CloseEngine();
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> first, OpenEngine());
  ASSERT_NO_FATAL_FAILURE(SeedJobs(*first));
  MQ_ASSERT_OK(first->Close());
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> second, OpenEngine());
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, second->Stats("jobs"));
  EXPECT_EQ(st.total, 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, second->Receive("jobs"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body, "payload");
  // The first engine is fenced; the second one owns the data.
  MQ_EXPECT_CODE(first->Send("jobs", {.body = "late"}), kClosed);
  MQ_EXPECT_OK(second->Complete("jobs", got[0].seq, got[0].lock_token));
}

TEST_P(TckLifecycle, Spec9_DestroyingTheEngineReleasesTheStore) {
  CloseEngine();
  {
    MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> first, OpenEngine());
    ASSERT_NO_FATAL_FAILURE(SeedJobs(*first));
  }  // ~Engine closes
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> second, OpenEngine());
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, second->Stats("jobs"));
  EXPECT_EQ(st.total, 1);
}

TEST_P(TckLifecycle, Spec9_ABareStoreHoldsTheLockUntilDestroyed) {
  if (SkipUnlessExclusive()) return;
  CloseEngine();
  {
    MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, fixture().Open());
    MQ_EXPECT_CODE(fixture().Open(), kDbLocked);
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> again, fixture().Open());
  if (profile().wrap) again = profile().wrap(std::move(again));
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e,
                          Engine::Open(std::move(again), engine_options()));
  MQ_EXPECT_OK(CreateQueue(*e, "jobs"));
}

TEST_P(TckLifecycle, Spec9_DifferentDataSetsDoNotConflict) {
  ASSERT_NO_FATAL_FAILURE(SeedJobs(engine()));
  std::unique_ptr<StoreFixture> other_data = profile().make_fixture();
  ASSERT_NE(other_data, nullptr);
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, other_data->Open());
  if (profile().wrap) store = profile().wrap(std::move(store));
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> other,
                          Engine::Open(std::move(store), engine_options()));
  MQ_EXPECT_CODE(other->Stats("jobs"), kQueueNotFound);
  ExpectStillWorks(engine(), 1);
  MQ_EXPECT_OK(other->Close());
}

TEST_P(TckLifecycle, Spec9_CloseMakesEveryLaterCallClosed) {
  ASSERT_NO_FATAL_FAILURE(SeedJobs(engine()));
  Engine& e = engine();
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, e.Receive("jobs"));
  ASSERT_EQ(got.size(), 1u);
  const Message m = got[0];
  MQ_ASSERT_OK(e.Close());

  const int64_t seqs[] = {m.seq};
  const SettleItem items[] = {{m.seq, m.lock_token}};
  const OutgoingMessage batch[] = {{.body = "a"}};
  MQ_EXPECT_CODE(e.CreateQueue({.name = "other"}), kClosed);
  MQ_EXPECT_CODE(e.GetQueue("jobs"), kClosed);
  MQ_EXPECT_CODE(e.ListQueues(), kClosed);
  MQ_EXPECT_CODE(e.DeleteQueue("jobs"), kClosed);
  MQ_EXPECT_CODE(e.Send("jobs", {.body = "x"}), kClosed);
  MQ_EXPECT_CODE(e.SendBatch("jobs", batch), kClosed);
  MQ_EXPECT_CODE(e.Cancel("jobs", m.seq), kClosed);
  MQ_EXPECT_CODE(e.Receive("jobs"), kClosed);
  MQ_EXPECT_CODE(e.Receive("jobs", {.max_messages = 1, .wait_ms = 20'000}), kClosed);
  MQ_EXPECT_CODE(e.ReceiveDeferred("jobs", seqs), kClosed);
  MQ_EXPECT_CODE(e.Complete("jobs", m.seq, m.lock_token), kClosed);
  MQ_EXPECT_CODE(e.Abandon("jobs", m.seq, m.lock_token), kClosed);
  MQ_EXPECT_CODE(e.Reject("jobs", m.seq, m.lock_token, "r"), kClosed);
  MQ_EXPECT_CODE(e.Defer("jobs", m.seq, m.lock_token), kClosed);
  MQ_EXPECT_CODE(e.Renew("jobs", m.seq, m.lock_token), kClosed);
  MQ_EXPECT_CODE(e.CompleteBatch("jobs", items), kClosed);
  MQ_EXPECT_CODE(e.RenewBatch("jobs", items), kClosed);
  MQ_EXPECT_CODE(e.Peek("jobs"), kClosed);
  MQ_EXPECT_CODE(e.Stats("jobs"), kClosed);
  MQ_EXPECT_CODE(e.Redrive("jobs"), kClosed);
  MQ_EXPECT_CODE(e.Purge("jobs"), kClosed);
  MQ_EXPECT_CODE(e.RunMaintenance(), kClosed);
  MQ_EXPECT_CODE(e.Tx([](TxContext&) { return Status::OK(); }), kClosed);
  // Even invalid input reports Closed rather than touching anything.
  MQ_EXPECT_CODE(e.Send("no-such-queue", {.body = "x"}), kClosed);
}

TEST_P(TckLifecycle, Spec9_CloseIsIdempotent) {
  ASSERT_NO_FATAL_FAILURE(SeedJobs(engine()));
  MQ_EXPECT_OK(engine().Close());
  MQ_EXPECT_OK(engine().Close());
  MQ_EXPECT_OK(engine().Close());
  MQ_EXPECT_CODE(engine().Stats("jobs"), kClosed);
  CloseEngine();  // one more Close, then the destructor after Close
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_EXPECT_OK(engine().Stats("jobs"));
}

}  // namespace
}  // namespace mqlite::tck
