// TckLifecycle (continued) — queues (SPEC §2): create-if-absent and update,
// list and delete, and each queue a namespace of its own for seqs, tokens and
// every by-seq operation.
#include <cstdint>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorQueues() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

// ---- queues (SPEC §2) -------------------------------------------------------------------

MQLITE_TCK_GRADES(TckLifecycle, Spec2_CreateQueueIsIdempotentAndUpdateQueueChangesTheConfig, "G6");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec2_ListAndDeleteQueues, "G3");
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

// ---- each queue its own namespace (SPEC §2) ------------------------------------------

MQLITE_TCK_GRADES(TckLifecycle, Spec2_SeqsAndTokensOfOneQueueAreUnknownInAnother, "G2", "G4");
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

}  // namespace
}  // namespace mqlite::tck
