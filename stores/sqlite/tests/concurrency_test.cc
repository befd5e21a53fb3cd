// Many threads on one engine (SPEC §9: every method is thread-safe), checked
// by an oracle that lives OUTSIDE the engine: a mutex-protected map of which
// consumer holds which seq. Also runs under ThreadSanitizer (ctest label
// `concurrency`), so sizes are bounded to finish in seconds there too.
//
// The only wall-clock reads are (a) a generous bound that turns a hang into a
// failure and (b) checking that a long-poll woke BEFORE its own wait ran out,
// which is the behaviour under test (SPEC §5, §9), not a performance budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/sqlite.h"
#include "test_util.h"

namespace mqlite {
namespace {

using ::mqlite::testing::kT0;
using ::mqlite::testing::OpenEngineAt;
using ::mqlite::testing::TempDir;

using Clock = std::chrono::steady_clock;
// Turns a hang into a failure; far above what the tests need even under TSan.
constexpr auto kHangBound = std::chrono::seconds(120);

// Thread-safe collection of failures seen on worker threads, reported on the
// main thread.
class Errors {
 public:
  void Add(const std::string& e) {
    std::lock_guard<std::mutex> l(mu_);
    if (errors_.size() < 20) errors_.push_back(e);
    ++count_;
    any_.store(true);
  }
  // Lets workers stop early instead of running into the hang bound.
  bool any() const { return any_.load(); }
  void ExpectNone() {
    std::lock_guard<std::mutex> l(mu_);
    EXPECT_EQ(count_, 0) << "first errors:\n" << Join();
  }

 private:
  std::string Join() const {
    std::string out;
    for (const std::string& e : errors_) out += "  " + e + "\n";
    return out;
  }
  std::mutex mu_;
  std::vector<std::string> errors_;
  int count_ = 0;
  std::atomic<bool> any_{false};
};

class ConcurrencyTest : public ::testing::Test {
 protected:
  ConcurrencyTest() : path_(dir_.File("queue.db")) {}

  // Opens with the real SystemClock and background maintenance on, so the
  // maintenance thread races with the workers too.
  void OpenSystemClock() {
    EngineOptions o;
    o.clock = nullptr;  // SystemClock()
    o.background_maintenance = true;
    o.maintenance_interval_ms = 20;
    MQ_ASSERT_OK_AND_ASSIGN(engine_, OpenEngineAt(path_, o));
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<Engine> engine_;
};

// ---- exclusivity oracle (SPEC §5 G2, §6, §9) -----------------------------------------------

TEST_F(ConcurrencyTest, Spec9_NoMessageIsHeldByTwoConsumersAndEachIsCompletedOnce) {
  OpenSystemClock();
  ASSERT_NE(engine_, nullptr);
  // A long lease so no lease expires during the run, even under TSan.
  MQ_ASSERT_OK(engine_->CreateQueue({.name = "work", .lock_duration_ms = 600'000}));

  constexpr int kProducers = 4;
  constexpr int kConsumers = 4;
  constexpr int kPerProducer = 500;
  constexpr int kTotal = kProducers * kPerProducer;

  Errors errors;
  std::mutex mu;                       // guards the oracle below
  std::map<int64_t, int> holder;       // seq → consumer holding its lease
  std::map<int64_t, int> completions;  // seq → successful completes
  std::set<int64_t> sent;              // seqs acknowledged to producers
  std::map<int64_t, int> abandoned;    // seq → abandons
  std::atomic<int> completed{0};
  std::atomic<int> double_holds{0};
  const auto deadline = Clock::now() + kHangBound;

  auto producer = [&](int p) {
    int i = 0;
    while (i < kPerProducer) {
      if (i % 2 == 0 && i + 10 <= kPerProducer) {
        std::vector<OutgoingMessage> batch;
        for (int j = 0; j < 10; ++j) {
          batch.push_back({.body = "p" + std::to_string(p) + "-" + std::to_string(i + j)});
        }
        Result<std::vector<int64_t>> seqs = engine_->SendBatch("work", batch);
        if (!seqs.has_value()) {
          errors.Add("SendBatch: " + seqs.status().ToString());
          return;
        }
        std::lock_guard<std::mutex> l(mu);
        for (int64_t s : *seqs) {
          if (!sent.insert(s).second) errors.Add("seq assigned twice: " + std::to_string(s));
        }
        i += 10;
      } else {
        Result<int64_t> seq =
            engine_->Send("work", {.body = "p" + std::to_string(p) + "-" + std::to_string(i)});
        if (!seq.has_value()) {
          errors.Add("Send: " + seq.status().ToString());
          return;
        }
        std::lock_guard<std::mutex> l(mu);
        if (!sent.insert(*seq).second) errors.Add("seq assigned twice: " + std::to_string(*seq));
        ++i;
      }
    }
  };

  auto consumer = [&](int c) {
    const bool use_batch = c % 2 == 0;
    while (completed.load() < kTotal && !errors.any() && Clock::now() < deadline) {
      Result<std::vector<Message>> got =
          engine_->Receive("work", {.max_messages = 8, .wait_ms = 50});
      if (!got.has_value()) {
        errors.Add("Receive: " + got.status().ToString());
        return;
      }
      std::vector<SettleItem> to_complete;
      for (const Message& m : *got) {
        {
          std::lock_guard<std::mutex> l(mu);
          auto [it, inserted] = holder.emplace(m.seq, c);
          if (!inserted) {
            ++double_holds;
            errors.Add("seq " + std::to_string(m.seq) + " held by consumers " +
                       std::to_string(it->second) + " and " + std::to_string(c));
            continue;
          }
        }
        if (m.state != MessageState::kLocked || m.lock_token.empty()) {
          errors.Add("received seq " + std::to_string(m.seq) + " not locked");
        }
        if (m.delivery_count == 1 && m.seq % 7 == 0) {
          // Give it back once: the oracle forgets the holder BEFORE the lease is
          // released, so a redelivery to someone else is never a false alarm.
          {
            std::lock_guard<std::mutex> l(mu);
            holder.erase(m.seq);
            ++abandoned[m.seq];
          }
          Status s = engine_->Abandon("work", m.seq, m.lock_token);
          if (!s.ok()) errors.Add("Abandon " + std::to_string(m.seq) + ": " + s.ToString());
          continue;
        }
        if (m.seq % 11 == 0) {
          Result<int64_t> until = engine_->Renew("work", m.seq, m.lock_token);
          if (!until.has_value()) {
            errors.Add("Renew " + std::to_string(m.seq) + ": " + until.status().ToString());
          }
        }
        to_complete.push_back({m.seq, m.lock_token});
      }
      std::vector<Status> results;
      if (use_batch && !to_complete.empty()) {
        Result<std::vector<Status>> r = engine_->CompleteBatch("work", to_complete);
        if (!r.has_value()) {
          errors.Add("CompleteBatch: " + r.status().ToString());
          return;
        }
        results = std::move(*r);
      } else {
        for (const SettleItem& it : to_complete) {
          results.push_back(engine_->Complete("work", it.seq, it.token));
        }
      }
      if (results.size() != to_complete.size()) {
        errors.Add("CompleteBatch returned " + std::to_string(results.size()) + " results for " +
                   std::to_string(to_complete.size()) + " items");
        return;
      }
      for (size_t i = 0; i < to_complete.size(); ++i) {
        const int64_t seq = to_complete[i].seq;
        if (!results[i].ok()) {
          errors.Add("Complete " + std::to_string(seq) + ": " + results[i].ToString());
          continue;
        }
        std::lock_guard<std::mutex> l(mu);
        holder.erase(seq);
        ++completions[seq];
        ++completed;
      }
    }
  };

  std::vector<std::thread> threads;
  for (int c = 0; c < kConsumers; ++c) threads.emplace_back(consumer, c);
  for (int p = 0; p < kProducers; ++p) threads.emplace_back(producer, p);
  for (std::thread& t : threads) t.join();

  errors.ExpectNone();
  EXPECT_EQ(double_holds.load(), 0);
  EXPECT_EQ(sent.size(), static_cast<size_t>(kTotal));
  EXPECT_EQ(completed.load(), kTotal);
  EXPECT_EQ(completions.size(), sent.size());
  for (const auto& [seq, n] : completions) {
    EXPECT_EQ(n, 1) << "seq " << seq << " completed " << n << " times";
    EXPECT_EQ(sent.count(seq), 1u) << "completed seq " << seq << " was never sent";
  }
  EXPECT_TRUE(holder.empty());
  EXPECT_FALSE(abandoned.empty());
  for (const auto& [seq, n] : abandoned) EXPECT_EQ(n, 1) << seq;
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, engine_->Stats("work"));
  EXPECT_EQ(st.total, 0);
  MQ_EXPECT_OK(engine_->Close());
}

TEST_F(ConcurrencyTest, Spec5_ReceiveAndDeleteDeliversEachMessageOnce) {
  OpenSystemClock();
  ASSERT_NE(engine_, nullptr);
  MQ_ASSERT_OK(engine_->CreateQueue({.name = "rd"}));
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 250;
  constexpr int kTotal = kProducers * kPerProducer;
  Errors errors;
  std::mutex mu;
  std::multiset<int64_t> received;
  std::set<int64_t> sent;
  std::atomic<int> count{0};
  const auto deadline = Clock::now() + kHangBound;

  std::vector<std::thread> threads;
  for (int c = 0; c < 4; ++c) {
    threads.emplace_back([&] {
      while (count.load() < kTotal && !errors.any() && Clock::now() < deadline) {
        Result<std::vector<Message>> got = engine_->Receive(
            "rd", {.max_messages = 16, .mode = ReceiveMode::kReceiveAndDelete, .wait_ms = 50});
        if (!got.has_value()) {
          errors.Add("Receive: " + got.status().ToString());
          return;
        }
        std::lock_guard<std::mutex> l(mu);
        for (const Message& m : *got) {
          if (!m.lock_token.empty()) errors.Add("R&D message carries a token");
          received.insert(m.seq);
          ++count;
        }
      }
    });
  }
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        Result<int64_t> seq = engine_->Send("rd", {.body = std::to_string(p * 1000 + i)});
        if (!seq.has_value()) {
          errors.Add("Send: " + seq.status().ToString());
          return;
        }
        std::lock_guard<std::mutex> l(mu);
        sent.insert(*seq);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  errors.ExpectNone();
  EXPECT_EQ(received.size(), static_cast<size_t>(kTotal));
  EXPECT_EQ(std::set<int64_t>(received.begin(), received.end()), sent);
  for (int64_t s : sent) EXPECT_EQ(received.count(s), 1u) << "seq " << s;
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, engine_->Stats("rd"));
  EXPECT_EQ(st.total, 0);
}

// ---- group order under concurrency (SPEC §5) ---------------------------------------------

TEST_F(ConcurrencyTest, Spec5_GroupsStayInOrderWithOneInFlightUnderConcurrentConsumers) {
  OpenSystemClock();
  ASSERT_NE(engine_, nullptr);
  MQ_ASSERT_OK(engine_->CreateQueue(
      {.name = "groups", .lock_duration_ms = 600'000, .ordering = Ordering::kGroupFifo}));
  constexpr int kGroups = 8;
  constexpr int kPerGroup = 40;
  std::map<std::string, std::vector<int64_t>> want;  // group → seqs in send order
  for (int i = 0; i < kGroups * kPerGroup; ++i) {
    std::string g = "g" + std::to_string(i % kGroups);
    MQ_ASSERT_OK_AND_ASSIGN(
        int64_t seq,
        engine_->Send("groups", {.body = std::to_string(i), .group_id = g, .priority = i % 10}));
    want[g].push_back(seq);
  }

  Errors errors;
  std::mutex mu;
  std::map<std::string, int64_t> in_flight;          // group → seq held
  std::map<std::string, std::vector<int64_t>> done;  // group → completion order
  std::atomic<int> completed{0};
  const int total = kGroups * kPerGroup;
  const auto deadline = Clock::now() + kHangBound;

  std::vector<std::thread> threads;
  for (int c = 0; c < 4; ++c) {
    threads.emplace_back([&, c] {
      while (completed.load() < total && !errors.any() && Clock::now() < deadline) {
        Result<std::vector<Message>> got =
            engine_->Receive("groups", {.max_messages = 4, .wait_ms = 50});
        if (!got.has_value()) {
          errors.Add("Receive: " + got.status().ToString());
          return;
        }
        std::set<std::string> in_batch;
        for (const Message& m : *got) {
          const std::string g = m.group_id.value_or("<none>");
          if (!in_batch.insert(g).second) errors.Add("two messages of " + g + " in one batch");
          {
            std::lock_guard<std::mutex> l(mu);
            auto [it, inserted] = in_flight.emplace(g, m.seq);
            if (!inserted) {
              errors.Add("group " + g + " has " + std::to_string(it->second) + " and " +
                         std::to_string(m.seq) + " in flight");
              continue;
            }
          }
          if (m.delivery_count == 1 && (m.seq + c) % 5 == 0) {
            {
              std::lock_guard<std::mutex> l(mu);
              in_flight.erase(g);
            }
            Status s = engine_->Abandon("groups", m.seq, m.lock_token);
            if (!s.ok()) errors.Add("Abandon: " + s.ToString());
            continue;
          }
          // Record the completion order while this consumer still holds the
          // group, and release the oracle's entry BEFORE the lease ends: the
          // next member may be claimed the instant Complete commits.
          {
            std::lock_guard<std::mutex> l(mu);
            done[g].push_back(m.seq);
            in_flight.erase(g);
          }
          Status s = engine_->Complete("groups", m.seq, m.lock_token);
          if (!s.ok()) errors.Add("Complete: " + s.ToString());
          ++completed;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  errors.ExpectNone();
  EXPECT_EQ(completed.load(), total);
  EXPECT_EQ(done, want) << "each group completed in seq order";
}

// ---- long-poll and Close (SPEC §5, §9) ------------------------------------------------------

TEST_F(ConcurrencyTest, Spec9_CloseWakesBlockedLongPollsWithClosed) {
  ManualClock clock(kT0);
  EngineOptions o;
  o.clock = &clock;
  o.background_maintenance = false;
  MQ_ASSERT_OK_AND_ASSIGN(engine_, OpenEngineAt(path_, o));
  MQ_ASSERT_OK(engine_->CreateQueue({.name = "empty"}));

  constexpr int kWaiters = 3;
  constexpr int64_t kWaitMs = 20'000;
  std::atomic<int> entered{0};
  std::vector<Status> results(kWaiters);
  std::vector<std::chrono::milliseconds> elapsed(kWaiters);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      auto start = Clock::now();
      ++entered;
      Result<std::vector<Message>> r =
          engine_->Receive("empty", {.max_messages = 1, .wait_ms = kWaitMs});
      elapsed[i] = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
      results[i] = r.status();
    });
  }
  while (entered.load() < kWaiters) std::this_thread::yield();
  // Not needed for correctness (a call that starts after Close also gets
  // Closed); it only makes it likely the waiters are already blocked.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  MQ_EXPECT_OK(engine_->Close());
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kWaiters; ++i) {
    MQ_EXPECT_CODE(results[i], kClosed) << "waiter " << i;
    // Woken by Close, not by the end of its own 20 s wait.
    EXPECT_LT(elapsed[i].count(), kWaitMs) << "waiter " << i;
  }
}

TEST_F(ConcurrencyTest, Spec5_LongPollIsWokenByASend) {
  ManualClock clock(kT0);
  EngineOptions o;
  o.clock = &clock;
  o.background_maintenance = false;
  MQ_ASSERT_OK_AND_ASSIGN(engine_, OpenEngineAt(path_, o));
  MQ_ASSERT_OK(engine_->CreateQueue({.name = "q"}));
  constexpr int64_t kWaitMs = 20'000;
  std::atomic<bool> entered{false};
  Result<std::vector<Message>> got = Status::Internal("not run");
  std::chrono::milliseconds elapsed{0};
  std::thread waiter([&] {
    auto start = Clock::now();
    entered = true;
    got = engine_->Receive("q", {.max_messages = 4, .wait_ms = kWaitMs});
    elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  });
  while (!entered.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, engine_->Send("q", {.body = "wake up"}));
  waiter.join();
  MQ_ASSERT_OK(got);
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].seq, seq);
  EXPECT_EQ((*got)[0].state, MessageState::kLocked);
  EXPECT_LT(elapsed.count(), kWaitMs) << "woken by the send, not by the end of the wait";
}

TEST_F(ConcurrencyTest, Spec9_CloseDuringSendsKeepsEveryAcknowledgedSend) {
  OpenSystemClock();
  ASSERT_NE(engine_, nullptr);
  MQ_ASSERT_OK(engine_->CreateQueue({.name = "q"}));
  constexpr int kThreads = 4;
  std::mutex mu;
  std::map<int64_t, std::string> acked;
  std::vector<Status> final_status(kThreads);
  std::atomic<int> count{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1'000'000; ++i) {
        std::string body = "t" + std::to_string(t) + "-" + std::to_string(i);
        Result<int64_t> seq = engine_->Send("q", {.body = body});
        if (!seq.has_value()) {
          final_status[t] = seq.status();
          return;
        }
        std::lock_guard<std::mutex> l(mu);
        acked.emplace(*seq, body);
        ++count;
      }
    });
  }
  const auto deadline = Clock::now() + kHangBound;
  while (count.load() < 200 && Clock::now() < deadline) std::this_thread::yield();
  ASSERT_GE(count.load(), 200) << "senders made no progress";
  MQ_ASSERT_OK(engine_->Close());
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    MQ_EXPECT_CODE(final_status[t], kClosed) << "thread " << t;
  }

  ManualClock clock(kT0);
  EngineOptions o;
  o.clock = &clock;
  o.background_maintenance = false;
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> reopened, OpenEngineAt(path_, o));
  PeekOptions p;
  p.max_messages = 1'000;
  std::map<int64_t, std::string> stored;
  for (;;) {
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> page, reopened->Peek("q", p));
    if (page.empty()) break;
    p.from_seq = page.back().seq;
    for (const Message& m : page) stored.emplace(m.seq, m.body);
  }
  EXPECT_EQ(stored, acked) << "every acknowledged send is stored; nothing else is";
}

}  // namespace
}  // namespace mqlite
