// spec.md §9 shared stores: many engines over one store (the way several
// processes share a PostgreSQL database). Every test here opens several
// engines on the fixture's data and skips on an exclusive store. Each checks
// a guarantee that a single engine cannot break by itself but a shared store
// can: exactly one claimer wins across engines (G2), group order with
// producers and consumers in different engines (§5), a dedup key and an
// attempt id shared by engines (§4, §7.3), an engine opening never stealing
// another's live lease (§7.1), a long-poll woken by another engine's commit
// through the store's change feed (§9), engines in forked processes draining
// shared queues (G2, §5), engines taking turns to maintain a
// queue under the store's maintenance lock (§9), and engines refused unless
// they agree on the retention defaults (§9).
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <barrier>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "mqlite/tck.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorMultiEngine() { return 0; }

namespace {

using namespace suite;  // NOLINT

// `extra` more engines on the fixture's data (beside the fixture's own).
template <typename OpenFn>
std::vector<std::unique_ptr<Engine>> OpenMore(int extra, const OpenFn& open) {
  std::vector<std::unique_ptr<Engine>> out;
  for (int k = 0; k < extra; ++k) {
    auto e = open();
    EXPECT_TRUE(e.ok()) << "opening engine " << k + 2 << " on the shared store: "
                        << e.error().ToString();
    if (!e.ok()) break;
    out.push_back(std::move(*e));
  }
  return out;
}

// Who holds what, across every engine: the G2 oracle. A seq handed out while
// another consumer still holds it is a double delivery.
class HoldOracle {
 public:
  explicit HoldOracle(Errors* errors) : errors_(errors) {}
  void Took(const Message& m, const std::string& who) {
    std::lock_guard<std::mutex> l(mu_);
    auto [it, fresh] = held_.emplace(m.seq, who);
    if (!fresh) {
      errors_->Add("seq " + std::to_string(m.seq) + " handed to " + who + " while " + it->second +
                   " still held it");
    }
  }
  void Done(int64_t seq) {
    std::lock_guard<std::mutex> l(mu_);
    held_.erase(seq);
    ++completed_[seq];
  }
  std::map<int64_t, int> completed() {
    std::lock_guard<std::mutex> l(mu_);
    return completed_;
  }
  int64_t total_completed() {
    std::lock_guard<std::mutex> l(mu_);
    int64_t n = 0;
    for (auto& [seq, c] : completed_) n += c;
    return n;
  }

 private:
  Errors* errors_;
  std::mutex mu_;
  std::map<int64_t, std::string> held_;
  std::map<int64_t, int> completed_;
};

// What forked engines report through memory shared across fork().
struct ForkShared {
  static constexpr int kMaxMessages = 2048;
  static constexpr int kGroups = 16;
  std::atomic<int> received[kMaxMessages];
  std::atomic<int> completed[kMaxMessages];
  std::atomic<int64_t> held[kGroups];    // the group's message in flight, 0 = none
  std::atomic<int> next_index[kGroups];  // position in the group's seq list
  int64_t group_seqs[kGroups][kMaxMessages / kGroups];
  int group_len[kGroups];
  std::atomic<int> violations;
  char first_violation[256];

  void Violation(const std::string& what) {
    if (violations.fetch_add(1) == 0) {
      std::snprintf(first_violation, sizeof first_violation, "%s", what.c_str());
    }
  }
};

// One forked engine: four threads draining queue "forked" until it has been
// empty for a while, checking every delivery against the shared record.
// Returns the process's exit code.
int DrainInChild(Engine& engine, int64_t first_seq, ForkShared* sh) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      int idle = 0;
      while (idle < 20 && failures.load() == 0) {
        auto got = engine.Receive("forked", {.max_messages = 4, .wait_ms = 100});
        if (!got.ok()) {
          sh->Violation("receive: " + got.error().ToString());
          failures.fetch_add(1);
          return;
        }
        if (got->empty()) {
          ++idle;
          continue;
        }
        idle = 0;
        for (const Message& m : *got) {
          const int64_t i = m.seq - first_seq;
          if (i < 0 || i >= ForkShared::kMaxMessages) {
            sh->Violation("unknown seq " + std::to_string(m.seq));
            continue;
          }
          sh->received[i].fetch_add(1);
          if (!m.group_id) continue;
          const int g = std::stoi(*m.group_id);
          int64_t none = 0;
          if (!sh->held[g].compare_exchange_strong(none, m.seq)) {
            sh->Violation("group " + *m.group_id + ": seq " + std::to_string(m.seq) +
                          " delivered while seq " + std::to_string(none) + " was held");
          }
          const int at = sh->next_index[g].fetch_add(1);
          if (at >= sh->group_len[g] || sh->group_seqs[g][at] != m.seq) {
            sh->Violation("group " + *m.group_id + ": seq " + std::to_string(m.seq) +
                          " delivered out of seq order");
          }
        }
        std::vector<SettleItem> items;
        for (const Message& m : *got) items.push_back({m.seq, m.lock_token});
        // Released before the commit: once it commits, the next member may be
        // claimed at once by any engine.
        for (const Message& m : *got) {
          if (m.group_id) sh->held[std::stoi(*m.group_id)].store(0);
        }
        auto done = engine.CompleteBatch("forked", items);
        if (!done.ok()) {
          sh->Violation("complete: " + done.error().ToString());
          failures.fetch_add(1);
          return;
        }
        for (size_t k = 0; k < done->size(); ++k) {
          if ((*done)[k].ok()) {
            sh->completed[(*got)[k].seq - first_seq].fetch_add(1);
          } else {
            sh->Violation("complete seq " + std::to_string((*got)[k].seq) + ": " +
                          (*done)[k].ToString());
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  return failures.load() == 0 ? 0 : 12;
}

}  // namespace

// G2 and §5 across processes (a shared store's real deployment): three
// forked processes, each with its own engine on the fixture's data (for a
// server store, its own connections), drain 1,000 messages — a quarter
// ungrouped, the rest in 16 groups of a standard queue — with group commit
// on and then off. Shared memory records every delivery: a group never has
// two messages in flight, every group is delivered in exactly seq order, and
// each message is received and completed once; the queue ends empty.
MQLITE_TCK_GRADES(TckMultiEngine, Spec9_G2_ForkedEnginesDrainSharedQueuesExactlyOnceInGroupOrder,
                  "G2", "G3");
TEST_P(TckMultiEngine, Spec9_G2_ForkedEnginesDrainSharedQueuesExactlyOnceInGroupOrder) {
  if (SkipUnlessShared()) return;
  if (profile().crash != CrashModel::kProcess) {
    GTEST_SKIP() << "capability: the store's data lives in one process (crash model none), so "
                    "other processes cannot open it";
  }
  for (int group_commit_max : {64, 1}) {
    SCOPED_TRACE("group_commit_max " + std::to_string(group_commit_max));
    Reopen();
    (void)engine().DeleteQueue("forked");
    MakeQueue("forked");
    void* mem = ::mmap(nullptr, sizeof(ForkShared), PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    auto* sh = new (mem) ForkShared();
    constexpr int kMessages = 1000;  // one SendBatch
    std::vector<OutgoingMessage> batch;
    for (int i = 0; i < kMessages; ++i) {
      OutgoingMessage m{.body = "m" + std::to_string(i)};
      if (i % 4 != 0) m.group_id = std::to_string(i % ForkShared::kGroups);
      batch.push_back(m);
    }
    auto sent = engine().SendBatch("forked", batch);
    ASSERT_TRUE(sent.ok()) << sent.error().ToString();
    const int64_t first_seq = (*sent)[0].seq;
    for (int i = 0; i < kMessages; ++i) {
      ASSERT_LT((*sent)[i].seq - first_seq, ForkShared::kMaxMessages);
      if (batch[i].group_id) {
        const int g = std::stoi(*batch[i].group_id);
        sh->group_seqs[g][sh->group_len[g]++] = (*sent)[i].seq;
      }
    }
    CloseEngine();  // spec.md §9: no engine crosses a fork()
    std::vector<pid_t> kids;
    for (int k = 0; k < 3; ++k) {
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        auto store = fixture().Open();
        if (!store.ok()) ::_exit(10);
        std::unique_ptr<Store> s = std::move(*store);
        if (profile().wrap) s = profile().wrap(std::move(s));
        EngineOptions eo;
        eo.background_maintenance = false;
        eo.group_commit_max = group_commit_max;
        auto e = Engine::Open(std::move(s), eo);
        if (!e.ok()) ::_exit(11);
        const int rc = DrainInChild(**e, first_seq, sh);
        (void)(*e)->Close();
        ::_exit(rc);
      }
      kids.push_back(pid);
    }
    for (pid_t pid : kids) {
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    }
    EXPECT_EQ(sh->violations.load(), 0) << sh->first_violation;
    for (int i = 0; i < kMessages; ++i) {
      const int64_t idx = (*sent)[i].seq - first_seq;
      EXPECT_EQ(sh->received[idx].load(), 1) << "seq " << (*sent)[i].seq << " received";
      EXPECT_EQ(sh->completed[idx].load(), 1) << "seq " << (*sent)[i].seq << " completed";
    }
    ::munmap(mem, sizeof(ForkShared));
    Reopen();
    EXPECT_EQ(StatsOk("forked").total, 0) << "messages left behind";
  }
}

// G2 across engines: consumers in three engines drain one queue while a
// fourth engine sends. No message is held by two consumers at once, every
// message is completed exactly once, none is lost.
MQLITE_TCK_GRADES(TckMultiEngine, Spec5_G2_MultiEngineClaimOracleExactlyOneClaimerWins, "G2");
TEST_P(TckMultiEngine, Spec5_G2_MultiEngineClaimOracleExactlyOneClaimerWins) {
  if (SkipUnlessShared()) return;
  MakeQueue("jobs");
  auto engines = OpenMore(3, [this] { return OpenEngine(); });
  ASSERT_EQ(engines.size(), 3u);
  constexpr int kMessages = 400;
  Errors errors;
  HoldOracle oracle(&errors);
  std::vector<int64_t> sent;
  std::mutex sent_mu;
  const auto give_up = std::chrono::steady_clock::now() + kHangBound;

  std::thread producer([&] {
    for (int i = 0; i < kMessages && !errors.any(); ++i) {
      auto seq = SendBody(engine(), "jobs", "m" + std::to_string(i));
      if (!seq.ok()) {
        errors.Add("send: " + seq.error().ToString());
        return;
      }
      std::lock_guard<std::mutex> l(sent_mu);
      sent.push_back(*seq);
    }
  });
  std::vector<std::thread> consumers;
  for (size_t k = 0; k < engines.size(); ++k) {
    for (int t = 0; t < 2; ++t) {
      consumers.emplace_back([&, k, t] {
        const std::string who = "engine " + std::to_string(k + 2) + " thread " + std::to_string(t);
        while (!errors.any() && oracle.total_completed() < kMessages) {
          if (std::chrono::steady_clock::now() > give_up) {
            errors.Add(who + ": hang bound reached");
            return;
          }
          auto got = ReceiveMany(*engines[k], "jobs", 4);
          if (!got.ok()) {
            errors.Add(who + ": receive: " + got.error().ToString());
            return;
          }
          for (const Message& m : *got) oracle.Took(m, who);
          for (const Message& m : *got) {
            oracle.Done(m.seq);  // before Complete: once completed, another may see it gone
            Status s = engines[k]->Complete("jobs", m.seq, m.lock_token);
            if (!s.ok()) errors.Add(who + ": complete seq " + std::to_string(m.seq) + ": " +
                                    s.ToString());
          }
          if (got->empty()) std::this_thread::yield();
        }
      });
    }
  }
  producer.join();
  for (auto& t : consumers) t.join();
  errors.ExpectNone();
  std::map<int64_t, int> completed = oracle.completed();
  EXPECT_EQ(sent.size(), static_cast<size_t>(kMessages));
  for (int64_t seq : sent) {
    EXPECT_EQ(completed[seq], 1) << "seq " << seq << " completed " << completed[seq] << " times";
  }
  EXPECT_EQ(completed.size(), sent.size()) << "a completed seq that was never sent";
  EXPECT_EQ(StatsOk("jobs").total, 0);
}

// §5 across engines: two producer engines send into the same groups of a
// group_fifo queue at once; two consumer engines drain it. A group never has
// two messages out at once, and every group completes in exactly seq order
// (seqs within a group commit in increasing order, spec.md §9), whichever
// engine sent each member.
MQLITE_TCK_GRADES(TckMultiEngine, Spec5_MultiEngineGroupOrderWithProducersAndConsumersApart, "G2",
                  "G3");
TEST_P(TckMultiEngine, Spec5_MultiEngineGroupOrderWithProducersAndConsumersApart) {
  if (SkipUnlessShared()) return;
  MakeQueue("orders", Ordering::kGroupFifo);
  auto engines = OpenMore(3, [this] { return OpenEngine(); });
  ASSERT_EQ(engines.size(), 3u);
  Engine* producers[2] = {&engine(), engines[0].get()};
  Engine* consumers[2] = {engines[1].get(), engines[2].get()};
  constexpr int kGroups = 8;
  constexpr int kPerGroup = 20;  // per producer and group
  Errors errors;
  std::mutex mu;
  std::map<std::string, std::vector<int64_t>> sent;       // group → seqs sent
  std::map<std::string, std::vector<int64_t>> completed;  // group → seqs in completion order
  std::set<std::string> out;                              // groups with a message held
  int64_t done = 0;
  const auto give_up = std::chrono::steady_clock::now() + kHangBound;

  std::vector<std::thread> threads;
  for (int p = 0; p < 2; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerGroup && !errors.any(); ++i) {
        for (int g = 0; g < kGroups; ++g) {  // both producers send into every group
          const std::string group = "g" + std::to_string(g);
          auto seq = SendMsg(*producers[p], "orders", group + "/" + std::to_string(i), group);
          if (!seq.ok()) {
            errors.Add("send: " + seq.error().ToString());
            return;
          }
          std::lock_guard<std::mutex> l(mu);
          sent[group].push_back(*seq);
        }
      }
    });
  }
  for (int c = 0; c < 2; ++c) {
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, c] {
        for (;;) {
          {
            std::lock_guard<std::mutex> l(mu);
            if (errors.any() || done >= 2 * kGroups * kPerGroup) return;
          }
          if (std::chrono::steady_clock::now() > give_up) {
            errors.Add("hang bound reached");
            return;
          }
          auto got = ReceiveMany(*consumers[c], "orders", 4);
          if (!got.ok()) {
            errors.Add("receive: " + got.error().ToString());
            return;
          }
          for (const Message& m : *got) {
            std::lock_guard<std::mutex> l(mu);
            if (!out.insert(*m.group_id).second) {
              errors.Add("group " + *m.group_id + " had two messages out at once (seq " +
                         std::to_string(m.seq) + ")");
            }
          }
          for (const Message& m : *got) {
            {
              std::lock_guard<std::mutex> l(mu);
              out.erase(*m.group_id);
              completed[*m.group_id].push_back(m.seq);
              ++done;
            }
            Status s = consumers[c]->Complete("orders", m.seq, m.lock_token);
            if (!s.ok()) errors.Add("complete: " + s.ToString());
          }
          if (got->empty()) std::this_thread::yield();
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  errors.ExpectNone();
  for (int g = 0; g < kGroups; ++g) {
    const std::string group = "g" + std::to_string(g);
    std::vector<int64_t>& seqs = sent[group];
    std::sort(seqs.begin(), seqs.end());
    EXPECT_EQ(seqs.size(), static_cast<size_t>(2 * kPerGroup)) << group;
    EXPECT_EQ(completed[group], seqs) << "group " << group << " completed out of seq order";
  }
}

// §4 across engines: threads in two engines send the same message ids at
// once. Each id yields one message; every send of it reports that seq.
MQLITE_TCK_GRADES(TckMultiEngine, Spec4_MultiEngineDedupKeyYieldsOneMessage, "G4");
TEST_P(TckMultiEngine, Spec4_MultiEngineDedupKeyYieldsOneMessage) {
  if (SkipUnlessShared()) return;
  ASSERT_TRUE(IsOk(CreateQueue(engine(), "in", WithDedup(60'000))));
  auto engines = OpenMore(1, [this] { return OpenEngine(); });
  ASSERT_EQ(engines.size(), 1u);
  Engine* both[2] = {&engine(), engines[0].get()};
  constexpr int kKeys = 100;
  Errors errors;
  std::mutex mu;
  std::map<int, std::set<int64_t>> seqs_of;
  std::vector<std::thread> threads;
  for (int e = 0; e < 2; ++e) {
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, e] {
        for (int k = 0; k < kKeys && !errors.any(); ++k) {
          const std::string id = "order-" + std::to_string(k);
          auto seq = SendMsg(*both[e], "in", "body of " + id, std::nullopt, 0, 0, id);
          if (!seq.ok()) {
            errors.Add("send " + id + ": " + seq.error().ToString());
            return;
          }
          std::lock_guard<std::mutex> l(mu);
          seqs_of[k].insert(*seq);
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  errors.ExpectNone();
  for (int k = 0; k < kKeys; ++k) {
    EXPECT_EQ(seqs_of[k].size(), 1u) << "message id order-" << k << " produced "
                                     << seqs_of[k].size() << " different seqs";
  }
  EXPECT_EQ(StatsOk("in").total, kKeys);
}

// §7.3 across engines: the same attempt id used by two engines at once
// claims one batch; both calls return exactly it.
MQLITE_TCK_GRADES(TckMultiEngine, Spec7_3_MultiEngineAttemptIdClaimsOneBatch, "G2", "G4");
TEST_P(TckMultiEngine, Spec7_3_MultiEngineAttemptIdClaimsOneBatch) {
  if (SkipUnlessShared()) return;
  MakeQueue("work");
  for (int i = 0; i < 10; ++i) SendOk("work", "w" + std::to_string(i));
  auto engines = OpenMore(1, [this] { return OpenEngine(); });
  ASSERT_EQ(engines.size(), 1u);
  Result<std::vector<Message>> got[2] = {Status::Internal("not run"), Status::Internal("not run")};
  std::thread a([&] { got[0] = ReceiveAttempt(engine(), "work", 4, "attempt-1"); });
  std::thread b([&] { got[1] = ReceiveAttempt(*engines[0], "work", 4, "attempt-1"); });
  a.join();
  b.join();
  ASSERT_TRUE(IsOk(got[0]));
  ASSERT_TRUE(IsOk(got[1]));
  EXPECT_EQ(Seqs(*got[0]), Seqs(*got[1]));
  ASSERT_EQ(got[0]->size(), 4u);
  for (size_t i = 0; i < got[0]->size(); ++i) {
    EXPECT_EQ((*got[0])[i].lock_token, (*got[1])[i].lock_token) << "seq " << (*got[0])[i].seq;
  }
  QueueStats st = StatsOk("work");
  EXPECT_EQ(st.locked, 4) << StatsString(st);
  EXPECT_EQ(st.active, 6) << StatsString(st);
}

// §7.1 on a shared store: an engine opening (and receiving) never takes a
// lease another engine still holds; once the lease lapses it is reclaimed and
// the old holder's settle is LockLost.
MQLITE_TCK_GRADES(TckMultiEngine, Spec7_1_MultiEngineOpenNeverStealsALiveLease, "G2", "G6");
TEST_P(TckMultiEngine, Spec7_1_MultiEngineOpenNeverStealsALiveLease) {
  if (SkipUnlessShared()) return;
  MakeQueue("q");
  const int64_t first = SendOk("q", "one");
  auto held = ReceiveOk("q");
  ASSERT_EQ(held.size(), 1u);
  ASSERT_EQ(held[0].seq, first);
  auto engines = OpenMore(1, [this] { return OpenEngine(); });
  ASSERT_EQ(engines.size(), 1u);
  Engine& other = *engines[0];
  auto none = ReceiveMany(other, "q", 10);
  ASSERT_TRUE(IsOk(none));
  EXPECT_TRUE(none->empty()) << "the new engine took seq " << (none->empty() ? 0 : (*none)[0].seq)
                             << " while its lease was live";
  ASSERT_TRUE(IsOk(other.RunMaintenance()));
  EXPECT_TRUE(IsOk(engine().Complete("q", held[0].seq, held[0].lock_token)));

  const int64_t second = SendOk("q", "two");
  auto lapsing = ReceiveOk("q");
  ASSERT_EQ(lapsing.size(), 1u);
  clock().Advance(kLock + 1);
  auto again = ReceiveMany(other, "q", 10);
  ASSERT_TRUE(IsOk(again));
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].seq, second);
  EXPECT_EQ((*again)[0].delivery_count, 2);
  EXPECT_TRUE(HasCode(engine().Complete("q", second, lapsing[0].lock_token),
                      StatusCode::kLockLost));
  EXPECT_TRUE(IsOk(other.Complete("q", second, (*again)[0].lock_token)));
}

namespace {

// Counts the Claims run through it, per queue, and lets a test wait for the
// n-th. For the change-feed test: the only way to see a long-poll re-run.
class ClaimCounter {
 public:
  void Claimed(const std::string& queue) {
    std::lock_guard<std::mutex> l(mu_);
    ++claims_[queue];
    cv_.notify_all();
  }
  int claims(const std::string& queue) {
    std::lock_guard<std::mutex> l(mu_);
    return claims_[queue];
  }
  bool WaitFor(const std::string& queue, int n) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, kHangBound, [&] { return claims_[queue] >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> claims_;
};

// Records the queues one transaction claimed from.
class CountingTxn final : public StoreTxnWrapper {
 public:
  CountingTxn(StoreTxn* target, std::set<std::string>* claimed)
      : StoreTxnWrapper(target), claimed_(claimed) {}
  Result<std::vector<Message>> Claim(const QueueRecord& q, const ClaimRequest& r) override {
    claimed_->insert(q.config.name);
    return StoreTxnWrapper::Claim(q, r);
  }

 private:
  std::set<std::string>* claimed_;
};

// Counts, per queue, the Runs that claimed from it: one per claiming body
// however often a wrapper inside it (the rerun harness) runs the body.
class CountingStore final : public StoreWrapper {
 public:
  CountingStore(std::unique_ptr<Store> target, ClaimCounter* counter)
      : StoreWrapper(std::move(target)), counter_(counter) {}

  Status Run(TxnKind kind, const RunOptions& options,
             const std::function<Status(StoreTxn&)>& body) override {
    std::set<std::string> claimed;
    Status s = StoreWrapper::Run(kind, options, [&](StoreTxn& txn) -> Status {
      claimed.clear();  // a store re-run starts over
      CountingTxn counting(&txn, &claimed);
      return body(counting);
    });
    for (const std::string& q : claimed) counter_->Claimed(q);
    return s;
  }

 private:
  ClaimCounter* counter_;
};

}  // namespace

// §9 change feed: a long-poll in one engine wakes when another engine sends
// to its queue — with the poll interval at a day, so only the feed can wake
// it — and sends to another queue do not make it claim again.
MQLITE_TCK_GRADES(TckMultiEngine, Spec9_MultiEngineLongPollWakesOnAnotherEnginesSend, "G2");
TEST_P(TckMultiEngine, Spec9_MultiEngineLongPollWakesOnAnotherEnginesSend) {
  if (SkipUnlessShared()) return;
  if (!engine().capabilities().change_feed) {
    GTEST_SKIP() << "capability: the store has no change feed (a long-poll sees other engines' "
                    "sends at its next poll_interval_ms re-check)";
  }
  MakeQueue("waited");
  MakeQueue("other");
  ClaimCounter counter;
  auto store = fixture().Open();
  ASSERT_TRUE(IsOk(store));
  // Counting inside the profile's wrappers, so that it sees each engine Run once.
  std::unique_ptr<Store> s = std::make_unique<CountingStore>(std::move(*store), &counter);
  if (profile().wrap) s = profile().wrap(std::move(s));
  EngineOptions options = engine_options();
  options.poll_interval_ms = 24LL * 3600 * 1000;
  auto waiter = Engine::Open(std::move(s), options);
  ASSERT_TRUE(IsOk(waiter));
  const int before = counter.claims("waited");

  // A Receive whose wait ends claims once more before it returns, so what it
  // got does not show a wake-up; how long it waited does (a wake-up takes
  // milliseconds, plus the store's coalescing window if it has one).
  Result<std::vector<Message>> got = Status::Internal("not run");
  std::chrono::steady_clock::duration waited{};
  std::thread poll([&] {
    ReceiveOptions o;
    o.wait_ms = 20'000;  // the most a Receive may wait (§5); far beyond a wake-up
    const auto start = std::chrono::steady_clock::now();
    got = (*waiter)->Receive("waited", o);
    waited = std::chrono::steady_clock::now() - start;
  });
  ASSERT_TRUE(counter.WaitFor("waited", before + 1)) << "the long-poll never claimed";
  for (int i = 0; i < 5; ++i) SendOk("other", "not for the waiter");
  const int64_t seq = SendOk("waited", "for the waiter");
  poll.join();
  ASSERT_TRUE(IsOk(got));
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].seq, seq);
  EXPECT_LT(waited, std::chrono::seconds(15))
      << "the long-poll was not woken by another engine's send; it found the message when "
         "its 20 s wait ended";
  // The first claim, and one after the wake-up; the sends to "other" woke
  // nothing here.
  EXPECT_EQ(counter.claims("waited") - before, 2)
      << "sends to another queue made the long-poll claim again";
  EXPECT_TRUE(IsOk((*waiter)->Close()));
}

namespace {

// A Store on the fixture's data, wrapped as OpenEngine wraps one (the
// profile's wrappers: the rerun harness, a mutant), for a test that plays
// another engine through the boundary itself.
Result<std::unique_ptr<Store>> OpenStore(StoreFixture& fixture, const StoreProfile& profile) {
  MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, fixture.Open());
  if (profile.wrap) store = profile.wrap(std::move(store));
  return store;
}

// For `if (SkipUnlessCapability(...)) return;`: true, with the skip and
// its reason recorded, when the store lacks the capability.
bool SkipUnlessCapability(bool has, const char* reason) {
  if (has) return false;
  [reason] { GTEST_SKIP() << reason; }();
  return true;
}
constexpr char kNoMaintenanceLock[] =
    "capability: the store has no maintenance lock (every engine maintains every queue on "
    "every pass)";
constexpr char kNoEngineRegistry[] =
    "capability: the store keeps no registry of engines (engines' retention defaults are not "
    "compared)";

Result<int64_t> QueueId(Store& store, std::string_view name) {
  int64_t id = 0;
  MQLITE_RETURN_IF_ERROR(store.Run(TxnKind::kRead, RunOptions{}, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, txn.GetQueue(name));
    id = q.id;
    return Status::OK();
  }));
  return id;
}

}  // namespace

// §9 maintenance try-lock: while another engine holds queue "held"'s
// maintenance lock, no one else gets it, and an engine's maintenance pass
// skips that queue (its due message stays scheduled; the report counts the
// skip) but still maintains "free". Once the lock is released the pass
// promotes it. A Receive's own bounded maintenance never waits for the lock.
MQLITE_TCK_GRADES(TckMultiEngine, Spec9_MultiEngineMaintenanceSkipsAQueueAnotherEngineHolds, "G4");
TEST_P(TckMultiEngine, Spec9_MultiEngineMaintenanceSkipsAQueueAnotherEngineHolds) {
  if (SkipUnlessShared() ||
      SkipUnlessCapability(engine().capabilities().maintenance_lock, kNoMaintenanceLock)) {
    return;
  }
  MakeQueue("held");
  MakeQueue("free");
  MQ_ASSERT_OK_AND_ASSIGN(const int64_t first,
                          SendMsg(engine(), "held", "h1", std::nullopt, 0, 1000));
  MQ_ASSERT_OK(SendMsg(engine(), "free", "f1", std::nullopt, 0, 1000));
  clock().Advance(1000);

  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> holder, OpenStore(fixture(), profile()));
  MQ_ASSERT_OK_AND_ASSIGN(const int64_t held_id, QueueId(*holder, "held"));
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MaintenanceLock> lock,
                          holder->TryLockMaintenance(held_id));
  ASSERT_NE(lock, nullptr) << "the maintenance lock of a queue nobody maintains was refused";
  {
    MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> third, OpenStore(fixture(), profile()));
    MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MaintenanceLock> again,
                            third->TryLockMaintenance(held_id));
    EXPECT_EQ(again, nullptr) << "a held maintenance lock was granted to another store";
  }

  MQ_ASSERT_OK_AND_ASSIGN(MaintenanceReport pass, engine().RunMaintenance());
  EXPECT_EQ(pass.queues_skipped, 1);
  EXPECT_EQ(pass.promoted, 1) << "the queue nobody else holds was not maintained";
  QueueStats held = StatsOk("held");
  EXPECT_EQ(held.scheduled, 1) << "a queue another engine holds was maintained: "
                               << StatsString(held);
  EXPECT_EQ(StatsOk("free").active, 1);

  lock.reset();
  MQ_ASSERT_OK_AND_ASSIGN(pass, engine().RunMaintenance());
  EXPECT_EQ(pass.queues_skipped, 0);
  EXPECT_EQ(pass.promoted, 1) << "the released queue was not maintained";
  held = StatsOk("held");
  EXPECT_EQ(held.active, 1) << StatsString(held);
  EXPECT_EQ(held.scheduled, 0) << StatsString(held);

  // A Receive promotes its queue's due messages itself, lock or no lock.
  MQ_ASSERT_OK_AND_ASSIGN(const int64_t second,
                          SendMsg(engine(), "held", "h2", std::nullopt, 0, 1000));
  clock().Advance(1000);
  MQ_ASSERT_OK_AND_ASSIGN(lock, holder->TryLockMaintenance(held_id));
  ASSERT_NE(lock, nullptr) << "a released maintenance lock stayed taken";
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "held", 10));
  EXPECT_EQ(Seqs(got), (std::vector<int64_t>{first, second}))
      << "a Receive left a due message scheduled while another engine held the queue's "
         "maintenance lock";
}

namespace {

// Who holds which queue's maintenance lock, as engines 0 and 1 were told. A
// grant while another engine holds the lock, or a maintenance step on a
// queue whose lock its engine does not hold, means two engines can maintain
// one queue at once.
class MaintenanceOracle {
 public:
  explicit MaintenanceOracle(Errors* errors) : errors_(errors) {}
  // The store answered `engine`'s request for the lock (after Granted when
  // it granted it).
  void Answered(int64_t queue, int engine) {
    std::lock_guard<std::mutex> l(mu_);
    ++answered_[{engine, queue}];
    cv_.notify_all();
  }
  // Keeps a lock `engine` was just granted until the other engine's request
  // for it in this pass has been answered too: so in every pass both
  // requests meet while the first granted lock is held, whatever the thread
  // timing. (Both walk the same queues in the same order, so neither waits
  // for a queue the other has passed.)
  void AwaitRival(int64_t queue, int engine) {
    std::unique_lock<std::mutex> l(mu_);
    if (!cv_.wait_for(l, kHangBound, [&] {
          return answered_[{1 - engine, queue}] >= answered_[{engine, queue}];
        })) {
      errors_->Add("engine " + std::to_string(1 - engine) + " never asked for queue id " +
                   std::to_string(queue) + "'s maintenance lock in this pass");
    }
  }
  void Granted(int64_t queue, int engine) {
    std::lock_guard<std::mutex> l(mu_);
    ++grants_[engine];
    auto [it, fresh] = holder_.emplace(queue, engine);
    if (!fresh) {
      errors_->Add("queue id " + std::to_string(queue) + ": maintenance lock granted to engine " +
                   std::to_string(engine) + " while engine " + std::to_string(it->second) +
                   " held it");
    }
  }
  void Released(int64_t queue, int engine) {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = holder_.find(queue); it != holder_.end() && it->second == engine) {
      holder_.erase(it);
    }
  }
  void Maintained(int64_t queue, int engine) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = holder_.find(queue);
    if (it == holder_.end() || it->second != engine) {
      errors_->Add("engine " + std::to_string(engine) + " maintained queue id " +
                   std::to_string(queue) + " without holding its maintenance lock");
    }
  }
  int64_t grants(int engine) {
    std::lock_guard<std::mutex> l(mu_);
    return grants_[engine];
  }

 private:
  Errors* errors_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, int> holder_;  // queue id → engine
  std::map<int, int64_t> grants_;
  std::map<std::pair<int, int64_t>, int64_t> answered_;  // (engine, queue id) → requests
};

// Tells the oracle when the lock it wraps is let go (before it is).
class ProbedLock final : public MaintenanceLock {
 public:
  ProbedLock(std::unique_ptr<MaintenanceLock> inner, MaintenanceOracle* oracle, int64_t queue,
             int engine)
      : inner_(std::move(inner)), oracle_(oracle), queue_(queue), engine_(engine) {}
  ~ProbedLock() override { oracle_->Released(queue_, engine_); }

 private:
  std::unique_ptr<MaintenanceLock> inner_;
  MaintenanceOracle* oracle_;
  int64_t queue_;
  int engine_;
};

// ExpireMessages and EnforceRetention run only in a maintenance pass (a
// Receive promotes and reclaims, never these).
class MaintenanceProbeTxn final : public StoreTxnWrapper {
 public:
  MaintenanceProbeTxn(StoreTxn* target, MaintenanceOracle* oracle, int engine)
      : StoreTxnWrapper(target), oracle_(oracle), engine_(engine) {}
  Result<int64_t> ExpireMessages(const QueueRecord& q, int64_t now, int64_t limit) override {
    oracle_->Maintained(q.id, engine_);
    return StoreTxnWrapper::ExpireMessages(q, now, limit);
  }
  Result<int64_t> EnforceRetention(const QueueRecord& q, const RetentionBounds& b, int64_t now,
                                   int64_t limit) override {
    oracle_->Maintained(q.id, engine_);
    return StoreTxnWrapper::EnforceRetention(q, b, now, limit);
  }

 private:
  MaintenanceOracle* oracle_;
  int engine_;
};

// One engine's view of the store, outside the profile's wrappers, so it
// sees the locks exactly as that engine was given them.
class MaintenanceProbeStore final : public StoreWrapper {
 public:
  MaintenanceProbeStore(std::unique_ptr<Store> target, MaintenanceOracle* oracle, int engine)
      : StoreWrapper(std::move(target)), oracle_(oracle), engine_(engine) {}
  Result<std::unique_ptr<MaintenanceLock>> TryLockMaintenance(int64_t queue_id) override {
    MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<MaintenanceLock> lock,
                            StoreWrapper::TryLockMaintenance(queue_id));
    if (lock) oracle_->Granted(queue_id, engine_);
    oracle_->Answered(queue_id, engine_);
    if (!lock) return lock;
    oracle_->AwaitRival(queue_id, engine_);
    return std::unique_ptr<MaintenanceLock>(
        new ProbedLock(std::move(lock), oracle_, queue_id, engine_));
  }

 protected:
  std::unique_ptr<StoreTxn> WrapTxn(StoreTxn* inner) override {
    return std::make_unique<MaintenanceProbeTxn>(inner, oracle_, engine_);
  }

 private:
  MaintenanceOracle* oracle_;
  int engine_;
};

}  // namespace

// §9 maintenance try-lock under contention: two engines start a maintenance
// pass together, over and over, and each holds every lock it is granted
// until the other engine has asked for it too and had its answer. No queue's
// lock is ever granted to both at once, no engine maintains a queue whose
// lock it was not given, every queue of every pass is either maintained or
// counted as skipped, and each due message is promoted exactly once.
MQLITE_TCK_GRADES(TckMultiEngine, Spec9_MultiEngineConcurrentMaintenanceNeverSharesAQueue, "G4");
TEST_P(TckMultiEngine, Spec9_MultiEngineConcurrentMaintenanceNeverSharesAQueue) {
  if (SkipUnlessShared() ||
      SkipUnlessCapability(engine().capabilities().maintenance_lock, kNoMaintenanceLock)) {
    return;
  }
  constexpr int kQueues = 6;
  constexpr int kPasses = 150;
  for (int q = 0; q < kQueues; ++q) {
    const std::string name = "m" + std::to_string(q);
    MakeQueue(name);
    MQ_ASSERT_OK(SendMsg(engine(), name, "due", std::nullopt, 0, 1000));
  }
  clock().Advance(1000);
  Errors errors;
  MaintenanceOracle oracle(&errors);
  std::vector<std::unique_ptr<Engine>> engines;
  for (int e = 0; e < 2; ++e) {
    MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, OpenStore(fixture(), profile()));
    MQ_ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<Engine> opened,
        Engine::Open(std::make_unique<MaintenanceProbeStore>(std::move(store), &oracle, e),
                     engine_options()));
    engines.push_back(std::move(opened));
  }
  int64_t skipped[2] = {0, 0};
  int64_t promoted = 0;
  std::mutex mu;
  std::barrier start(2);
  std::vector<std::thread> threads;
  for (int e = 0; e < 2; ++e) {
    threads.emplace_back([&, e] {
      for (int pass = 0; pass < kPasses; ++pass) {  // every pass, errors or not: the barrier
        start.arrive_and_wait();
        auto report = engines[e]->RunMaintenance();
        if (!report.ok()) {
          errors.Add("engine " + std::to_string(e) + ": " + report.error().ToString());
          continue;
        }
        std::lock_guard<std::mutex> l(mu);
        skipped[e] += report->queues_skipped;
        promoted += report->promoted;
      }
    });
  }
  for (auto& t : threads) t.join();
  errors.ExpectNone();
  for (int e = 0; e < 2; ++e) {
    EXPECT_EQ(oracle.grants(e) + skipped[e], int64_t{kQueues} * kPasses)
        << "engine " << e << ": a listed queue was neither maintained under its lock nor "
        << "counted in queues_skipped";
  }
  EXPECT_EQ(promoted, kQueues);
  for (int q = 0; q < kQueues; ++q) EXPECT_EQ(StatsOk("m" + std::to_string(q)).active, 1);
  for (auto& e : engines) EXPECT_TRUE(IsOk(e->Close()));
}

// §9 agreed retention defaults: an engine whose DLQ retention defaults
// differ from those of an engine still using the store is refused at open
// (InvalidArgument naming the option and both values) having changed
// nothing; one that agrees is admitted. Once every engine with the old
// defaults has closed, the new ones are admitted, and then set the terms.
MQLITE_TCK_GRADES(TckMultiEngine, Spec9_MultiEngineRetentionDefaultsMustAgree, "G7");
TEST_P(TckMultiEngine, Spec9_MultiEngineRetentionDefaultsMustAgree) {
  if (SkipUnlessShared() ||
      SkipUnlessCapability(engine().capabilities().engine_registry, kNoEngineRegistry)) {
    return;
  }
  auto open_with = [&](const EngineOptions& options) -> Result<std::unique_ptr<Engine>> {
    MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore(fixture(), profile()));
    return Engine::Open(std::move(store), options);
  };
  MakeQueue("kept");
  const int64_t seq = SendOk("kept", "one");
  const QueueStats before = StatsOk("kept");
  const EngineOptions old_defaults = engine_options();
  EngineOptions new_defaults = old_defaults;
  new_defaults.dlq_max_age_ms = 24LL * 3600 * 1000;  // the default is 14 days
  ASSERT_NE(new_defaults.dlq_max_age_ms, old_defaults.dlq_max_age_ms);

  auto refused = open_with(new_defaults);
  MQ_ASSERT_CODE(refused, kInvalidArgument) << "an engine with other retention defaults opened";
  EXPECT_TRUE(MessageHas(refused.error(), "dlq_max_age_ms"));
  EXPECT_TRUE(MessageHas(refused.error(), std::to_string(new_defaults.dlq_max_age_ms)));
  EXPECT_TRUE(MessageHas(refused.error(), std::to_string(old_defaults.dlq_max_age_ms)));
  EXPECT_TRUE(StatsEq(StatsOk("kept"), before));
  EXPECT_EQ(Seqs(PeekAll("kept")), std::vector<int64_t>{seq});
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<QueueConfig> queues, engine().ListQueues());
  EXPECT_EQ(queues.size(), 1u);

  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> agreeing, open_with(old_defaults));
  // Unbounded spelled two ways is one value.
  EngineOptions unbounded = new_defaults;
  unbounded.dlq_max_count = 0;
  EngineOptions also_unbounded = new_defaults;
  also_unbounded.dlq_max_count = -1;
  MQ_EXPECT_CODE(open_with(unbounded), kInvalidArgument) << "dlq_max_count differs too";

  // Every engine with the old defaults closes: the fleet restarts with new ones.
  CloseEngine();
  MQ_ASSERT_OK(agreeing->Close());
  agreeing.reset();
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> renewed, open_with(unbounded));
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> renewed_too, open_with(also_unbounded));
  MQ_EXPECT_CODE(open_with(old_defaults), kInvalidArgument)
      << "the live engines' new defaults are the terms now";
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats after, renewed->Stats("kept"));
  EXPECT_EQ(after.total, 1);
  MQ_EXPECT_OK(renewed_too->Close());
  MQ_EXPECT_OK(renewed->Close());
}

}  // namespace mqlite::tck
