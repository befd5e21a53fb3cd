// Unit tests of the engine's group commit (core/src/group_commit.h, SPEC §9)
// over a real store (the in-memory store) behind a fault-injecting
// StoreWrapper: concurrent writers share one transaction, and each caller
// still gets exactly its own result — a request-local error fails alone, a
// store error re-runs every member alone, a commit of unknown outcome is every
// member's answer, and a caller cancelled while queued runs nothing.
//
// Each request's body creates one queue ("q<i>") and then returns what the
// test tells it to; the queues that exist afterwards are what committed.
#include "group_commit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "mqlite/memory.h"
#include "mqlite/store.h"

namespace mqlite::internal {
namespace {

// Counts transactions and savepoints; can hold the writer (the next write
// Run blocks after its body, before its commit, until released), refuse the
// next write after holding it (a BEGIN that fails) and report a commit as
// OutcomeUnknown after it really committed.
class ProbeStore : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;

  Status Run(TxnKind kind, const RunOptions& options,
             const std::function<Status(StoreTxn&)>& body) override {
    if (kind == TxnKind::kWrite) {
      runs_.fetch_add(1);
      std::lock_guard<std::mutex> l(mu_);
      writers_.push_back(std::this_thread::get_id());
    }
    if (kind == TxnKind::kWrite && refuse_next_.exchange(false)) {
      Park();  // as a BEGIN that fails after a wait: the body never runs
      return Status::Unavailable("injected: the transaction could not begin");
    }
    Status s = StoreWrapper::Run(kind, options, [&](StoreTxn& txn) -> Status {
      Status ran = body(txn);
      // Parks after the body, so the held group has already taken its members
      // (only the callers queued before it) and callers arriving now queue
      // behind it: GroupCommit::queued() counts exactly them.
      if (hold_next_.exchange(false)) Park();
      return ran;
    });
    if (s.ok() && kind == TxnKind::kWrite && unknown_commits_.load() > 0) {
      unknown_commits_.fetch_sub(1);
      return Status::OutcomeUnknown("injected: connection lost after COMMIT");
    }
    return s;
  }

  // The next write transaction parks inside its body until Release().
  void HoldNext() { hold_next_ = true; }
  void WaitHolding() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return holding_; });
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    holding_ = false;
    cv_.notify_all();
  }
  // The next write transaction parks before its body until Release(), then
  // fails without running it.
  void RefuseNext() { refuse_next_ = true; }
  void FailNextCommitsAsUnknown(int n) { unknown_commits_ = n; }
  int runs() const { return runs_.load(); }
  // The thread that ran each write transaction, in order.
  std::vector<std::thread::id> writers() {
    std::lock_guard<std::mutex> l(mu_);
    return writers_;
  }
  int savepoints() const { return savepoints_.load(); }

 protected:
  std::unique_ptr<StoreTxn> WrapTxn(StoreTxn* inner) override {
    class Txn : public StoreTxnWrapper {
     public:
      Txn(StoreTxn* t, std::atomic<int>* n) : StoreTxnWrapper(t), n_(n) {}
      Status Savepoint(const std::function<Status(StoreTxn&)>& body) override {
        n_->fetch_add(1);
        return StoreTxnWrapper::Savepoint(body);
      }

     private:
      std::atomic<int>* n_;
    };
    return std::make_unique<Txn>(inner, &savepoints_);
  }

 private:
  // Holding until Release(); WaitHolding() returns once here.
  void Park() {
    std::unique_lock<std::mutex> l(mu_);
    holding_ = true;
    cv_.notify_all();
    cv_.wait(l, [&] { return !holding_; });
  }

  std::atomic<int> runs_{0};
  std::atomic<int> savepoints_{0};
  std::atomic<bool> hold_next_{false};
  std::atomic<bool> refuse_next_{false};
  std::atomic<int> unknown_commits_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool holding_ = false;
  std::vector<std::thread::id> writers_;
};

class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = OpenMemoryStore(NewMemoryDatabase());
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    store_ = std::make_unique<ProbeStore>(std::move(*s));
  }

  // A body that creates queue q<i>, then answers `result`.
  static std::function<Status(StoreTxn&)> Body(int i, Status result,
                                               std::atomic<int>* ran = nullptr) {
    return [i, result, ran](StoreTxn& txn) -> Status {
      if (ran) ran->fetch_add(1);
      bool created = false;
      QueueConfig c;
      c.name = "q" + std::to_string(i);
      MQLITE_RETURN_IF_ERROR(txn.UpsertQueue(c, 0, &created).status());
      return result;
    };
  }

  std::set<std::string> Queues() {
    std::set<std::string> out;
    Status s = store_->Run(TxnKind::kRead, {}, [&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(std::vector<QueueRecord> qs, txn.ListQueues());
      for (const auto& q : qs) out.insert(q.config.name);
      return Status::OK();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  // Runs `first` on a thread with the writer held, queues `bodies` on threads
  // of their own behind it, releases the writer and returns every answer
  // (first's last). The writer is released only once every caller waits in
  // the queue, so they all form the next group.
  std::vector<Status> RunGrouped(GroupCommit& gc, std::vector<std::function<Status(StoreTxn&)>> bodies,
                                 std::vector<CallOptions> calls = {}) {
    calls.resize(bodies.size());
    store_->HoldNext();
    Status first_status;
    std::thread first([&] { first_status = gc.Write({}, Body(100, Status::OK())); });
    store_->WaitHolding();
    std::vector<Status> out(bodies.size());
    std::vector<std::thread> ts;
    // One at a time, so the queue holds the bodies in the order given: a
    // test that expects what a later member sees must not depend on which
    // thread the scheduler ran first.
    for (size_t i = 0; i < bodies.size(); ++i) {
      ts.emplace_back([&, i] { out[i] = gc.Write(calls[i], bodies[i]); });
      WaitQueued(gc, i + 1);
    }
    store_->Release();
    first.join();
    for (auto& t : ts) t.join();
    out.push_back(first_status);
    return out;
  }

  // Until `n` callers wait in the queue behind the held writer.
  static void WaitQueued(const GroupCommit& gc, size_t n) {
    while (gc.queued() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  std::unique_ptr<ProbeStore> store_;
};

TEST_F(GroupCommitTest, Spec9_QueuedWritersShareOneTransaction) {
  GroupCommit gc(store_.get(), /*max_members=*/64, /*max_leaders=*/1);
  std::vector<std::function<Status(StoreTxn&)>> bodies;
  for (int i = 0; i < 8; ++i) bodies.push_back(Body(i, Status::OK()));
  std::vector<Status> got = RunGrouped(gc, bodies);
  for (const Status& s : got) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Queues().size(), 9u);
  // One held transaction plus far fewer than one per queued caller.
  EXPECT_LT(store_->runs(), 1 + 8) << "no grouping happened";
  EXPECT_EQ(store_->savepoints(), 0) << "the optimistic pass needs no savepoints";
}

TEST_F(GroupCommitTest, Spec9_ARequestLocalErrorFailsOnlyThatRequest) {
  GroupCommit gc(store_.get(), 64, 1);
  std::vector<std::function<Status(StoreTxn&)>> bodies = {
      Body(0, Status::OK()), Body(1, Status::LockLost("stale token")), Body(2, Status::OK()),
      Body(3, Status::DedupConflict("other body")), Body(4, Status::OK())};
  std::vector<Status> got = RunGrouped(gc, bodies);
  EXPECT_TRUE(got[0].ok());
  EXPECT_EQ(got[1].code(), StatusCode::kLockLost);
  EXPECT_TRUE(got[2].ok());
  EXPECT_EQ(got[3].code(), StatusCode::kDedupConflict);
  EXPECT_TRUE(got[4].ok());
  EXPECT_EQ(Queues(), (std::set<std::string>{"q0", "q2", "q4", "q100"}))
      << "a failed request's own writes are rolled back, its neighbours' commit";
}

TEST_F(GroupCommitTest, Spec9_AStoreErrorRerunsEveryMemberAlone) {
  GroupCommit gc(store_.get(), 64, 1);
  std::atomic<int> ran_ok{0};
  std::vector<std::function<Status(StoreTxn&)>> bodies = {
      Body(0, Status::OK(), &ran_ok), Body(1, Status::StoreFull("disk full")),
      Body(2, Status::OK(), &ran_ok)};
  std::vector<Status> got = RunGrouped(gc, bodies);
  EXPECT_TRUE(got[0].ok()) << got[0].ToString();
  EXPECT_EQ(got[1].code(), StatusCode::kStoreFull);
  EXPECT_TRUE(got[2].ok()) << got[2].ToString();
  EXPECT_EQ(Queues(), (std::set<std::string>{"q0", "q2", "q100"}));
  // The held transaction, the optimistic group attempt, the attempt with
  // savepoints (a store error is not request-local, so it fails too), then
  // each of the three members alone.
  EXPECT_EQ(store_->runs(), 1 + 1 + 1 + 3);
  EXPECT_GE(ran_ok.load(), 2);
}

TEST_F(GroupCommitTest, Spec10_OutcomeUnknownOnTheGroupCommitIsEveryMembersAnswer) {
  GroupCommit gc(store_.get(), 64, 1);
  // Two members queue behind a held writer; the held transaction's commit and
  // then the group's commit are reported OutcomeUnknown although both really
  // committed. Every member must get OutcomeUnknown — never a silent re-run
  // that would apply its writes twice, never OK.
  store_->HoldNext();
  Status first_status;
  std::thread first([&] { first_status = gc.Write({}, Body(100, Status::OK())); });
  store_->WaitHolding();
  std::atomic<int> ran{0};
  std::vector<Status> got(2);
  std::thread c([&] { got[0] = gc.Write({}, Body(10, Status::OK(), &ran)); });
  std::thread d([&] { got[1] = gc.Write({}, Body(11, Status::OK(), &ran)); });
  WaitQueued(gc, 2);
  store_->FailNextCommitsAsUnknown(2);
  store_->Release();
  first.join();
  c.join();
  d.join();
  EXPECT_EQ(first_status.code(), StatusCode::kOutcomeUnknown);
  EXPECT_EQ(got[0].code(), StatusCode::kOutcomeUnknown) << got[0].ToString();
  EXPECT_EQ(got[1].code(), StatusCode::kOutcomeUnknown) << got[1].ToString();
  EXPECT_EQ(ran.load(), 2) << "each member ran once: no blind retry";
  EXPECT_EQ(Queues(), (std::set<std::string>{"q10", "q11", "q100"}))
      << "unknown is not failed: they committed";
}

TEST_F(GroupCommitTest, Spec10_ACallerCancelledWhileQueuedRunsNothing) {
  GroupCommit gc(store_.get(), 64, 1);
  std::stop_source stop;
  CallOptions cancellable;
  cancellable.stop_token = stop.get_token();
  std::atomic<int> ran{0};
  store_->HoldNext();
  Status first_status;
  std::thread first([&] { first_status = gc.Write({}, Body(100, Status::OK())); });
  store_->WaitHolding();
  Status waiting;
  std::thread t([&] { waiting = gc.Write(cancellable, Body(7, Status::OK(), &ran)); });
  WaitQueued(gc, 1);
  stop.request_stop();
  t.join();  // returns while the writer is still held
  EXPECT_EQ(waiting.code(), StatusCode::kCancelled) << waiting.ToString();
  store_->Release();
  first.join();
  EXPECT_TRUE(first_status.ok());
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(Queues(), (std::set<std::string>{"q100"}));
}

TEST_F(GroupCommitTest, Spec9_ALeaderWhoseRequestIsDoneLeadsOnForABoundedNumberOfGroups) {
  // Eleven callers queue behind a held leader, in groups of at most two. Once
  // the leader's own request commits, its thread runs the next
  // kLeadOnGroups groups itself (no new leader to wake), then hands the lead
  // to the oldest caller still queued, which leads the rest.
  static_assert(GroupCommit::kLeadOnGroups >= 1 && GroupCommit::kLeadOnGroups < 6,
                "the test needs groups led on and groups after the hand-off");
  GroupCommit gc(store_.get(), /*max_members=*/2, /*max_leaders=*/1);
  store_->HoldNext();
  Status first_status;
  std::thread::id first_id;
  std::thread first([&] {
    first_id = std::this_thread::get_id();
    first_status = gc.Write({}, Body(100, Status::OK()));
  });
  store_->WaitHolding();
  std::vector<Status> got(11);
  std::vector<std::thread> ts;
  for (int i = 0; i < 11; ++i) {
    ts.emplace_back([&, i] { got[i] = gc.Write({}, Body(i, Status::OK())); });
    WaitQueued(gc, static_cast<size_t>(i) + 1);  // queue order = i
  }
  store_->Release();
  first.join();
  for (auto& t : ts) t.join();
  EXPECT_TRUE(first_status.ok()) << first_status.ToString();
  for (const Status& st : got) EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Queues().size(), 12u);
  // The held group (the leader alone), then six groups of two or one.
  std::vector<std::thread::id> w = store_->writers();
  ASSERT_EQ(w.size(), 7u);
  int by_first = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (i <= static_cast<size_t>(GroupCommit::kLeadOnGroups)) {
      EXPECT_EQ(w[i], first_id) << "group " << i << " was not led on by the first leader";
    } else {
      EXPECT_NE(w[i], first_id) << "group " << i << ": the first leader did not hand off";
    }
    by_first += w[i] == first_id;
  }
  EXPECT_EQ(by_first, 1 + GroupCommit::kLeadOnGroups);
}

TEST_F(GroupCommitTest, Spec9_GroupingOffRunsEveryWriteAlone) {
  GroupCommit gc(store_.get(), /*max_members=*/1, 1);
  std::vector<std::thread> ts;
  std::vector<Status> got(4);
  for (int i = 0; i < 4; ++i) ts.emplace_back([&, i] { got[i] = gc.Write({}, Body(i, Status::OK())); });
  for (auto& t : ts) t.join();
  for (const Status& st : got) EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(gc.queued(), 0u);
  EXPECT_EQ(store_->runs(), 4) << "one transaction per write";
  EXPECT_EQ(Queues().size(), 4u);
}

TEST_F(GroupCommitTest, Spec9_SeveralLeadersStillRunEveryRequestExactlyOnce) {
  // write_concurrency > 1 (a shared store): up to two groups at once. The
  // memory store serialises them; what must hold is that every request runs
  // and commits exactly once and gets its own answer.
  GroupCommit gc(store_.get(), 8, /*max_leaders=*/2);
  std::atomic<int> ran{0};
  std::vector<std::thread> ts;
  std::vector<Status> got(40);
  for (int i = 0; i < 40; ++i) {
    ts.emplace_back([&, i] {
      got[i] = gc.Write({}, Body(i, i % 7 == 3 ? Status::NotFound("x") : Status::OK(), &ran));
    });
  }
  for (auto& t : ts) t.join();
  std::set<std::string> q = Queues();
  for (int i = 0; i < 40; ++i) {
    if (i % 7 == 3) {
      EXPECT_EQ(got[i].code(), StatusCode::kNotFound);
      EXPECT_EQ(q.count("q" + std::to_string(i)), 0u);
    } else {
      EXPECT_TRUE(got[i].ok()) << i << ": " << got[i].ToString();
      EXPECT_EQ(q.count("q" + std::to_string(i)), 1u);
    }
  }
}

// With several leaders (a shared store), a leader waiting for its
// transaction to begin may have its own request taken and committed by the
// other group meanwhile. If its transaction then never begins, its caller
// gets that group's answer — not the failure to begin — and the request
// leaves the queue once (before, the queue erased a request it no longer
// held: memory corruption ASan caught in PgStoreTest's server restart).
TEST_F(GroupCommitTest, Spec9_ALeaderWhoseTransactionNeverBeganGetsTheAnswerOfTheGroupThatTookIt) {
  GroupCommit gc(store_.get(), 8, /*max_leaders=*/2);
  std::atomic<int> ran{0};
  store_->RefuseNext();
  Status first;
  std::thread a([&] { first = gc.Write({}, Body(1, Status::OK(), &ran)); });
  store_->WaitHolding();  // the first caller leads, waiting for its transaction
  const Status second = gc.Write({}, Body(2, Status::OK(), &ran));  // leads, takes both
  EXPECT_TRUE(second.ok()) << second.ToString();
  store_->Release();
  a.join();
  EXPECT_TRUE(first.ok()) << first.ToString();
  EXPECT_EQ(ran.load(), 2);
  EXPECT_EQ(Queues(), (std::set<std::string>{"q1", "q2"}));
  EXPECT_EQ(gc.queued(), 0u);
}

// RunsAlone() — what lets a body tell the store that its final call
// follows (StoreTxn::FinalCallFollows) — is true exactly where a body has
// its transaction to itself for certain: without late joiners (a store that
// commits with the final call) the leader that found no one queued; every
// write with grouping off, and each member rerun alone after a store error;
// never for a member of a group of several, nor for a leader whose group may
// still take a late joiner.
TEST_F(GroupCommitTest, Spec9_OnlyABodyWithItsTransactionToItselfRunsAlone) {
  std::mutex mu;
  std::vector<bool> seen;
  auto recording = [&](int i, Status result) {
    return [&, i, result](StoreTxn& txn) -> Status {
      {
        std::lock_guard<std::mutex> l(mu);
        seen.push_back(GroupCommit::RunsAlone());
      }
      return Body(i, result)(txn);
    };
  };
  EXPECT_FALSE(GroupCommit::RunsAlone()) << "outside any Write";
  {
    GroupCommit gc(store_.get(), 64, 1, /*late_join=*/true);
    std::vector<std::function<Status(StoreTxn&)>> bodies;
    for (int i = 0; i < 4; ++i) bodies.push_back(recording(i, Status::OK()));
    for (const Status& s : RunGrouped(gc, bodies)) EXPECT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(seen.size(), 4u);
    for (bool alone : seen) EXPECT_FALSE(alone) << "a member of a group of four";
    seen.clear();
    EXPECT_TRUE(gc.Write({}, recording(10, Status::OK())).ok());
    EXPECT_EQ(seen, std::vector<bool>{false})
        << "a write that found no one queued, with late joiners";
    seen.clear();
    // A store error in the group: each member runs again alone.
    std::vector<std::function<Status(StoreTxn&)>> failing = {
        recording(20, Status::OK()), recording(21, Status::Unavailable("store trouble"))};
    (void)RunGrouped(gc, failing);
    // Both in the group, both again in savepoints, then each alone.
    EXPECT_EQ(seen, (std::vector<bool>{false, false, false, false, true, true}));
    seen.clear();
  }
  {
    GroupCommit lone(store_.get(), 64, 1, /*late_join=*/false);
    EXPECT_TRUE(lone.Write({}, recording(11, Status::OK())).ok());
    EXPECT_EQ(seen, std::vector<bool>{true})
        << "a write that found no one queued, without late joiners";
    seen.clear();
  }
  GroupCommit off(store_.get(), /*max_members=*/1, 1);
  EXPECT_TRUE(off.Write({}, recording(30, Status::OK())).ok());
  EXPECT_EQ(seen, std::vector<bool>{true}) << "grouping off";
  EXPECT_FALSE(GroupCommit::RunsAlone()) << "reset after the body";
}

// Late joiners (a single writer that ignores FinalCallFollows): callers that
// queue while a group's members run join that group's transaction, up to
// max_members in all, in queue order; a late joiner that fails a
// request-local check fails alone.
TEST_F(GroupCommitTest, Spec9_CallersQueuedWhileAGroupRunsJoinItsTransaction) {
  GroupCommit gc(store_.get(), /*max_members=*/3, /*max_leaders=*/1, /*late_join=*/true);
  std::thread::id leader_id;
  std::vector<std::thread::id> ran_on(4);
  std::vector<int> ran_in(4);  // the write transaction (ProbeStore::runs) of its last run
  auto on = [&](int i, Status result) {
    return [&, i, result](StoreTxn& txn) -> Status {
      ran_on[i] = std::this_thread::get_id();
      ran_in[i] = store_->runs();
      return Body(i, result)(txn);
    };
  };
  // The leader's body waits (inside its transaction) until three callers
  // queued behind it, one at a time so the queue order is theirs.
  std::vector<std::thread> ts;
  std::vector<Status> got(3);
  std::atomic<bool> queued_all{false};
  Status leader_status;
  std::thread leader([&] {
    leader_id = std::this_thread::get_id();
    leader_status = gc.Write({}, [&](StoreTxn& txn) -> Status {
      for (int i = 1; i <= 3 && !queued_all; ++i) {  // the first run only
        ts.emplace_back([&, i] {
          got[i - 1] = gc.Write({}, on(i, i == 1 ? Status::LockLost("stale token") : Status::OK()));
        });
        WaitQueued(gc, static_cast<size_t>(i));
      }
      queued_all = true;
      return on(0, Status::OK())(txn);
    });
  });
  leader.join();
  for (auto& t : ts) t.join();
  ASSERT_TRUE(queued_all.load());
  EXPECT_TRUE(leader_status.ok()) << leader_status.ToString();
  EXPECT_EQ(got[0].code(), StatusCode::kLockLost) << got[0].ToString();
  EXPECT_TRUE(got[1].ok()) << got[1].ToString();
  EXPECT_TRUE(got[2].ok()) << got[2].ToString();
  EXPECT_EQ(Queues(), (std::set<std::string>{"q0", "q2", "q3"}))
      << "the failing late joiner's writes are rolled back, the others commit";
  // The leader's transaction: the leader and the first two late joiners (the
  // limit is three members); run once without savepoints, then again with
  // one per member because one failed. The third caller ran in a group of
  // its own after it.
  EXPECT_EQ(ran_on[1], leader_id) << "the first late joiner ran in the leader's group";
  EXPECT_EQ(ran_on[2], leader_id) << "the second late joiner ran in the leader's group";
  EXPECT_EQ(ran_in[1], ran_in[0]) << "the first late joiner is in the leader's transaction";
  EXPECT_EQ(ran_in[2], ran_in[0]) << "the second late joiner is in the leader's transaction";
  EXPECT_EQ(ran_in[3], ran_in[0] + 1) << "the third caller (over the limit) is in the next one";
  EXPECT_EQ(store_->savepoints(), 3) << "the isolating rerun: one savepoint per member";
  EXPECT_EQ(store_->runs(), 2 + 1)
      << "two attempts of the leader's group, one for the third caller";
  EXPECT_EQ(gc.queued(), 0u);
}

}  // namespace
}  // namespace mqlite::internal
