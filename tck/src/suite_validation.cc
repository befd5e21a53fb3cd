// TckValidation — bad input (SPEC §2, §4, §5, §6, §10): every bad argument
// gets its exact StatusCode, a message naming what was wrong, and writes
// nothing. Each test starts from a queue "jobs" holding a message in every
// live state, so "nothing written" is a meaningful check.
#include <cstdint>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorValidation() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

// What Seed() left in "jobs".
struct Seeded {
  Message locked;
  int64_t deferred_seq = 0;
  int64_t scheduled_seq = 0;
  int64_t active_seq = 0;
  QueueStats before;
};

// Creates "jobs" with one message locked, one deferred, one scheduled and one
// active.
void Seed(Engine& e, Seeded* st) {
  MQ_ASSERT_OK(CreateQueue(e, "jobs"));
  MQ_ASSERT_OK(SendBody(e, "jobs", "active"));
  MQ_ASSERT_OK_AND_ASSIGN(st->locked, ReceiveOne(e, "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(st->deferred_seq, SendBody(e, "jobs", "deferred"));
  MQ_ASSERT_OK_AND_ASSIGN(Message d, ReceiveOne(e, "jobs"));
  MQ_ASSERT_OK(e.Defer("jobs", d.seq, d.lock_token));
  MQ_ASSERT_OK_AND_ASSIGN(st->scheduled_seq,
                          e.Send("jobs", {.body = "scheduled", .delay_ms = 60'000}));
  MQ_ASSERT_OK_AND_ASSIGN(st->active_seq, SendBody(e, "jobs", "still active"));
  MQ_ASSERT_OK_AND_ASSIGN(st->before, StatsOf(e, "jobs"));
  ASSERT_EQ(st->before.locked, 1);
  ASSERT_EQ(st->before.deferred, 1);
  ASSERT_EQ(st->before.scheduled, 1);
  ASSERT_EQ(st->before.active, 1);
}

// Stats of "jobs" and the set of queues are exactly as Seed() left them.
void ExpectNothingWritten(Engine& e, const Seeded& st) {
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats now, StatsOf(e, "jobs"));
  EXPECT_TRUE(StatsEq(st.before, now));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<QueueConfig> qs, e.ListQueues());
  ASSERT_EQ(qs.size(), 1u);
  EXPECT_EQ(qs[0].name, "jobs");
}

LockToken SomeToken() {
  LockToken t;
  t.bytes[0] = 0xab;
  t.bytes[15] = 0x01;
  return t;
}

// ---- queue names (SPEC §2) -------------------------------------------------------

MQLITE_TCK_GRADES(TckValidation, Spec2_BadQueueNamesAreInvalidArgument, "G5");
TEST_P(TckValidation, Spec2_BadQueueNamesAreInvalidArgument) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  const std::vector<std::string> bad = {
      "",
      std::string(129, 'a'),
      "has space",
      "\xC3\xA4",  // ä
      "caf\xC3\xA9",
      "star*",
      std::string("nul\0byte", 8),
      "tab\t",
      "semi;colon",
      "quote'",
      "back\\slash",
      "percent%",
      "at@",
      "plus+",
      "comma,",
  };
  for (const std::string& name : bad) {
    SCOPED_TRACE("name '" + name + "' (" + std::to_string(name.size()) + " bytes)");
    MQ_EXPECT_CODE(engine().CreateQueue({.name = name}), kInvalidArgument);
    MQ_EXPECT_CODE(engine().GetQueue(name), kInvalidArgument);
    MQ_EXPECT_CODE(engine().Send(name, {.body = "x"}), kInvalidArgument);
  }
  ExpectNothingWritten(engine(), seeded);
}

MQLITE_TCK_GRADES(TckValidation, Spec2_EdgeQueueNamesAreValid, "G3");
TEST_P(TckValidation, Spec2_EdgeQueueNamesAreValid) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  const std::vector<std::string> good = {
      "a", std::string(128, 'z'), "._:/-", "A-Z.a_z:0/9", "-",
      "/", "orders/eu-west.1:v2", "UPPER", "0123456789",
  };
  for (const std::string& name : good) {
    SCOPED_TRACE("name '" + name + "'");
    MQ_ASSERT_OK_AND_ASSIGN(QueueConfig c, engine().CreateQueue({.name = name}));
    EXPECT_EQ(c.name, name);
    MQ_ASSERT_OK_AND_ASSIGN(QueueConfig got, engine().GetQueue(name));
    EXPECT_EQ(got.name, name);
    MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send(name, {.body = "x"}));
    MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), name, seq));
    EXPECT_EQ(m.queue, name);
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<QueueConfig> qs, engine().ListQueues());
  EXPECT_EQ(qs.size(), good.size() + 1);
}

// ---- queue config ranges (SPEC §2) -------------------------------------------------

MQLITE_TCK_GRADES(TckValidation, Spec2_LockDurationOutsideOneSecondToTwelveHours, "G5");
TEST_P(TckValidation, Spec2_LockDurationOutsideOneSecondToTwelveHours) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{999}, int64_t{12LL * 3600 * 1000 + 1}}) {
    SCOPED_TRACE(v);
    MQ_EXPECT_CODE(engine().CreateQueue({.name = "q", .lock_duration_ms = v}), kInvalidArgument);
  }
  MQ_EXPECT_CODE(engine().GetQueue("q"), kQueueNotFound);
  ExpectNothingWritten(engine(), seeded);
  MQ_EXPECT_OK(engine().CreateQueue({.name = "min", .lock_duration_ms = 1'000}));
  MQ_EXPECT_OK(engine().CreateQueue({.name = "max", .lock_duration_ms = 12LL * 3600 * 1000}));
}

MQLITE_TCK_GRADES(TckValidation, Spec2_MaxDeliveryCountOutsideOneToThousand, "G5");
TEST_P(TckValidation, Spec2_MaxDeliveryCountOutsideOneToThousand) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  for (int32_t v : {0, -1, 1001}) {
    SCOPED_TRACE(v);
    MQ_EXPECT_CODE(engine().CreateQueue({.name = "q", .max_delivery_count = v}), kInvalidArgument);
  }
  MQ_EXPECT_CODE(engine().GetQueue("q"), kQueueNotFound);
  ExpectNothingWritten(engine(), seeded);
  MQ_EXPECT_OK(engine().CreateQueue({.name = "min", .max_delivery_count = 1}));
  MQ_EXPECT_OK(engine().CreateQueue({.name = "max", .max_delivery_count = 1000}));
}

MQLITE_TCK_GRADES(TckValidation, Spec2_NegativeDurationsAndSizesInConfig, "G5");
TEST_P(TckValidation, Spec2_NegativeDurationsAndSizesInConfig) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  MQ_EXPECT_CODE(engine().CreateQueue({.name = "q", .default_ttl_ms = -1}), kInvalidArgument);
  MQ_EXPECT_CODE(engine().CreateQueue({.name = "q", .dedup_window_ms = -1}), kInvalidArgument);
  QueueConfig big{.name = "q"};
  big.max_message_bytes = -1;
  MQ_EXPECT_CODE(engine().CreateQueue(big), kInvalidArgument);
  QueueConfig ord{.name = "q"};
  ord.ordering = static_cast<Ordering>(7);
  MQ_EXPECT_CODE(engine().CreateQueue(ord), kInvalidArgument);
  MQ_EXPECT_CODE(engine().GetQueue("q"), kQueueNotFound);
  ExpectNothingWritten(engine(), seeded);
}

MQLITE_TCK_GRADES(TckValidation, Spec2_BadUpsertLeavesTheExistingConfig, "G5");
TEST_P(TckValidation, Spec2_BadUpsertLeavesTheExistingConfig) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig before, engine().GetQueue("jobs"));
  MQ_EXPECT_CODE(engine().CreateQueue({.name = "jobs", .lock_duration_ms = 500}), kInvalidArgument);
  MQ_EXPECT_CODE(engine().CreateQueue({.name = "jobs", .max_delivery_count = 0}), kInvalidArgument);
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig after, engine().GetQueue("jobs"));
  EXPECT_EQ(before, after);
  ExpectNothingWritten(engine(), seeded);
}

// ---- unknown queue (SPEC §2, §10) ----------------------------------------------------

MQLITE_TCK_GRADES(TckValidation, Spec2_UnknownQueueIsQueueNotFoundForEveryMethod, "G2", "G3");
TEST_P(TckValidation, Spec2_UnknownQueueIsQueueNotFoundForEveryMethod) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  const std::string q = "no-such-queue";
  const LockToken t = SomeToken();
  const int64_t seqs[] = {seeded.deferred_seq};
  const SettleItem items[] = {{seeded.locked.seq, seeded.locked.lock_token}};
  const OutgoingMessage batch[] = {{.body = "a"}, {.body = "b"}};

  MQ_EXPECT_CODE(engine().GetQueue(q), kQueueNotFound);
  MQ_EXPECT_CODE(engine().DeleteQueue(q), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Send(q, {.body = "x"}), kQueueNotFound);
  MQ_EXPECT_CODE(engine().SendBatch(q, batch), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Cancel(q, seeded.scheduled_seq), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Receive(q), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Receive(q, {.max_messages = 5, .mode = ReceiveMode::kReceiveAndDelete}),
                 kQueueNotFound);
  // A long-poll on a missing queue fails at once instead of waiting.
  MQ_EXPECT_CODE(engine().Receive(q, {.max_messages = 1, .wait_ms = 20'000}), kQueueNotFound);
  MQ_EXPECT_CODE(engine().ReceiveDeferred(q, seqs), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Complete(q, seeded.locked.seq, seeded.locked.lock_token), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Abandon(q, seeded.locked.seq, seeded.locked.lock_token), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Reject(q, seeded.locked.seq, seeded.locked.lock_token, "r", "d"),
                 kQueueNotFound);
  MQ_EXPECT_CODE(engine().Defer(q, seeded.locked.seq, seeded.locked.lock_token), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Renew(q, seeded.locked.seq, t), kQueueNotFound);
  MQ_EXPECT_CODE(engine().CompleteBatch(q, items), kQueueNotFound);
  MQ_EXPECT_CODE(engine().RenewBatch(q, items), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Peek(q), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Stats(q), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Redrive(q), kQueueNotFound);
  MQ_EXPECT_CODE(engine().Purge(q), kQueueNotFound);
  ExpectNothingWritten(engine(), seeded);
  // The real lock was not touched by the attempts above.
  MQ_EXPECT_OK(engine().Complete("jobs", seeded.locked.seq, seeded.locked.lock_token));
}

MQLITE_TCK_GRADES(TckValidation, Spec6_RedriveToAnUnknownTargetIsQueueNotFoundAndMovesNothing, "G4",
                  "G5");
TEST_P(TckValidation, Spec6_RedriveToAnUnknownTargetIsQueueNotFoundAndMovesNothing) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "jobs"));
  MQ_ASSERT_OK(engine().Reject("jobs", m.seq, m.lock_token, "r"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats before, StatsOf(engine(), "jobs"));
  ASSERT_EQ(before.dead_lettered, 1);
  Result<int64_t> r = engine().Redrive("jobs", {.target_queue = "missing-target"});
  MQ_EXPECT_CODE(r, kQueueNotFound);
  EXPECT_TRUE(MessageHas(r.status(), "missing-target"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats after, StatsOf(engine(), "jobs"));
  EXPECT_TRUE(StatsEq(before, after));
}

MQLITE_TCK_GRADES(TckValidation, Spec10_ErrorMessagesNameTheQueue, "G2");
TEST_P(TckValidation, Spec10_ErrorMessagesNameTheQueue) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  Result<int64_t> unknown = engine().Send("no-such-queue", {.body = "x"});
  MQ_ASSERT_CODE(unknown, kQueueNotFound);
  EXPECT_TRUE(MessageHas(unknown.status(), "no-such-queue"));

  Result<std::vector<Message>> bad_receive = engine().Receive("jobs", {.max_messages = 0});
  MQ_ASSERT_CODE(bad_receive, kInvalidArgument);
  EXPECT_TRUE(MessageHas(bad_receive.status(), "jobs"));

  MQ_ASSERT_OK(CreateQueue(engine(), "tiny-q", {.max_message_bytes = 4}));
  Result<int64_t> too_big = engine().Send("tiny-q", {.body = "12345"});
  MQ_ASSERT_CODE(too_big, kMessageTooLarge);
  EXPECT_TRUE(MessageHas(too_big.status(), "tiny-q"));

  Status lost = engine().Complete("jobs", seeded.locked.seq, SomeToken());
  MQ_ASSERT_CODE(lost, kLockLost);
  EXPECT_TRUE(MessageHas(lost, "jobs"));
  EXPECT_TRUE(MessageHas(lost, std::to_string(seeded.locked.seq)));

  Status not_found = engine().Cancel("jobs", seeded.active_seq);
  MQ_ASSERT_CODE(not_found, kNotFound);
  EXPECT_TRUE(MessageHas(not_found, std::to_string(seeded.active_seq)));
}

// ---- Send (SPEC §4) ----------------------------------------------------------------------

MQLITE_TCK_GRADES(TckValidation, Spec2_BodyOverQueueMaxMessageBytesIsMessageTooLarge, "G1");
TEST_P(TckValidation, Spec2_BodyOverQueueMaxMessageBytesIsMessageTooLarge) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  MQ_ASSERT_OK(CreateQueue(engine(), "small", {.max_message_bytes = 10}));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats before, StatsOf(engine(), "small"));
  MQ_EXPECT_CODE(engine().Send("small", {.body = std::string(11, 'x')}), kMessageTooLarge);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats after, StatsOf(engine(), "small"));
  EXPECT_TRUE(StatsEq(before, after));
  MQ_EXPECT_OK(engine().Send("small", {.body = std::string(10, 'x')}));
}

MQLITE_TCK_GRADES(TckValidation, Spec2_BodyOverEngineDefaultIsMessageTooLarge, "G1");
TEST_P(TckValidation, Spec2_BodyOverEngineDefaultIsMessageTooLarge) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  engine_options().max_message_bytes = 100;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK(CreateQueue(engine(), "inherits"));  // max_message_bytes 0 = the engine default
  MQ_EXPECT_CODE(engine().Send("inherits", {.body = std::string(101, 'x')}), kMessageTooLarge);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "inherits"));
  EXPECT_EQ(st.total, 0);
  MQ_EXPECT_OK(engine().Send("inherits", {.body = std::string(100, 'x')}));
}

MQLITE_TCK_GRADES(TckValidation, Spec2_DefaultLimitIsOneMiB, "G1");
TEST_P(TckValidation, Spec2_DefaultLimitIsOneMiB) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  MQ_EXPECT_CODE(engine().Send("jobs", {.body = std::string((1 << 20) + 1, 'x')}),
                 kMessageTooLarge);
  ExpectNothingWritten(engine(), seeded);
  std::string body((1 << 20), '\0');
  for (size_t i = 0; i < body.size(); i += 997) body[i] = static_cast<char>(i % 251);
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", {.body = body}));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "jobs", seq));
  EXPECT_EQ(m.body.size(), body.size());
  EXPECT_TRUE(m.body == body);
}

MQLITE_TCK_GRADES(TckValidation, Spec4_FieldLengths, "G1");
TEST_P(TckValidation, Spec4_FieldLengths) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  const std::string id129(129, 'i');
  const std::string text1025(1025, 't');
  struct Case {
    const char* what;
    OutgoingMessage m;
  };
  std::vector<Case> bad = {
      {"message_id 129 B", {.body = "x", .message_id = id129}},
      {"group_id 129 B", {.body = "x", .group_id = id129}},
      {"correlation_id 129 B", {.body = "x", .correlation_id = id129}},
      {"subject 1025 B", {.body = "x", .subject = text1025}},
      {"content_type 1025 B", {.body = "x", .content_type = text1025}},
      {"empty property key", {.body = "x", .properties = {{"", "v"}}}},
      {"property key 129 B", {.body = "x", .properties = {{id129, "v"}}}},
      {"property value 4097 B", {.body = "x", .properties = {{"k", std::string(4097, 'v')}}}},
  };
  OutgoingMessage many{.body = "x"};
  for (int i = 0; i < 65; ++i) many.properties["k" + std::to_string(i)] = "v";
  bad.push_back({"65 properties", many});
  for (const Case& c : bad) {
    SCOPED_TRACE(c.what);
    MQ_EXPECT_CODE(engine().Send("jobs", c.m), kInvalidArgument);
  }
  ExpectNothingWritten(engine(), seeded);

  const std::string id128(128, 'i');
  const std::string text1024(1024, 't');
  OutgoingMessage edge{.body = "x",
                       .message_id = id128,
                       .group_id = id128,
                       .subject = text1024,
                       .correlation_id = id128,
                       .content_type = text1024};
  for (int i = 0; i < 63; ++i) edge.properties["k" + std::to_string(i)] = "v";
  edge.properties[std::string(128, 'k')] = std::string(4096, 'v');
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine().Send("jobs", edge));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "jobs", seq));
  EXPECT_EQ(m.message_id, edge.message_id);
  EXPECT_EQ(m.properties, edge.properties);
}

MQLITE_TCK_GRADES(TckValidation, Spec4_PriorityOutsideZeroToNine, "G1");
TEST_P(TckValidation, Spec4_PriorityOutsideZeroToNine) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  MQ_EXPECT_CODE(engine().Send("jobs", {.body = "x", .priority = -1}), kInvalidArgument);
  MQ_EXPECT_CODE(engine().Send("jobs", {.body = "x", .priority = 10}), kInvalidArgument);
  ExpectNothingWritten(engine(), seeded);
  MQ_EXPECT_OK(engine().Send("jobs", {.body = "x", .priority = 0}));
  MQ_EXPECT_OK(engine().Send("jobs", {.body = "x", .priority = 9}));
}

MQLITE_TCK_GRADES(TckValidation, Spec4_NegativeDelayTtlOrScheduleIsInvalidArgument, "G1");
TEST_P(TckValidation, Spec4_NegativeDelayTtlOrScheduleIsInvalidArgument) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  MQ_EXPECT_CODE(engine().Send("jobs", {.body = "x", .delay_ms = -1}), kInvalidArgument);
  MQ_EXPECT_CODE(engine().Send("jobs", {.body = "x", .ttl_ms = -1}), kInvalidArgument);
  MQ_EXPECT_CODE(engine().Send("jobs", {.body = "x", .schedule_at_ms = -1}), kInvalidArgument);
  MQ_EXPECT_CODE(engine().Send("jobs", {.body = "x", .delay_ms = -kT0}), kInvalidArgument);
  ExpectNothingWritten(engine(), seeded);
}

MQLITE_TCK_GRADES(TckValidation, Spec4_GroupFifoWithoutGroupIdIsGroupRequired, "G1");
TEST_P(TckValidation, Spec4_GroupFifoWithoutGroupIdIsGroupRequired) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  MQ_ASSERT_OK(CreateQueue(engine(), "fifo", {.ordering = Ordering::kGroupFifo}));
  MQ_EXPECT_CODE(engine().Send("fifo", {.body = "x"}), kGroupRequired);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "fifo"));
  EXPECT_EQ(st.total, 0);
  MQ_EXPECT_OK(engine().Send("fifo", {.body = "x", .group_id = "g"}));
  // Standard and strict_fifo queues do not require it.
  MQ_ASSERT_OK(CreateQueue(engine(), "strict", {.ordering = Ordering::kStrictFifo}));
  MQ_EXPECT_OK(engine().Send("strict", {.body = "x"}));
  MQ_EXPECT_OK(engine().Send("jobs", {.body = "x"}));
}

MQLITE_TCK_GRADES(TckValidation, Spec4_ABatchWithOneInvalidMessageWritesNothing, "G1", "G5");
TEST_P(TckValidation, Spec4_ABatchWithOneInvalidMessageWritesNothing) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  const OutgoingMessage too_large[] = {
      {.body = "ok-1"}, {.body = "ok-2"}, {.body = std::string((1 << 20) + 1, 'x')}};
  MQ_EXPECT_CODE(engine().SendBatch("jobs", too_large), kMessageTooLarge);
  const OutgoingMessage bad_priority[] = {{.body = "ok"}, {.body = "bad", .priority = 10}};
  MQ_EXPECT_CODE(engine().SendBatch("jobs", bad_priority), kInvalidArgument);
  const OutgoingMessage bad_id[] = {{.body = "ok"},
                                    {.body = "ok"},
                                    {.body = "bad", .message_id = std::string(129, 'm')},
                                    {.body = "ok"}};
  MQ_EXPECT_CODE(engine().SendBatch("jobs", bad_id), kInvalidArgument);
  const OutgoingMessage bad_delay[] = {{.body = "bad", .delay_ms = -5}, {.body = "ok"}};
  MQ_EXPECT_CODE(engine().SendBatch("jobs", bad_delay), kInvalidArgument);
  ExpectNothingWritten(engine(), seeded);

  MQ_ASSERT_OK(CreateQueue(engine(), "fifo", {.ordering = Ordering::kGroupFifo}));
  const OutgoingMessage missing_group[] = {{.body = "a", .group_id = "g"}, {.body = "b"}};
  MQ_EXPECT_CODE(engine().SendBatch("fifo", missing_group), kGroupRequired);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "fifo"));
  EXPECT_EQ(st.total, 0);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, PeekAllOf(engine(), "fifo"));
  EXPECT_TRUE(none.empty());
}

MQLITE_TCK_GRADES(TckValidation, Spec4_BatchLargerThanMaxSendBatchIsInvalidArgument, "G1");
TEST_P(TckValidation, Spec4_BatchLargerThanMaxSendBatchIsInvalidArgument) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  std::vector<OutgoingMessage> batch(1'001, OutgoingMessage{.body = "x"});
  MQ_EXPECT_CODE(engine().SendBatch("jobs", batch), kInvalidArgument);
  ExpectNothingWritten(engine(), seeded);
  batch.resize(1'000);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> seqs, SendBatchSeqs(engine(), "jobs", batch));
  EXPECT_EQ(seqs.size(), 1'000u);
}

// ---- Receive (SPEC §5) ---------------------------------------------------------------------

MQLITE_TCK_GRADES(TckValidation, Spec5_ReceiveMaxMessagesOutsideOneTo256, "G2");
TEST_P(TckValidation, Spec5_ReceiveMaxMessagesOutsideOneTo256) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  for (int v : {0, -1, 257, 1'000}) {
    SCOPED_TRACE(v);
    MQ_EXPECT_CODE(engine().Receive("jobs", {.max_messages = v}), kInvalidArgument);
    MQ_EXPECT_CODE(
        engine().Receive("jobs", {.max_messages = v, .mode = ReceiveMode::kReceiveAndDelete}),
        kInvalidArgument);
  }
  ExpectNothingWritten(engine(), seeded);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got,
                          engine().Receive("jobs", {.max_messages = 256}));
  EXPECT_EQ(got.size(), 1u);
}

MQLITE_TCK_GRADES(TckValidation, Spec5_ReceiveWaitOutsideZeroTo20Seconds, "G2");
TEST_P(TckValidation, Spec5_ReceiveWaitOutsideZeroTo20Seconds) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  MQ_EXPECT_CODE(engine().Receive("jobs", {.max_messages = 1, .wait_ms = 20'001}),
                 kInvalidArgument);
  MQ_EXPECT_CODE(engine().Receive("jobs", {.max_messages = 1, .wait_ms = -1}), kInvalidArgument);
  ExpectNothingWritten(engine(), seeded);
  // 20 s is allowed; a message is available so it returns at once.
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got,
                          engine().Receive("jobs", {.max_messages = 1, .wait_ms = 20'000}));
  EXPECT_EQ(got.size(), 1u);
}

MQLITE_TCK_GRADES(TckValidation, Spec5_UnknownReceiveModeIsInvalidArgument, "G2");
TEST_P(TckValidation, Spec5_UnknownReceiveModeIsInvalidArgument) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  ReceiveOptions o;
  o.mode = static_cast<ReceiveMode>(9);
  MQ_EXPECT_CODE(engine().Receive("jobs", o), kInvalidArgument);
  ExpectNothingWritten(engine(), seeded);
}

// ---- settle (SPEC §6) ---------------------------------------------------------------------

MQLITE_TCK_GRADES(TckValidation, Spec6_BatchesOver512ItemsAreInvalidArgument, "G2");
TEST_P(TckValidation, Spec6_BatchesOver512ItemsAreInvalidArgument) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  std::vector<SettleItem> items(513, SettleItem{seeded.locked.seq, seeded.locked.lock_token});
  MQ_EXPECT_CODE(engine().CompleteBatch("jobs", items), kInvalidArgument);
  MQ_EXPECT_CODE(engine().RenewBatch("jobs", items), kInvalidArgument);
  ExpectNothingWritten(engine(), seeded);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "jobs", seeded.locked.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  EXPECT_EQ(still.locked_until, seeded.locked.locked_until);

  // 512 is allowed: each item gets its own result.
  std::vector<SettleItem> ok(512);
  for (size_t i = 0; i < ok.size(); ++i) ok[i] = {static_cast<int64_t>(1'000'000 + i), SomeToken()};
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> results, engine().CompleteBatch("jobs", ok));
  ASSERT_EQ(results.size(), 512u);
  for (const Status& s : results) MQ_EXPECT_CODE(s, kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<RenewOutcome> renewed, engine().RenewBatch("jobs", ok));
  ASSERT_EQ(renewed.size(), 512u);
  for (const RenewOutcome& r : renewed) MQ_EXPECT_CODE(r.status, kLockLost);
  ExpectNothingWritten(engine(), seeded);
}

MQLITE_TCK_GRADES(TckValidation, Spec6_EmptyTokenIsInvalidArgument, "G2");
TEST_P(TckValidation, Spec6_EmptyTokenIsInvalidArgument) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  const LockToken empty;
  MQ_EXPECT_CODE(engine().Complete("jobs", seeded.locked.seq, empty), kInvalidArgument);
  MQ_EXPECT_CODE(engine().Abandon("jobs", seeded.locked.seq, empty), kInvalidArgument);
  MQ_EXPECT_CODE(engine().Reject("jobs", seeded.locked.seq, empty, "r"), kInvalidArgument);
  MQ_EXPECT_CODE(engine().Defer("jobs", seeded.locked.seq, empty), kInvalidArgument);
  MQ_EXPECT_CODE(engine().Renew("jobs", seeded.locked.seq, empty), kInvalidArgument);
  ExpectNothingWritten(engine(), seeded);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "jobs", seeded.locked.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
}

MQLITE_TCK_GRADES(TckValidation, Spec6_NegativeAbandonDelayIsInvalidArgument, "G2");
TEST_P(TckValidation, Spec6_NegativeAbandonDelayIsInvalidArgument) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  MQ_EXPECT_CODE(engine().Abandon("jobs", seeded.locked.seq, seeded.locked.lock_token, -1),
                 kInvalidArgument);
  ExpectNothingWritten(engine(), seeded);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "jobs", seeded.locked.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  // The lease is untouched and the token still good.
  MQ_EXPECT_OK(engine().Abandon("jobs", seeded.locked.seq, seeded.locked.lock_token, 0));
}

MQLITE_TCK_GRADES(TckValidation, Spec4_CancelOfNonScheduledOrUnknownSeqIsNotFound, "G3");
TEST_P(TckValidation, Spec4_CancelOfNonScheduledOrUnknownSeqIsNotFound) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  MQ_EXPECT_CODE(engine().Cancel("jobs", seeded.active_seq), kNotFound);
  MQ_EXPECT_CODE(engine().Cancel("jobs", seeded.locked.seq), kNotFound);
  MQ_EXPECT_CODE(engine().Cancel("jobs", seeded.deferred_seq), kNotFound);
  MQ_EXPECT_CODE(engine().Cancel("jobs", seeded.scheduled_seq + 1'000'000), kNotFound);
  ExpectNothingWritten(engine(), seeded);
}

MQLITE_TCK_GRADES(TckValidation, Spec6_ReceiveDeferredOfNonDeferredSeqIsNotFound, "G2", "G4");
TEST_P(TckValidation, Spec6_ReceiveDeferredOfNonDeferredSeqIsNotFound) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  for (int64_t seq : {seeded.active_seq, seeded.locked.seq, seeded.scheduled_seq,
                      seeded.active_seq + 1'000'000}) {
    SCOPED_TRACE(seq);
    const int64_t seqs[] = {seq};
    MQ_EXPECT_CODE(engine().ReceiveDeferred("jobs", seqs), kNotFound);
  }
  // All or nothing: a good seq next to a bad one is not locked either.
  const int64_t mixed[] = {seeded.deferred_seq, seeded.active_seq};
  Result<std::vector<Message>> r = engine().ReceiveDeferred("jobs", mixed);
  MQ_EXPECT_CODE(r, kNotFound);
  EXPECT_TRUE(MessageHas(r.status(), std::to_string(seeded.active_seq)));
  ExpectNothingWritten(engine(), seeded);
  MQ_ASSERT_OK_AND_ASSIGN(Message d, Find(engine(), "jobs", seeded.deferred_seq));
  EXPECT_EQ(d.state, MessageState::kDeferred);
  EXPECT_EQ(d.delivery_count, 1);
}

// ---- Peek (SPEC §6) -----------------------------------------------------------------------

MQLITE_TCK_GRADES(TckValidation, Spec6_PeekMaxMessagesOutsideOneToThousand, "G3");
TEST_P(TckValidation, Spec6_PeekMaxMessagesOutsideOneToThousand) {
  Seeded seeded;
  ASSERT_NO_FATAL_FAILURE(Seed(engine(), &seeded));
  MQ_EXPECT_CODE(engine().Peek("jobs", {.max_messages = 0}), kInvalidArgument);
  MQ_EXPECT_CODE(engine().Peek("jobs", {.max_messages = 1'001}), kInvalidArgument);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, engine().Peek("jobs", {.max_messages = 1'000}));
  EXPECT_EQ(all.size(), 4u);
  ExpectNothingWritten(engine(), seeded);
}

// ---- extreme options and clocks (SPEC §10: bad input never crashes) --------------
// Issue 9: INT64_MAX retention and intervals, and clocks near INT64_MAX,
// overflowed signed arithmetic (UBSan, which the asan preset makes fatal).

MQLITE_TCK_GRADES(TckValidation, Spec10_EngineOptionsOutOfRangeAreRefusedNamingTheField, "G6");
TEST_P(TckValidation, Spec10_EngineOptionsOutOfRangeAreRefusedNamingTheField) {
  CloseEngine();
  const EngineOptions base = engine_options();
  struct Case {
    const char* field;
    void (*set)(EngineOptions&);
  };
  const Case cases[] = {
      {"maintenance_interval_ms", [](EngineOptions& o) { o.maintenance_interval_ms = INT64_MAX; }},
      {"maintenance_interval_ms", [](EngineOptions& o) { o.maintenance_interval_ms = 0; }},
      {"maintenance_batch", [](EngineOptions& o) { o.maintenance_batch = INT64_MAX; }},
      {"max_message_bytes", [](EngineOptions& o) { o.max_message_bytes = INT64_MAX; }},
      {"max_send_batch", [](EngineOptions& o) { o.max_send_batch = INT32_MAX; }},
      {"dlq_max_age_ms", [](EngineOptions& o) { o.dlq_max_age_ms = INT64_MAX; }},
      {"receipt_retention_ms", [](EngineOptions& o) { o.receipt_retention_ms = INT64_MAX; }},
      {"attempt_retention_ms", [](EngineOptions& o) { o.attempt_retention_ms = INT64_MAX; }},
      {"attempt_retention_ms", [](EngineOptions& o) { o.attempt_retention_ms = -1; }},
      {"group_commit_max", [](EngineOptions& o) { o.group_commit_max = 0; }},
      {"group_commit_max", [](EngineOptions& o) { o.group_commit_max = INT32_MAX; }},
  };
  for (const Case& c : cases) {
    engine_options() = base;
    c.set(engine_options());
    Result<std::unique_ptr<Engine>> e = OpenEngine();
    ASSERT_FALSE(e.has_value()) << c.field;
    MQ_EXPECT_CODE(e.status(), kInvalidArgument) << c.field;
    EXPECT_TRUE(MessageHas(e.error(), c.field));
  }
  engine_options() = base;
  ASSERT_NO_FATAL_FAILURE(Reopen());  // nothing was touched by the refused opens
}

// Every option at the top of its range, with the clock near INT64_MAX (and
// then before the epoch): a whole lifecycle runs without a signed overflow.
MQLITE_TCK_GRADES(TckValidation, Spec10_ExtremeButValidOptionsAndClocksDoNotOverflow, "G1", "G2",
                  "G4");
TEST_P(TckValidation, Spec10_ExtremeButValidOptionsAndClocksDoNotOverflow) {
  engine_options().maintenance_interval_ms = 24LL * 3600 * 1000;
  engine_options().maintenance_batch = 1'000'000;
  engine_options().dlq_max_age_ms = 100LL * 365 * 24 * 3600 * 1000;
  engine_options().dlq_max_count = INT64_MAX;
  engine_options().dlq_max_bytes = INT64_MAX;
  engine_options().receipt_retention_ms = 365LL * 24 * 3600 * 1000;
  engine_options().attempt_retention_ms = 365LL * 24 * 3600 * 1000;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  for (int64_t at : {INT64_MAX - 1, INT64_MAX / 2, INT64_MIN + 1}) {
    SCOPED_TRACE("clock at " + std::to_string(at));
    clock().Set(at);
    const std::string q = "x" + std::to_string(static_cast<uint64_t>(at) % 1000);
    QueueConfig c;
    c.lock_duration_ms = 12LL * 3600 * 1000;
    c.default_ttl_ms = 100LL * 365 * 24 * 3600 * 1000;
    c.dedup_window_ms = 365LL * 24 * 3600 * 1000;
    c.dlq_max_age_ms = INT64_MAX;  // per queue: any positive age is allowed
    MQ_ASSERT_OK(CreateQueue(engine(), q, c));
    OutgoingMessage later = Out("later");
    later.delay_ms = 365LL * 24 * 3600 * 1000;
    later.ttl_ms = 100LL * 365 * 24 * 3600 * 1000;
    MQ_ASSERT_OK(engine().Send(q, later));
    OutgoingMessage far = Out("far");
    far.schedule_at_ms = INT64_MAX;  // beyond any horizon: refused, not wrapped
    MQ_EXPECT_CODE(engine().Send(q, far), kInvalidArgument);
    MQ_ASSERT_OK(engine().Send(q, Out("now")));
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), q, 5));
    ASSERT_EQ(got.size(), 1u);
    MQ_ASSERT_OK(engine().Renew(q, got[0].seq, got[0].lock_token));
    MQ_ASSERT_OK(engine().Abandon(q, got[0].seq, got[0].lock_token, 365LL * 24 * 3600 * 1000));
    MQ_ASSERT_OK(engine().Abandon(q, got[0].seq, got[0].lock_token, 365LL * 24 * 3600 * 1000))
        << "receipt replay";
    MQ_ASSERT_OK(engine().RunMaintenance());
    MQ_ASSERT_OK(engine().Stats(q));
    MQ_ASSERT_OK(engine().Redrive(q, {.older_than_ms = INT64_MAX}));
    MQ_ASSERT_OK(engine().Purge(q, {.older_than_ms = INT64_MAX}));
    MQ_ASSERT_OK(engine().Send(q, Out("now")));  // a dedup resend: same seq
    ReceiveOptions o;
    o.attempt_id = "a" + q;
    MQ_ASSERT_OK(engine().Receive(q, o));
    MQ_ASSERT_OK(engine().Receive(q, o));  // attempt replay
    MQ_ASSERT_OK(engine().Peek(q));
  }
  // A deadline too far to represent means no deadline.
  MQ_EXPECT_OK(engine().Stats("x" + std::to_string(static_cast<uint64_t>(INT64_MAX - 1) % 1000),
                               CallOptions::Timeout(INT64_MAX)));
}

}  // namespace
}  // namespace mqlite::tck
