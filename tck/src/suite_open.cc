// TckLifecycle (continued) — opening and closing: recovery of orphaned locks
// on open (SPEC §7.1), the exclusive store's DbLocked and the shared store's
// second engine, reopen, and Close (§9).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorOpen() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

// ---- recovery (SPEC §7.1) -------------------------------------------------------------

// An exclusive store has no other live engine, so every lock found at open is
// an orphan (SPEC §7.1).
MQLITE_TCK_GRADES(TckLifecycle, Spec7_1_ReopenReclaimsLockedMessagesImmediately, "G2", "G6");
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
MQLITE_TCK_GRADES(TckLifecycle, Spec7_1_SharedStoreReopenKeepsLiveLeases, "G2", "G6");
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
  EXPECT_EQ(still.locked_until, kT0 + 10'000 + kLock);
  // (Peek shows no tokens; the Complete at the end proves the token survived.)
  MQ_EXPECT_CODE(engine().Complete("jobs", expired.seq, expired.lock_token), kLockLost);
  MQ_ASSERT_OK_AND_ASSIGN(Message again, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(again.seq, expired.seq);
  EXPECT_EQ(again.delivery_count, 2);
  MQ_EXPECT_OK(engine().Complete("jobs", live.seq, live.lock_token));
}

// ---- open and close (SPEC §9) ---------------------------------------------------------

// Creates "jobs" holding one message, "payload".
void SeedJobs(Engine& e) {
  MQ_ASSERT_OK(CreateQueue(e, "jobs"));
  MQ_ASSERT_OK(SendBody(e, "jobs", "payload"));
}

// `e` sees the seeded data: one message, "payload", which it receives (the
// message goes to *got).
void ReceiveSeededJob(Engine& e, Message* got) {
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, e.Stats("jobs"));
  EXPECT_EQ(st.total, 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, e.Receive("jobs"));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].body, "payload");
  *got = all[0];
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

MQLITE_TCK_GRADES(TckLifecycle, Spec9_SecondOpenWhileOpenIsDbLocked, "G6");
TEST_P(TckLifecycle, Spec9_SecondOpenWhileOpenIsDbLocked) {
  if (SkipUnlessExclusive()) return;
  ASSERT_NO_FATAL_FAILURE(SeedJobs(engine()));
  MQ_EXPECT_CODE(fixture().Open(), kDbLocked);
  MQ_EXPECT_CODE(OpenEngine(), kDbLocked);
  ExpectStillWorks(engine(), 1);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec9_SharedStoreAdmitsASecondEngine, "G2");
TEST_P(TckLifecycle, Spec9_SharedStoreAdmitsASecondEngine) {
  if (SkipUnlessShared()) return;
  ASSERT_NO_FATAL_FAILURE(SeedJobs(engine()));
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> second, OpenEngine());
  Message got;
  ASSERT_NO_FATAL_FAILURE(ReceiveSeededJob(*second, &got));
  MQ_EXPECT_OK(second->Complete("jobs", got.seq, got.lock_token));
  MQ_EXPECT_OK(second->Close());
  ExpectStillWorks(engine(), 0);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec9_ReopenAfterCloseSucceedsAndKeepsData, "G6");
TEST_P(TckLifecycle, Spec9_ReopenAfterCloseSucceedsAndKeepsData) {
  CloseEngine();
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> first, OpenEngine());
  ASSERT_NO_FATAL_FAILURE(SeedJobs(*first));
  MQ_ASSERT_OK(first->Close());
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> second, OpenEngine());
  Message got;
  ASSERT_NO_FATAL_FAILURE(ReceiveSeededJob(*second, &got));
  // The first engine is fenced; the second one owns the data.
  MQ_EXPECT_CODE(first->Send("jobs", {.body = "late"}), kClosed);
  MQ_EXPECT_OK(second->Complete("jobs", got.seq, got.lock_token));
}

MQLITE_TCK_GRADES(TckLifecycle, Spec9_DestroyingTheEngineReleasesTheStore, "G6");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec9_ABareStoreHoldsTheLockUntilDestroyed, "G6");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec9_DifferentDataSetsDoNotConflict, "G6");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec9_CloseMakesEveryLaterCallClosed, "G2");
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

MQLITE_TCK_GRADES(TckLifecycle, Spec9_CloseIsIdempotent, "G6");
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
