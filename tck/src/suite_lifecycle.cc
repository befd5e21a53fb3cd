// TckLifecycle — sending: every message enters as active or scheduled
// (SPEC §3 rows 1–2, §4), scheduled messages become claimable exactly when due
// (row 3), Cancel of a never-delivered scheduled message (row 4, §4), every
// field round-trips byte-exact, and seqs strictly increase and are never
// reused (§3). Driven by the fixture's ManualClock (no sleeps). The rest of
// TckLifecycle is split by area: suite_receive.cc, suite_settle.cc,
// suite_dead_letters.cc, suite_stats.cc, suite_queues.cc, suite_open.cc,
// suite_operations.cc and suite_space.cc. Test names cite the § they pin.
#include <cstdint>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorLifecycle() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

// ---- send → active / scheduled (SPEC §3 rows 1–2, §4) ------------------------

MQLITE_TCK_GRADES(TckLifecycle, Spec3_SendDueNowIsActive, "G1");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_SendWithScheduleAtNotInTheFutureIsActive, "G1", "G3");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_SendWithDelayIsScheduled, "G1", "G3");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_SendWithScheduleAtIsScheduled, "G1", "G3");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_ScheduledBecomesActiveByMaintenanceExactlyWhenDue, "G3");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_ScheduledDueIsClaimedByReceiveWithoutMaintenance, "G2", "G3");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec4_CancelDeletesScheduledNeverDelivered, "G3");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec4_CancelOfAnythingButNeverDeliveredScheduledIsNotFound, "G3");
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

// ---- fields and seqs (SPEC §3) ------------------------------------------------------------

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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_AllFieldsRoundTripByteExact, "G1");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_SeqStrictlyIncreasesAcrossQueuesAndBatches, "G1");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec3_SeqNeverReusedAfterDeletingTheNewestAndReopening, "G1", "G6");
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

}  // namespace
}  // namespace mqlite::tck
