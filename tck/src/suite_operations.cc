// TckLifecycle (continued) — what an application or an operator relies on
// beyond the core transitions: deferred messages that can no longer be
// delivered (SPEC §7.4, §3), Stats' oldest claimable age (§6), Peek without
// lock tokens (§6), create-if-absent vs update of a queue (§2), and the
// operator paths for one stuck message (§6: dead-letter or delete by seq).
// Each test pins a defect found by trying the library as a new user would
// (issue 9) and fails on the code before its fix.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorOperations() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

// ---- ReceiveDeferred of a message that can no longer be delivered (§7.4) ----

MQLITE_TCK_GRADES(TckLifecycle,
                  Spec7_4_ReceiveDeferredOfAnExhaustedMessageDeadLettersItAndFreesItsGroup, "G2",
                  "G3", "G4");
TEST_P(TckLifecycle, Spec7_4_ReceiveDeferredOfAnExhaustedMessageDeadLettersItAndFreesItsGroup) {
  // The reported repro: max_delivery_count 1, grouped a, b; Receive a; Defer a;
  // ReceiveDeferred(a) answered NotFound, a stayed deferred for ever and b
  // was never delivered.
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs", WithMaxDeliveries(1)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a, SendMsg(engine(), "jobs", "a", "g"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b, SendMsg(engine(), "jobs", "b", "g"));
  MQ_ASSERT_OK_AND_ASSIGN(Message got, ReceiveOne(engine(), "jobs"));
  ASSERT_EQ(got.seq, a);
  MQ_ASSERT_OK(engine().Defer("jobs", a, got.lock_token));
  clock().Advance(1'000);

  const int64_t seqs[] = {a};
  Result<std::vector<Message>> r = engine().ReceiveDeferred("jobs", seqs);
  MQ_ASSERT_CODE(r, kNotFound);
  EXPECT_TRUE(MessageHas(r.error(), "seq " + std::to_string(a)));
  EXPECT_TRUE(MessageHas(r.error(), kReasonMaxDelivery));

  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "jobs", a));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::string(kReasonMaxDelivery));
  EXPECT_EQ(dead.dead_lettered_at, kT0 + 1'000);
  EXPECT_EQ(dead.delivery_count, 1) << "retiring is not a delivery";
  MQ_ASSERT_OK_AND_ASSIGN(Message next, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(next.seq, b) << "the group's next member is the head now";
  // The dead letter is reachable by the DLQ operations.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t moved, engine().Redrive("jobs"));
  EXPECT_EQ(moved, 1);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec7_4_ReceiveDeferredRetiringOneSeqLocksNoneOfTheOthers, "G2",
                  "G4");
TEST_P(TckLifecycle, Spec7_4_ReceiveDeferredRetiringOneSeqLocksNoneOfTheOthers) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs", WithMaxDeliveries(2)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a, SendBody(engine(), "jobs", "a"));
  MQ_ASSERT_OK_AND_ASSIGN(Message a1, ReceiveOne(engine(), "jobs"));
  MQ_ASSERT_OK(engine().Abandon("jobs", a, a1.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message a2, ReceiveOne(engine(), "jobs"));
  ASSERT_EQ(a2.seq, a);
  MQ_ASSERT_OK(engine().Defer("jobs", a, a2.lock_token));  // 2 of 2 deliveries used
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b, SendBody(engine(), "jobs", "b"));
  MQ_ASSERT_OK_AND_ASSIGN(Message b1, ReceiveOne(engine(), "jobs"));
  MQ_ASSERT_OK(engine().Defer("jobs", b, b1.lock_token));  // 1 of 2

  const int64_t seqs[] = {b, a};
  MQ_EXPECT_CODE(engine().ReceiveDeferred("jobs", seqs), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "jobs", b));
  EXPECT_EQ(still.state, MessageState::kDeferred) << "all or nothing: b was not locked";
  EXPECT_EQ(still.delivery_count, 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "jobs", a));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  // b on its own is delivered.
  const int64_t only_b[] = {b};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, engine().ReceiveDeferred("jobs", only_b));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].delivery_count, 2);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec3_ReceiveDeferredOfATtlExpiredMessageExpiresIt, "G2", "G4");
TEST_P(TckLifecycle, Spec3_ReceiveDeferredOfATtlExpiredMessageExpiresIt) {
  QueueConfig c;
  c.default_ttl_ms = 10'000;
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs", c));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a, SendMsg(engine(), "jobs", "a", "g"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b, SendMsg(engine(), "jobs", "b", "g"));
  MQ_ASSERT_OK_AND_ASSIGN(Message got, ReceiveOne(engine(), "jobs"));
  MQ_ASSERT_OK(engine().Defer("jobs", a, got.lock_token));
  clock().Advance(10'000);  // expires_at == now: expired
  const int64_t seqs[] = {a};
  Result<std::vector<Message>> r = engine().ReceiveDeferred("jobs", seqs);
  MQ_ASSERT_CODE(r, kNotFound);
  EXPECT_TRUE(MessageHas(r.error(), kReasonTtlExpired));
  MQ_ASSERT_OK_AND_ASSIGN(Message dead, Find(engine(), "jobs", a));
  EXPECT_EQ(dead.state, MessageState::kDeadLettered);
  EXPECT_EQ(dead.dead_letter_reason, std::string(kReasonTtlExpired));
  // b's TTL passed too; what matters is that a no longer blocks the group:
  // maintenance expires b, and the group is empty of live members.
  MQ_ASSERT_OK(engine().RunMaintenance());
  MQ_ASSERT_OK_AND_ASSIGN(Message b_dead, Find(engine(), "jobs", b));
  EXPECT_EQ(b_dead.state, MessageState::kDeadLettered);
}

// ---- Stats.oldest_claimable_age_ms (§6) --------------------------------------

MQLITE_TCK_GRADES(TckLifecycle, Spec6_OldestClaimableCountsAScheduledMessageOnceItIsDue, "G3");
TEST_P(TckLifecycle, Spec6_OldestClaimableCountsAScheduledMessageOnceItIsDue) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(SendMsg(engine(), "jobs", "later", std::nullopt, 0, /*delay_ms=*/1'000));
  clock().Advance(500);
  EXPECT_EQ(StatsOk("jobs").oldest_claimable_age_ms, 0) << "not due yet";
  clock().Advance(4'500);  // due since 4 s; no maintenance has run
  EXPECT_EQ(StatsOk("jobs").oldest_claimable_age_ms, 5'000) << "age counts from enqueued_at";
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 1));
  EXPECT_EQ(got.size(), 1u) << "Receive claims it, so Stats must count it";
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_OldestClaimableCountsALapsedLeaseWithDeliveriesLeft, "G3",
                  "G6");
TEST_P(TckLifecycle, Spec6_OldestClaimableCountsALapsedLeaseWithDeliveriesLeft) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs", WithMaxDeliveries(2)));
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "held"));
  MQ_ASSERT_OK(ReceiveOne(engine(), "jobs"));
  clock().Advance(kLock - 1);
  EXPECT_EQ(StatsOk("jobs").oldest_claimable_age_ms, 0) << "the lease is live";
  clock().Advance(1'001);  // lapsed 1 s ago, not reaped
  EXPECT_EQ(StatsOk("jobs").oldest_claimable_age_ms, kLock + 1'000);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_OldestClaimableSkipsALapsedLeaseOutOfDeliveries, "G3", "G6");
TEST_P(TckLifecycle, Spec6_OldestClaimableSkipsALapsedLeaseOutOfDeliveries) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs", WithMaxDeliveries(1)));
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "last try"));
  MQ_ASSERT_OK(ReceiveOne(engine(), "jobs"));
  clock().Advance(kLock + 1'000);
  EXPECT_EQ(StatsOk("jobs").oldest_claimable_age_ms, 0)
      << "a Receive dead-letters it instead of delivering it";
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_OldestClaimableSkipsTtlExpiredAndBlockedGroupMembers, "G3",
                  "G4");
TEST_P(TckLifecycle, Spec6_OldestClaimableSkipsTtlExpiredAndBlockedGroupMembers) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  OutgoingMessage short_lived = Out("expires");
  short_lived.ttl_ms = 1'000;
  MQ_ASSERT_OK(engine().Send("jobs", short_lived));
  MQ_ASSERT_OK(SendMsg(engine(), "jobs", "head", "g"));
  MQ_ASSERT_OK(SendMsg(engine(), "jobs", "blocked", "g"));
  MQ_ASSERT_OK_AND_ASSIGN(Message head, ReceiveOne(engine(), "jobs"));
  ASSERT_EQ(head.body, "expires");  // first in seq order
  MQ_ASSERT_OK(engine().Abandon("jobs", head.seq, head.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> two, ReceiveMany(engine(), "jobs", 2));
  ASSERT_EQ(two.size(), 2u);  // "expires" again and the group head
  MQ_ASSERT_OK(engine().Abandon("jobs", two[0].seq, two[0].lock_token));
  clock().Advance(2'000);  // "expires" is past its TTL; "head" is locked; "blocked" waits
  EXPECT_EQ(StatsOk("jobs").oldest_claimable_age_ms, 0);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_OldestClaimableIsByEnqueuedAtSoARedrivenMessageCountsAsOld,
                  "G3", "G4");
TEST_P(TckLifecycle, Spec6_OldestClaimableIsByEnqueuedAtSoARedrivenMessageCountsAsOld) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "old"));  // enqueued kT0
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "jobs"));
  MQ_ASSERT_OK(engine().Reject("jobs", m.seq, m.lock_token, "Poison"));
  clock().Advance(10'000);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t young, SendBody(engine(), "jobs", "young"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t moved, engine().Redrive("jobs"));
  ASSERT_EQ(moved, 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAllOf(engine(), "jobs"));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].seq, young) << "the redriven copy has a higher seq";
  EXPECT_EQ(all[1].enqueued_at, kT0);
  clock().Advance(1'000);
  EXPECT_EQ(StatsOk("jobs").oldest_claimable_age_ms, 11'000);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_OldestClaimableIsTheOldestAcrossPriorities, "G3");
TEST_P(TckLifecycle, Spec6_OldestClaimableIsTheOldestAcrossPriorities) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  auto send = [&](const char* body, int priority) {
    OutgoingMessage m = Out(body);
    m.priority = priority;
    return engine().Send("jobs", m);
  };
  MQ_ASSERT_OK(send("old", 2));  // enqueued kT0
  clock().Advance(3'000);
  MQ_ASSERT_OK(send("urgent", 9));
  MQ_ASSERT_OK(send("low", 0));
  clock().Advance(1'000);
  // The oldest is neither first in claim order nor of the lowest priority.
  EXPECT_EQ(StatsOk("jobs").oldest_claimable_age_ms, 4'000);
  MQ_ASSERT_OK_AND_ASSIGN(Message first, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(first.body, "urgent");
  EXPECT_EQ(StatsOk("jobs").oldest_claimable_age_ms, 4'000);
  MQ_ASSERT_OK_AND_ASSIGN(Message second, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(second.body, "old");
  EXPECT_EQ(StatsOk("jobs").oldest_claimable_age_ms, 1'000) << "\"low\" is left";
}

// ---- Peek never hands out a lock token (§6) ----------------------------------

MQLITE_TCK_GRADES(TckLifecycle, Spec6_PeekNeverReturnsALockTokenSoAnInspectorCannotSettle, "G2",
                  "G3");
TEST_P(TckLifecycle, Spec6_PeekNeverReturnsALockTokenSoAnInspectorCannotSettle) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "mine"));
  MQ_ASSERT_OK_AND_ASSIGN(Message owned, ReceiveOne(engine(), "jobs"));
  ASSERT_FALSE(owned.lock_token.empty());
  for (std::optional<MessageState> state :
       {std::optional<MessageState>(), std::optional<MessageState>(MessageState::kLocked)}) {
    PeekOptions o;
    o.state = state;
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> seen, engine().Peek("jobs", o));
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].state, MessageState::kLocked);
    EXPECT_EQ(seen[0].locked_until, owned.locked_until) << "the lease is shown";
    EXPECT_TRUE(seen[0].lock_token.empty()) << "the token is the claimer's alone";
    MQ_EXPECT_CODE(engine().Complete("jobs", owned.seq, seen[0].lock_token), kInvalidArgument);
  }
  MQ_EXPECT_OK(engine().Complete("jobs", owned.seq, owned.lock_token));
}

// ---- CreateQueue is create-if-absent; UpdateQueue replaces (§2) ---------------

MQLITE_TCK_GRADES(TckLifecycle,
                  Spec2_CreateQueueOnAnExistingQueueChangesNothingAndReturnsTheStoredConfig, "G6");
TEST_P(TckLifecycle, Spec2_CreateQueueOnAnExistingQueueChangesNothingAndReturnsTheStoredConfig) {
  QueueConfig tuned{.name = "jobs", .lock_duration_ms = 5'000, .max_delivery_count = 3};
  MQ_ASSERT_OK(engine().CreateQueue(tuned));
  // Startup code that calls CreateQueue with defaults must not reset it.
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig seen, engine().CreateQueue({.name = "jobs"}));
  EXPECT_EQ(seen, tuned);
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig stored, engine().GetQueue("jobs"));
  EXPECT_EQ(stored, tuned);
  // Still validated, even when it would change nothing.
  MQ_EXPECT_CODE(engine().CreateQueue({.name = "jobs", .lock_duration_ms = 1}), kInvalidArgument);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec2_UpdateQueueReplacesTheConfigAndKeepsTheMessages, "G6");
TEST_P(TckLifecycle, Spec2_UpdateQueueReplacesTheConfigAndKeepsTheMessages) {
  MQ_ASSERT_OK(engine().CreateQueue({.name = "jobs", .lock_duration_ms = 5'000}));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "jobs", "kept"));
  QueueConfig next{.name = "jobs", .lock_duration_ms = 7'000, .max_delivery_count = 4};
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig updated, engine().UpdateQueue(next));
  EXPECT_EQ(updated, next);
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(m.seq, seq);
  EXPECT_EQ(m.locked_until, kT0 + 7'000);
  MQ_EXPECT_CODE(engine().UpdateQueue({.name = "absent"}), kQueueNotFound);
  MQ_EXPECT_CODE(engine().UpdateQueue({.name = "jobs", .ordering = Ordering::kStrictFifo}),
                 kInvalidArgument)
      << "ordering cannot change under messages";
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig persisted, engine().GetQueue("jobs"));
  EXPECT_EQ(persisted, next);
}

// ---- Operator paths: dead-letter or delete one message by seq (§6) ------------

MQLITE_TCK_GRADES(TckLifecycle, Spec6_DeadLetterMessageWorksInEveryLiveState, "G2", "G4");
TEST_P(TckLifecycle, Spec6_DeadLetterMessageWorksInEveryLiveState) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t locked, SendBody(engine(), "jobs", "locked"));
  MQ_ASSERT_OK_AND_ASSIGN(Message lease, ReceiveOne(engine(), "jobs"));
  ASSERT_EQ(lease.seq, locked);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t deferred, SendBody(engine(), "jobs", "deferred"));
  MQ_ASSERT_OK_AND_ASSIGN(Message d, ReceiveOne(engine(), "jobs"));
  MQ_ASSERT_OK(engine().Defer("jobs", deferred, d.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t active, SendBody(engine(), "jobs", "active"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t scheduled,
                          SendMsg(engine(), "jobs", "scheduled", std::nullopt, 0, 60'000));
  clock().Advance(250);
  for (int64_t seq : {locked, deferred, active, scheduled}) {
    MQ_ASSERT_OK(engine().DeadLetterMessage("jobs", seq, "Stuck", "moved by the operator"));
    MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "jobs", seq));
    EXPECT_EQ(m.state, MessageState::kDeadLettered) << "seq " << seq;
    EXPECT_EQ(m.dead_letter_reason, std::string("Stuck"));
    EXPECT_EQ(m.dead_letter_description, std::string("moved by the operator"));
    EXPECT_EQ(m.dead_lettered_at, kT0 + 250);
    EXPECT_EQ(m.locked_until, 0);
  }
  MQ_EXPECT_CODE(engine().Complete("jobs", locked, lease.lock_token), kLockLost)
      << "the revoked lease's holder cannot settle";
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_EQ(st.dead_lettered, 4);
  EXPECT_EQ(st.total, 4);
  MQ_EXPECT_CODE(engine().DeadLetterMessage("jobs", active, "Again"), kNotFound)
      << "already dead-lettered";
  MQ_EXPECT_CODE(engine().DeadLetterMessage("jobs", 999'999, "Stuck"), kNotFound);
  MQ_EXPECT_CODE(engine().DeadLetterMessage("jobs", active, ""), kInvalidArgument);
  MQ_EXPECT_CODE(engine().DeadLetterMessage("jobs", active, std::string(129, 'r')),
                 kInvalidArgument);
  MQ_EXPECT_CODE(engine().DeadLetterMessage("jobs", 0, "Stuck"), kInvalidArgument);
  MQ_EXPECT_CODE(engine().DeadLetterMessage("nope", active, "Stuck"), kQueueNotFound);
  // From the DLQ the usual operations reach them.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t purged, engine().Purge("jobs", {.max_messages = 2}));
  EXPECT_EQ(purged, 2);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t moved, engine().Redrive("jobs"));
  EXPECT_EQ(moved, 2);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_DeadLetterMessageOfAGroupHeadPromotesTheNextMember, "G3",
                  "G4");
TEST_P(TckLifecycle, Spec6_DeadLetterMessageOfAGroupHeadPromotesTheNextMember) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs", WithOrdering(Ordering::kGroupFifo)));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a, SendMsg(engine(), "jobs", "a", "g"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b, SendMsg(engine(), "jobs", "b", "g"));
  MQ_ASSERT_OK_AND_ASSIGN(Message held, ReceiveOne(engine(), "jobs"));
  ASSERT_EQ(held.seq, a);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany(engine(), "jobs", 5));
  EXPECT_TRUE(none.empty()) << "b waits behind its locked head";
  MQ_ASSERT_OK(engine().DeadLetterMessage("jobs", a, "Stuck"));
  MQ_ASSERT_OK_AND_ASSIGN(Message next, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(next.seq, b);
  // A blocked member can be dead-lettered too without disturbing the head.
  MQ_ASSERT_OK_AND_ASSIGN(int64_t c, SendMsg(engine(), "jobs", "c", "g"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t e, SendMsg(engine(), "jobs", "e", "g"));
  MQ_ASSERT_OK(engine().DeadLetterMessage("jobs", c, "Stuck"));
  MQ_ASSERT_OK(engine().Complete("jobs", b, next.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(Message after, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(after.seq, e);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_DeleteMessageInAnyStateKeepsGroupsAndDeadLetterTotals, "G2",
                  "G3", "G4", "G7");
TEST_P(TckLifecycle, Spec6_DeleteMessageInAnyStateKeepsGroupsAndDeadLetterTotals) {
  QueueConfig c = WithOrdering(Ordering::kGroupFifo);
  c.dlq_max_count = 1;  // retention counts dead letters: a delete must be counted out
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs", c));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t a, SendMsg(engine(), "jobs", "a", "g"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b, SendMsg(engine(), "jobs", "b", "g"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t x, SendMsg(engine(), "jobs", "x", "h"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> held, ReceiveMany(engine(), "jobs", 2));
  ASSERT_EQ(Seqs(held), (std::vector<int64_t>{a, x}));
  MQ_ASSERT_OK(engine().Reject("jobs", x, held[1].lock_token, "Bad"));
  MQ_ASSERT_OK(engine().DeleteMessage("jobs", a));  // a locked head
  MQ_EXPECT_CODE(engine().Complete("jobs", a, held[0].lock_token), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(Message next, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(next.seq, b) << "the group moved on";
  MQ_ASSERT_OK(engine().DeleteMessage("jobs", x));  // a dead letter
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_EQ(st.dead_lettered, 0);
  EXPECT_EQ(st.total, 1);
  // Retention sees a DLQ of 0 + 1 = 1 ≤ max 1 after one more dead letter.
  MQ_ASSERT_OK(engine().Reject("jobs", b, next.lock_token, "Bad"));
  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport rep, engine().RunMaintenance());
  EXPECT_EQ(rep.retention_dropped, 0) << "a deleted dead letter must leave the DLQ totals";
  MQ_EXPECT_CODE(engine().DeleteMessage("jobs", x), kNotFound);
  MQ_EXPECT_CODE(engine().DeleteMessage("nope", b), kQueueNotFound);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_EXPECT_CODE(Find(engine(), "jobs", a), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(Message kept, Find(engine(), "jobs", b));
  EXPECT_EQ(kept.state, MessageState::kDeadLettered);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec2_OperatorPathsNeverReachAnotherQueue, "G4");
TEST_P(TckLifecycle, Spec2_OperatorPathsNeverReachAnotherQueue) {
  MQ_ASSERT_OK(CreateQueue(engine(), "a"));
  MQ_ASSERT_OK(CreateQueue(engine(), "b"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t in_a, SendBody(engine(), "a", "mine"));
  MQ_EXPECT_CODE(engine().DeadLetterMessage("b", in_a, "Stuck"), kNotFound);
  MQ_EXPECT_CODE(engine().DeleteMessage("b", in_a), kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "a", in_a));
  EXPECT_EQ(m.state, MessageState::kActive);
}

}  // namespace
}  // namespace mqlite::tck
