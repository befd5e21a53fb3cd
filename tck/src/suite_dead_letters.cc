// TckLifecycle (continued) — how messages leave the live states without a
// consumer and what happens to dead letters: TTL expiry in every state (SPEC §3
// row 15, §2 default_ttl), Redrive and Purge (rows 16–17, §6), and dead-letter
// retention by count, age and bytes (§6, §2).
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorDeadLetters() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

// ---- TTL (SPEC §3 row 15) --------------------------------------------------------

MQLITE_TCK_GRADES(TckLifecycle, Spec3_TtlExpiresActiveToDeadLetterQueue, "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec5_ExpiredMessageIsNotClaimedEvenBeforeMaintenance, "G2", "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_TtlExpiredIsDeletedWhenDeadLetterOnExpireIsOff, "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_TtlExpiresScheduledMessage, "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_TtlExpiresDeferredMessage, "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_LockedMessageDoesNotExpireWhileLeaseLives, "G2", "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_LockedMessageExpiresOnceItsLeaseEndsUnsettled, "G4", "G6");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_TtlIsAnchoredAtVisibleAtForScheduledMessages, "G3", "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec2_DefaultTtlAppliesAndCapsLongerTtls, "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_NoTtlNeverExpires, "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_RedriveToSameQueueMakesActiveWithDeliveryCountZero, "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_RedriveToAnotherQueue, "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_RedriveHonoursMaxAndOlderThanOldestFirst, "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_PurgeDeletesOnlyDeadLetters, "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_PurgeHonoursMaxAndOlderThan, "G4");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_RetentionByCountDropsOldestDeadLettersFirstOnly, "G4", "G7");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_RetentionByAge, "G4", "G7");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec6_RetentionByBytes, "G4", "G7");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec2_RetentionInheritsEngineDefaultUnlessUnbounded, "G7");
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

}  // namespace
}  // namespace mqlite::tck
