// TckLifecycle (continued) — settling a claimed message: Complete, Abandon,
// Reject, Defer and ReceiveDeferred (SPEC §3 rows 7–11, §6), Renew (row 12),
// lease expiry with and without maintenance (row 13), settle fencing by the
// lock token (§6), the receipt replay of a settle (§7.2), and batch settles.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorSettle() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

// ---- Complete / Abandon / Reject / Defer (SPEC §3 rows 7–11, §6) --------------

MQLITE_TCK_GRADES(TckLifecycle, Spec3_CompleteDeletes, "G2", "G6");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_AbandonWithoutDelayMakesActive, "G2");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_AbandonAtMaxDeliveryCountDeadLetters, "G2", "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_AbandonWithDelaySchedulesAtNowPlusDelay, "G2", "G3");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_AbandonWithDelayAtMaxDeliveryCountDeadLetters, "G2", "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_RejectDeadLettersWithReasonAndDescription, "G2", "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_DeferThenReceiveDeferredLocksAgain, "G2", "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_ReceiveDeferredTakesSeveralSeqs, "G2", "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_RenewExtendsTheLease, "G2", "G6");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_RenewNeverShortensTheLease, "G2");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_RenewAfterExpiryIsLockLostAndDoesNotRevive, "G2", "G6");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_LeaseExpiryByMaintenanceMakesActive, "G4", "G6");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_LeaseExpiryByMaintenanceAtMaxDeadLetters, "G4", "G6");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_LeaseExpiryThenReceiveRedeliversWithoutMaintenance, "G2",
                  "G6");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_LeaseExpiryThenReceiveAtMaxDeadLettersWithoutMaintenance,
                  "G2", "G4", "G6");
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

// ---- settle fencing (SPEC §6) -------------------------------------------------------

MQLITE_TCK_GRADES(TckLifecycle, Spec6_WrongTokenIsLockLostForEverySettleAndChangesNothing, "G2");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_SettleOnUnlockedMessageIsLockLost, "G2");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_TokenAtExactlyLockedUntilIsLockLostWithoutMaintenance, "G2");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_OldTokenAfterRedeliveryIsLockLost, "G2");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec7_2_IdenticalRetryOfASuccessfulSettleReplays, "G2", "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_CompleteBatchReportsPerItemAndAStaleItemFailsAlone, "G2");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_CompleteBatchWithAStaleTokenAfterRedelivery, "G2");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_Spec7_2_CompleteBatchSettlesItsItemsInOrderAcrossGroupsAndRepeats,
                  "G2", "G4");
TEST_P(TckLifecycle, Spec6_Spec7_2_CompleteBatchSettlesItsItemsInOrderAcrossGroupsAndRepeats) {
  // SPEC §6: a batch is its items settled one after another in one commit,
  // however a store groups the work: an item repeating an earlier one finds
  // it settled and replays its receipt (§7.2), the same seq under a wrong
  // token fails alone before and after, and a group head completed amid
  // ungrouped items hands headship to the next member (§5).
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g1, SendMsg(engine(), "jobs", "g1", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t u1, SendMsg(engine(), "jobs", "u1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g2, SendMsg(engine(), "jobs", "g2", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t u2, SendMsg(engine(), "jobs", "u2"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 10));
  ASSERT_EQ(Seqs(got), (std::vector<int64_t>{g1, u1, u2}));  // g2 waits behind g1
  const LockToken& tg1 = got[0].lock_token;
  const LockToken& tu1 = got[1].lock_token;
  const LockToken& tu2 = got[2].lock_token;
  const SettleItem items[] = {
      {u1, Tampered(tu1)},  // wrong token while u1 is locked
      {u1, tu1},
      {g1, tg1},
      {u1, tu1},            // identical repeat: replays
      {u1, Tampered(tu1)},  // wrong token once u1 is gone
      {u2, tu2},
      {g1, tg1},            // repeat of the grouped item
  };
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> results, engine().CompleteBatch("jobs", items));
  ASSERT_EQ(results.size(), 7u);
  MQ_EXPECT_CODE(results[0], kLockLost);
  MQ_EXPECT_OK(results[1]);
  MQ_EXPECT_OK(results[2]);
  MQ_EXPECT_OK(results[3]);
  MQ_EXPECT_CODE(results[4], kLockLost);
  MQ_EXPECT_OK(results[5]);
  MQ_EXPECT_OK(results[6]);
  EXPECT_EQ(Total(engine(), "jobs"), 1);
  MQ_ASSERT_OK_AND_ASSIGN(Message next, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(next.seq, g2);
  EXPECT_EQ(next.body, "g2");
  // Each settled item replays alone too; the failed ones left no receipt.
  MQ_EXPECT_OK(engine().Complete("jobs", u1, tu1));
  MQ_EXPECT_OK(engine().Complete("jobs", g1, tg1));
  MQ_EXPECT_CODE(engine().Complete("jobs", u1, Tampered(tu1)), kLockLost);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_Spec7_2_ALargeCompleteBatchWithOneStaleItemSettlesTheRest,
                  "G2", "G4");
TEST_P(TckLifecycle, Spec6_Spec7_2_ALargeCompleteBatchWithOneStaleItemSettlesTheRest) {
  // SPEC §6: a batch of 45 — ungrouped messages with a group's head among
  // them, one stale token late in the batch — settles every other item
  // however a store divides the batch into statements; replaying the whole
  // batch answers the settled items from their receipts (§7.2) and the stale
  // one still fails, and the stale message is still locked under its token.
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  std::vector<int64_t> sent;
  for (int i = 0; i < 45; ++i) {
    if (i == 5) {
      MQ_ASSERT_OK_AND_ASSIGN(int64_t g, SendMsg(engine(), "jobs", "g", "G"));
      sent.push_back(g);
      continue;
    }
    MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendMsg(engine(), "jobs", "m" + std::to_string(i)));
    sent.push_back(seq);
  }
  MQ_ASSERT_OK_AND_ASSIGN(int64_t g2, SendMsg(engine(), "jobs", "g2", "G"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 100));
  ASSERT_EQ(Seqs(got), sent) << "g2 waits behind its group's head";
  constexpr size_t kStale = 40;
  std::vector<SettleItem> items;
  for (size_t i = 0; i < got.size(); ++i) {
    items.push_back({got[i].seq, i == kStale ? Tampered(got[i].lock_token) : got[i].lock_token});
  }
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "the batch" : "its replay");
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> results, engine().CompleteBatch("jobs", items));
    ASSERT_EQ(results.size(), items.size());
    for (size_t i = 0; i < results.size(); ++i) {
      if (i == kStale) {
        MQ_EXPECT_CODE(results[i], kLockLost);
      } else {
        EXPECT_TRUE(results[i].ok()) << "item " << i << ": " << results[i].ToString();
      }
    }
    EXPECT_EQ(Total(engine(), "jobs"), 2) << "the stale item's message and g2";
  }
  MQ_ASSERT_OK_AND_ASSIGN(Message stale, Find(engine(), "jobs", got[kStale].seq));
  EXPECT_EQ(stale.state, MessageState::kLocked);
  MQ_ASSERT_OK_AND_ASSIGN(Message next, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(next.seq, g2) << "the head's Complete handed headship on";
  MQ_EXPECT_OK(engine().Complete("jobs", got[kStale].seq, got[kStale].lock_token));
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_RenewBatchPerItemAndNeverRevivesAnExpiredLease, "G2", "G6");
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

}  // namespace
}  // namespace mqlite::tck
