// TckConcurrency — many threads on one engine (SPEC §9: every method is
// thread-safe), long-poll wake-ups (§5), Close during calls (§9) and
// cancellation and deadlines (§10).
//
// The exclusivity oracles live OUTSIDE the engine: a mutex-protected map of
// which consumer holds which seq. These tests also run under ThreadSanitizer
// (ctest label `concurrency`), so sizes are bounded to finish in seconds there
// too. Leases are driven by the fixture's ManualClock, which the workers never
// move, so no lease expires behind the oracle's back.
//
// The only wall-clock reads are (a) generous bounds that turn a hang into a
// failure and (b) checks that a waiting call returned BEFORE its own wait ran
// out, which is the behaviour under test (SPEC §5, §9, §10), not a
// performance budget.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/store.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorConcurrency() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

// "Returned long before the 20 s wait": a functional check, not a perf budget.
constexpr auto kFunctionalBound = std::chrono::seconds(10);

ReceiveOptions Wait(int64_t wait_ms) {
  ReceiveOptions o;
  o.max_messages = 1;
  o.wait_ms = wait_ms;
  return o;
}

CallOptions Stopped() {
  static std::stop_source src = [] {
    std::stop_source s;
    s.request_stop();
    return s;
  }();
  CallOptions c;
  c.stop_token = src.get_token();
  return c;
}

CallOptions PastDeadline() {
  CallOptions c;
  c.deadline = Steady::now() - milliseconds(1);
  return c;
}

// ---- exclusivity oracle (SPEC §5 G2, §6, §9) -----------------------------------------------

MQLITE_TCK_GRADES(TckConcurrency, Spec9_NoMessageIsHeldByTwoConsumersAndEachIsCompletedOnce, "G2");
TEST_P(TckConcurrency, Spec9_NoMessageIsHeldByTwoConsumersAndEachIsCompletedOnce) {
  // Background maintenance on, so its thread races with the workers too.
  engine_options().background_maintenance = true;
  engine_options().maintenance_interval_ms = 20;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  Engine& e = engine();
  // A long lease so no lease expires during the run, even under TSan.
  MQ_ASSERT_OK(e.CreateQueue({.name = "work", .lock_duration_ms = 600'000}));

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
  const auto deadline = Steady::now() + kHangBound;

  auto producer = [&](int p) {
    int i = 0;
    while (i < kPerProducer) {
      if (i % 2 == 0 && i + 10 <= kPerProducer) {
        std::vector<OutgoingMessage> batch;
        for (int j = 0; j < 10; ++j) {
          batch.push_back({.body = "p" + std::to_string(p) + "-" + std::to_string(i + j)});
        }
        Result<std::vector<int64_t>> seqs = SendBatchSeqs(e, "work", batch);
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
            e.Send("work", {.body = "p" + std::to_string(p) + "-" + std::to_string(i)});
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
    while (completed.load() < kTotal && !errors.any() && Steady::now() < deadline) {
      Result<std::vector<Message>> got = e.Receive("work", {.max_messages = 8, .wait_ms = 50});
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
          Status s = e.Abandon("work", m.seq, m.lock_token);
          if (!s.ok()) errors.Add("Abandon " + std::to_string(m.seq) + ": " + s.ToString());
          continue;
        }
        if (m.seq % 11 == 0) {
          Result<int64_t> until = e.Renew("work", m.seq, m.lock_token);
          if (!until.has_value()) {
            errors.Add("Renew " + std::to_string(m.seq) + ": " + until.status().ToString());
          }
        }
        to_complete.push_back({m.seq, m.lock_token});
      }
      std::vector<Status> results;
      if (use_batch && !to_complete.empty()) {
        Result<std::vector<Status>> r = e.CompleteBatch("work", to_complete);
        if (!r.has_value()) {
          errors.Add("CompleteBatch: " + r.status().ToString());
          return;
        }
        results = std::move(*r);
      } else {
        for (const SettleItem& it : to_complete) {
          results.push_back(e.Complete("work", it.seq, it.token));
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
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, e.Stats("work"));
  EXPECT_EQ(st.total, 0);
  MQ_EXPECT_OK(e.Close());
}

MQLITE_TCK_GRADES(TckConcurrency, Spec5_ReceiveAndDeleteDeliversEachMessageOnce, "G2");
TEST_P(TckConcurrency, Spec5_ReceiveAndDeleteDeliversEachMessageOnce) {
  // Background maintenance on, so its thread races with the workers too.
  engine_options().background_maintenance = true;
  engine_options().maintenance_interval_ms = 20;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  Engine& e = engine();
  MQ_ASSERT_OK(e.CreateQueue({.name = "rd"}));
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 250;
  constexpr int kTotal = kProducers * kPerProducer;
  Errors errors;
  std::mutex mu;
  std::multiset<int64_t> received;
  std::set<int64_t> sent;
  std::atomic<int> count{0};
  const auto deadline = Steady::now() + kHangBound;

  std::vector<std::thread> threads;
  for (int c = 0; c < 4; ++c) {
    threads.emplace_back([&] {
      while (count.load() < kTotal && !errors.any() && Steady::now() < deadline) {
        Result<std::vector<Message>> got = e.Receive(
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
        Result<int64_t> seq = e.Send("rd", {.body = std::to_string(p * 1000 + i)});
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
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, e.Stats("rd"));
  EXPECT_EQ(st.total, 0);
}

// ---- group order under concurrency (SPEC §5) ---------------------------------------------

MQLITE_TCK_GRADES(TckConcurrency, Spec5_GroupsStayInOrderWithOneInFlightUnderConcurrentConsumers,
                  "G2", "G3");
TEST_P(TckConcurrency, Spec5_GroupsStayInOrderWithOneInFlightUnderConcurrentConsumers) {
  // Background maintenance on, so its thread races with the workers too.
  engine_options().background_maintenance = true;
  engine_options().maintenance_interval_ms = 20;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  Engine& e = engine();
  MQ_ASSERT_OK(e.CreateQueue(
      {.name = "groups", .lock_duration_ms = 600'000, .ordering = Ordering::kGroupFifo}));
  constexpr int kGroups = 8;
  constexpr int kPerGroup = 40;
  std::map<std::string, std::vector<int64_t>> want;  // group → seqs in send order
  for (int i = 0; i < kGroups * kPerGroup; ++i) {
    std::string g = "g" + std::to_string(i % kGroups);
    MQ_ASSERT_OK_AND_ASSIGN(
        int64_t seq,
        e.Send("groups", {.body = std::to_string(i), .group_id = g, .priority = i % 10}));
    want[g].push_back(seq);
  }

  Errors errors;
  std::mutex mu;
  std::map<std::string, int64_t> in_flight;          // group → seq held
  std::map<std::string, std::vector<int64_t>> done;  // group → completion order
  std::atomic<int> completed{0};
  const int total = kGroups * kPerGroup;
  const auto deadline = Steady::now() + kHangBound;

  std::vector<std::thread> threads;
  for (int c = 0; c < 4; ++c) {
    threads.emplace_back([&, c] {
      while (completed.load() < total && !errors.any() && Steady::now() < deadline) {
        Result<std::vector<Message>> got = e.Receive("groups", {.max_messages = 4, .wait_ms = 50});
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
            Status s = e.Abandon("groups", m.seq, m.lock_token);
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
          Status s = e.Complete("groups", m.seq, m.lock_token);
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

MQLITE_TCK_GRADES(TckConcurrency, Spec9_CloseWakesBlockedLongPollsWithClosed, "G2");
TEST_P(TckConcurrency, Spec9_CloseWakesBlockedLongPollsWithClosed) {
  Engine& e = engine();
  MQ_ASSERT_OK(e.CreateQueue({.name = "empty"}));

  constexpr int kWaiters = 3;
  constexpr int64_t kWaitMs = 20'000;
  std::atomic<int> entered{0};
  std::vector<Status> results(kWaiters);
  std::vector<std::chrono::milliseconds> elapsed(kWaiters);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      auto start = Steady::now();
      ++entered;
      Result<std::vector<Message>> r = e.Receive("empty", {.max_messages = 1, .wait_ms = kWaitMs});
      elapsed[i] = std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - start);
      results[i] = r.status();
    });
  }
  EXPECT_TRUE(SpinUntil([&] { return entered.load() == kWaiters; })) << "the waiters did not start";
  // Not needed for correctness (a call that starts after Close also gets
  // Closed); it only makes it likely the waiters are already blocked.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  MQ_EXPECT_OK(e.Close());
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kWaiters; ++i) {
    MQ_EXPECT_CODE(results[i], kClosed) << "waiter " << i;
    // Woken by Close, not by the end of its own 20 s wait.
    EXPECT_LT(elapsed[i].count(), kWaitMs) << "waiter " << i;
  }
}

MQLITE_TCK_GRADES(TckConcurrency, Spec5_LongPollIsWokenByASend, "G2");
TEST_P(TckConcurrency, Spec5_LongPollIsWokenByASend) {
  Engine& e = engine();
  MQ_ASSERT_OK(e.CreateQueue({.name = "q"}));
  constexpr int64_t kWaitMs = 20'000;
  std::atomic<bool> entered{false};
  Result<std::vector<Message>> got = Status::Internal("not run");
  std::chrono::milliseconds elapsed{0};
  std::thread waiter([&] {
    auto start = Steady::now();
    entered = true;
    got = e.Receive("q", {.max_messages = 4, .wait_ms = kWaitMs});
    elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - start);
  });
  EXPECT_TRUE(SpinUntil([&] { return entered.load(); })) << "the waiter did not start";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, e.Send("q", {.body = "wake up"}));
  waiter.join();
  MQ_ASSERT_OK(got);
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].seq, seq);
  EXPECT_EQ((*got)[0].state, MessageState::kLocked);
  EXPECT_LT(elapsed.count(), kWaitMs) << "woken by the send, not by the end of the wait";
}

MQLITE_TCK_GRADES(TckConcurrency, Spec9_CloseDuringSendsKeepsEveryAcknowledgedSend, "G1", "G6");
TEST_P(TckConcurrency, Spec9_CloseDuringSendsKeepsEveryAcknowledgedSend) {
  // Background maintenance on, so its thread races with the workers too.
  engine_options().background_maintenance = true;
  engine_options().maintenance_interval_ms = 20;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  Engine& e = engine();
  MQ_ASSERT_OK(e.CreateQueue({.name = "q"}));
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
        Result<int64_t> seq = e.Send("q", {.body = body});
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
  ASSERT_TRUE(SpinUntil([&] { return count.load() >= 200; })) << "senders made no progress";
  MQ_ASSERT_OK(e.Close());
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    MQ_EXPECT_CODE(final_status[t], kClosed) << "thread " << t;
  }

  engine_options().background_maintenance = false;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAllOf(engine(), "q"));
  std::map<int64_t, std::string> stored;
  for (const Message& m : all) stored.emplace(m.seq, m.body);
  EXPECT_EQ(stored, acked) << "every acknowledged send is stored; nothing else is";
}

// ---- long-poll (SPEC §5) --------------------------------------------------------------------

MQLITE_TCK_GRADES(TckConcurrency, Spec5_WaitingReceiveIsWokenBySendFromAnotherThread, "G2");
TEST_P(TckConcurrency, Spec5_WaitingReceiveIsWokenBySendFromAnotherThread) {
  // SPEC §5
  MQ_ASSERT_OK(CreateQueue(engine(), "lp"));
  std::promise<void> started;
  auto started_f = started.get_future();
  auto fut = std::async(std::launch::async, [&] {
    started.set_value();
    const auto t0 = Steady::now();
    Result<std::vector<Message>> r = engine().Receive("lp", Wait(20'000));
    return std::make_pair(std::move(r), Steady::now() - t0);
  });
  started_f.wait();
  // Give the receiver a moment to start waiting (if it has not, the message
  // is simply there when it looks: same observable result).
  std::this_thread::sleep_for(milliseconds(100));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "lp", "wake up"));

  ASSERT_EQ(fut.wait_for(kFunctionalBound), std::future_status::ready)
      << "Receive(wait 20 s) was not woken by the Send";
  auto [r, took] = fut.get();
  MQ_ASSERT_OK(r);
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].seq, seq);
  EXPECT_EQ((*r)[0].body, "wake up");
  EXPECT_FALSE((*r)[0].lock_token.empty());
  EXPECT_LT(took, kFunctionalBound);
}

MQLITE_TCK_GRADES(TckConcurrency, Spec5_Spec9_CloseWakesAWaitingReceiveWithClosed, "G2");
TEST_P(TckConcurrency, Spec5_Spec9_CloseWakesAWaitingReceiveWithClosed) {
  // SPEC §5, §9
  MQ_ASSERT_OK(CreateQueue(engine(), "lp"));
  std::promise<void> started;
  auto started_f = started.get_future();
  auto fut = std::async(std::launch::async, [&] {
    started.set_value();
    const auto t0 = Steady::now();
    Result<std::vector<Message>> r = engine().Receive("lp", Wait(20'000));
    return std::make_pair(r.status(), Steady::now() - t0);
  });
  started_f.wait();
  std::this_thread::sleep_for(milliseconds(100));
  MQ_ASSERT_OK(engine().Close());

  ASSERT_EQ(fut.wait_for(kFunctionalBound), std::future_status::ready)
      << "Receive(wait 20 s) was not woken by Close";
  auto [s, took] = fut.get();
  MQ_EXPECT_CODE(s, kClosed);
  EXPECT_LT(took, kFunctionalBound);
  // Later calls are fenced too.
  MQ_EXPECT_CODE(engine().Receive("lp", Wait(0)), kClosed);
}

MQLITE_TCK_GRADES(TckConcurrency, Spec5_ShortWaitOnEmptyQueueReturnsEmptyOk, "G2");
TEST_P(TckConcurrency, Spec5_ShortWaitOnEmptyQueueReturnsEmptyOk) {
  // SPEC §5
  MQ_ASSERT_OK(CreateQueue(engine(), "lp"));
  const auto t0 = Steady::now();
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, engine().Receive("lp", Wait(200)));
  EXPECT_TRUE(got.empty());
  // It did wait (the wait is real time), and returned once it ended.
  EXPECT_GE(Steady::now() - t0, milliseconds(190));
}

MQLITE_TCK_GRADES(TckConcurrency, Spec5_WaitOver20SecondsIsInvalidArgument, "G2");
TEST_P(TckConcurrency, Spec5_WaitOver20SecondsIsInvalidArgument) {
  // SPEC §5: wait ≤ 20 s.
  MQ_ASSERT_OK(CreateQueue(engine(), "lp"));
  MQ_ASSERT_OK(SendBody(engine(), "lp", "present"));
  MQ_EXPECT_CODE(engine().Receive("lp", Wait(20'001)), kInvalidArgument);
  MQ_EXPECT_CODE(engine().Receive("lp", Wait(-1)), kInvalidArgument);
  // Nothing was claimed by the refused calls; exactly 20 s is accepted.
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "lp"));
  EXPECT_EQ(st.active, 1);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, engine().Receive("lp", Wait(20'000)));
  EXPECT_EQ(got.size(), 1u);
}

MQLITE_TCK_GRADES(TckConcurrency, Spec5_Spec2_WaiterReceivesOnlyFromItsOwnQueue, "G2");
TEST_P(TckConcurrency, Spec5_Spec2_WaiterReceivesOnlyFromItsOwnQueue) {
  // SPEC §5, §2: a send to another queue does not hand the waiter a message
  // from that queue.
  MQ_ASSERT_OK(CreateQueue(engine(), "lp"));
  MQ_ASSERT_OK(CreateQueue(engine(), "other"));
  auto fut = std::async(std::launch::async, [&] { return engine().Receive("lp", Wait(20'000)); });
  std::this_thread::sleep_for(milliseconds(100));
  MQ_ASSERT_OK(SendBody(engine(), "other", "not for lp"));
  std::this_thread::sleep_for(milliseconds(300));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "lp", "for lp"));
  ASSERT_EQ(fut.wait_for(kFunctionalBound), std::future_status::ready);
  Result<std::vector<Message>> r = fut.get();
  MQ_ASSERT_OK(r);
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].seq, seq);
  EXPECT_EQ((*r)[0].queue, "lp");
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "other"));
  EXPECT_EQ(st.active, 1);
}

MQLITE_TCK_GRADES(TckConcurrency, Spec5_WaiterIsWokenWhenASettleUnblocksItsGroup, "G2", "G3");
TEST_P(TckConcurrency, Spec5_WaiterIsWokenWhenASettleUnblocksItsGroup) {
  // SPEC §5: a group member becomes eligible when its head is completed.
  MQ_ASSERT_OK(CreateQueue(engine(), "lp"));
  MQ_ASSERT_OK(SendBody(engine(), "lp", "unused"));  // keep seqs non-trivial
  MQ_ASSERT_OK_AND_ASSIGN(Message u, ReceiveOne(engine(), "lp"));
  OutgoingMessage g1, g2;
  g1.body = "g1";
  g1.group_id = "G";
  g2.body = "g2";
  g2.group_id = "G";
  MQ_ASSERT_OK(engine().Send("lp", g1));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, engine().Send("lp", g2));
  MQ_ASSERT_OK_AND_ASSIGN(Message head, ReceiveOne(engine(), "lp"));
  ASSERT_EQ(head.body, "g1");

  auto fut = std::async(std::launch::async, [&] { return engine().Receive("lp", Wait(20'000)); });
  std::this_thread::sleep_for(milliseconds(100));
  MQ_ASSERT_OK(engine().Complete("lp", head.seq, head.lock_token));
  ASSERT_EQ(fut.wait_for(kFunctionalBound), std::future_status::ready);
  Result<std::vector<Message>> r = fut.get();
  MQ_ASSERT_OK(r);
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].seq, s2);
  MQ_EXPECT_OK(engine().Complete("lp", u.seq, u.lock_token));
}

// ---- cancellation and deadlines (SPEC §10) ----------------------------------------------------

MQLITE_TCK_GRADES(TckConcurrency, Spec10_StopRequestedBeforeSendWritesNothing, "G1");
TEST_P(TckConcurrency, Spec10_StopRequestedBeforeSendWritesNothing) {
  // SPEC §10
  MQ_ASSERT_OK(CreateQueue(engine(), "cq"));
  MQ_EXPECT_CODE(engine().Send("cq", Out("never"), Stopped()), kCancelled);
  std::vector<OutgoingMessage> batch = {Out("a"), Out("b")};
  MQ_EXPECT_CODE(engine().SendBatch("cq", batch, Stopped()), kCancelled);
  EXPECT_EQ(Total(engine(), "cq"), 0);
}

MQLITE_TCK_GRADES(TckConcurrency, Spec10_StopRequestedBeforeReceiveClaimsNothing, "G2");
TEST_P(TckConcurrency, Spec10_StopRequestedBeforeReceiveClaimsNothing) {
  // SPEC §10
  MQ_ASSERT_OK(CreateQueue(engine(), "cq"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "cq", "m"));
  ReceiveOptions o;
  o.max_messages = 10;
  MQ_EXPECT_CODE(engine().Receive("cq", o, Stopped()), kCancelled);
  o.mode = ReceiveMode::kReceiveAndDelete;
  MQ_EXPECT_CODE(engine().Receive("cq", o, Stopped()), kCancelled);
  MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(engine(), "cq", seq));
  EXPECT_EQ(m.state, MessageState::kActive);
  EXPECT_EQ(m.delivery_count, 0);
  EXPECT_EQ(Total(engine(), "cq"), 1);
}

MQLITE_TCK_GRADES(TckConcurrency, Spec10_StopRequestedBeforeCompleteSettlesNothing, "G2");
TEST_P(TckConcurrency, Spec10_StopRequestedBeforeCompleteSettlesNothing) {
  // SPEC §10
  MQ_ASSERT_OK(CreateQueue(engine(), "cq"));
  MQ_ASSERT_OK(SendBody(engine(), "cq", "m"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "cq"));
  MQ_EXPECT_CODE(engine().Complete("cq", m.seq, m.lock_token, Stopped()), kCancelled);
  MQ_EXPECT_CODE(engine().Abandon("cq", m.seq, m.lock_token, 0, Stopped()), kCancelled);
  MQ_EXPECT_CODE(engine().Reject("cq", m.seq, m.lock_token, "r", "", Stopped()), kCancelled);
  MQ_EXPECT_CODE(engine().Defer("cq", m.seq, m.lock_token, Stopped()), kCancelled);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "cq", m.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  EXPECT_EQ(still.locked_until, m.locked_until);  // same lease (Peek shows no token)
  // The cancelled settles changed nothing: the lease still completes.
  MQ_EXPECT_OK(engine().Complete("cq", m.seq, m.lock_token));
  EXPECT_EQ(Total(engine(), "cq"), 0);
}

MQLITE_TCK_GRADES(TckConcurrency, Spec10_PastDeadlineIsCancelledAndExecutesNothing, "G1", "G2");
TEST_P(TckConcurrency, Spec10_PastDeadlineIsCancelledAndExecutesNothing) {
  // SPEC §10
  MQ_ASSERT_OK(CreateQueue(engine(), "cq"));
  MQ_EXPECT_CODE(engine().Send("cq", Out("never"), CallOptions::Timeout(-1)), kCancelled);
  MQ_EXPECT_CODE(engine().Send("cq", Out("never"), PastDeadline()), kCancelled);
  EXPECT_EQ(Total(engine(), "cq"), 0);

  MQ_ASSERT_OK(SendBody(engine(), "cq", "m"));
  ReceiveOptions o;
  MQ_EXPECT_CODE(engine().Receive("cq", o, CallOptions::Timeout(-1)), kCancelled);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "cq"));
  EXPECT_EQ(st.active, 1);
  EXPECT_EQ(st.locked, 0);

  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "cq"));
  MQ_EXPECT_CODE(engine().Complete("cq", m.seq, m.lock_token, PastDeadline()), kCancelled);
  MQ_EXPECT_CODE(engine().Tx([](TxContext&) { return Status::OK(); }, PastDeadline()), kCancelled);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "cq", m.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
}

MQLITE_TCK_GRADES(TckConcurrency, Spec10_Spec5_LongPollIsCancelledPromptlyByStopSource, "G2");
TEST_P(TckConcurrency, Spec10_Spec5_LongPollIsCancelledPromptlyByStopSource) {
  // SPEC §10, §5
  MQ_ASSERT_OK(CreateQueue(engine(), "cq"));
  std::stop_source src;
  CallOptions call;
  call.stop_token = src.get_token();
  ReceiveOptions o;
  o.wait_ms = 20'000;
  auto fut = std::async(std::launch::async, [&] {
    const auto t0 = Steady::now();
    Result<std::vector<Message>> r = engine().Receive("cq", o, call);
    return std::make_pair(r.status(), Steady::now() - t0);
  });
  std::this_thread::sleep_for(milliseconds(150));
  src.request_stop();
  ASSERT_EQ(fut.wait_for(kFunctionalBound), std::future_status::ready)
      << "a 20 s long-poll ignored request_stop()";
  auto [s, took] = fut.get();
  MQ_EXPECT_CODE(s, kCancelled);
  EXPECT_LT(took, kFunctionalBound);
  // A message sent afterwards was not claimed by the cancelled call.
  MQ_ASSERT_OK(SendBody(engine(), "cq", "later"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "cq"));
  EXPECT_EQ(st.active, 1);
}

MQLITE_TCK_GRADES(TckConcurrency, Spec10_LongPollDeadlineEndsTheWaitWithCancelled, "G2");
TEST_P(TckConcurrency, Spec10_LongPollDeadlineEndsTheWaitWithCancelled) {
  // SPEC §10: a deadline shorter than the wait ends it with Cancelled.
  MQ_ASSERT_OK(CreateQueue(engine(), "cq"));
  ReceiveOptions o;
  o.wait_ms = 20'000;
  const auto t0 = Steady::now();
  MQ_EXPECT_CODE(engine().Receive("cq", o, CallOptions::Timeout(200)), kCancelled);
  EXPECT_LT(Steady::now() - t0, kFunctionalBound);
}

// Holds an exclusive store's single writer: a Tx that runs `first` (if
// given) and then parks in its callback until Release(). The constructor
// returns once the Tx is inside its callback.
class HeldWriter {
 public:
  explicit HeldWriter(Engine& e, std::function<Status(TxContext&)> first = nullptr) {
    holder_ = std::async(std::launch::async, [this, &e, first] {
      return e.Tx([&](TxContext& tx) -> Status {
        Status s = first ? first(tx) : Status::OK();
        entered_.set_value();
        if (!s.ok()) return s;
        released_.wait();
        return Status::OK();
      });
    });
    entered_f_.wait();
  }
  HeldWriter(const HeldWriter&) = delete;
  HeldWriter& operator=(const HeldWriter&) = delete;
  ~HeldWriter() {
    if (holder_.valid()) (void)Release();
  }
  // Lets the Tx commit; returns its status.
  Status Release() {
    release_.set_value();
    return holder_.get();
  }

 private:
  std::promise<void> entered_;
  std::future<void> entered_f_ = entered_.get_future();
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
  std::future<Status> holder_;
};

MQLITE_TCK_GRADES(TckConcurrency, Spec10_CallWaitingForTheWriterIsCancelledAndWritesNothing, "G1");
TEST_P(TckConcurrency, Spec10_CallWaitingForTheWriterIsCancelledAndWritesNothing) {
  // Only a store that serialises writers makes a call wait for the writer
  // (the embedded, exclusive stores); a shared store runs it concurrently.
  if (SkipUnlessExclusive()) return;
  MQ_ASSERT_OK(CreateQueue(engine(), "cq"));
  // SPEC §10, §9: thread 1 holds the single writer (a Tx blocked in its
  // callback); thread 2's Send with a 100 ms deadline gives up with Cancelled.
  HeldWriter writer(engine(), [](TxContext& tx) { return tx.Send("cq", Out("from tx")).status(); });

  const auto t0 = Steady::now();
  Status s = engine().Send("cq", Out("from waiter"), CallOptions::Timeout(100)).status();
  const auto took = Steady::now() - t0;
  MQ_ASSERT_OK(writer.Release());

  MQ_EXPECT_CODE(s, kCancelled);
  EXPECT_LT(took, kFunctionalBound);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAllOf(engine(), "cq"));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].body, "from tx");
}

MQLITE_TCK_GRADES(TckConcurrency, Spec10_StopWhileWaitingForTheWriterIsCancelled, "G2");
TEST_P(TckConcurrency, Spec10_StopWhileWaitingForTheWriterIsCancelled) {
  // Only a store that serialises writers makes a call wait for the writer
  // (the embedded, exclusive stores); a shared store runs it concurrently.
  if (SkipUnlessExclusive()) return;
  MQ_ASSERT_OK(CreateQueue(engine(), "cq"));
  // SPEC §10: the same with a stop token instead of a deadline, on a settle.
  MQ_ASSERT_OK(SendBody(engine(), "cq", "m"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "cq"));
  HeldWriter writer(engine());

  std::stop_source src;
  CallOptions call;
  call.stop_token = src.get_token();
  auto waiter = std::async(std::launch::async,
                           [&] { return engine().Complete("cq", m.seq, m.lock_token, call); });
  std::this_thread::sleep_for(milliseconds(100));
  src.request_stop();
  const bool prompt = waiter.wait_for(kFunctionalBound) == std::future_status::ready;
  MQ_ASSERT_OK(writer.Release());
  ASSERT_TRUE(prompt) << "Complete waiting for the writer ignored request_stop()";
  MQ_EXPECT_CODE(waiter.get(), kCancelled);

  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "cq", m.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  MQ_EXPECT_OK(engine().Complete("cq", m.seq, m.lock_token));
}

// ---- group commit (SPEC §9) ------------------------------------------------------------------
//
// Writes that queue up behind a busy writer share one store transaction, each
// in a savepoint (EngineOptions::group_commit_max). These tests make requests
// queue behind a Tx parked in its callback, then check that every caller got
// exactly its own answer. A wrapper around the store counts write
// transactions and savepoints (the proof that requests were grouped) and
// injects a store error into the Enqueue of a body "poison".

class GroupProbeTxn : public StoreTxnWrapper {
 public:
  GroupProbeTxn(StoreTxn* inner, std::atomic<int>* savepoints)
      : StoreTxnWrapper(inner), savepoints_(savepoints) {}
  Result<std::vector<int64_t>> Enqueue(const QueueRecord& q,
                                       std::span<const EnqueueItem> items) override {
    for (const EnqueueItem& it : items) {
      if (it.message->body == "poison") return Status::StoreFull("injected: store full");
    }
    return StoreTxnWrapper::Enqueue(q, items);
  }
  Status Savepoint(const std::function<Status(StoreTxn&)>& body) override {
    ++*savepoints_;
    return StoreTxnWrapper::Savepoint(body);  // the body sees this wrapper
  }

 private:
  std::atomic<int>* savepoints_;
};

class GroupProbe : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Status Run(TxnKind kind, const RunOptions& options,
             const std::function<Status(StoreTxn&)>& body) override {
    if (kind == TxnKind::kWrite) ++write_runs;
    return StoreWrapper::Run(kind, options, body);
  }
  std::atomic<int> write_runs{0};
  std::atomic<int> savepoints{0};

 protected:
  std::unique_ptr<StoreTxn> WrapTxn(StoreTxn* inner) override {
    return std::make_unique<GroupProbeTxn>(inner, &savepoints);
  }
};

// An engine over a GroupProbe on the test's data set (the test closes its
// own engine first: an exclusive store admits one).
struct Probed {
  std::unique_ptr<Engine> engine;
  GroupProbe* probe = nullptr;

  Status Open(StoreFixture& fixture, const StoreProfile& profile, const EngineOptions& options) {
    MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<Store> s, fixture.Open());
    if (profile.wrap) s = profile.wrap(std::move(s));
    auto p = std::make_unique<GroupProbe>(std::move(s));
    probe = p.get();
    MQLITE_ASSIGN_OR_RETURN(engine, Engine::Open(std::move(p), options));
    return Status::OK();
  }
  ~Probed() {
    if (engine) {
      EXPECT_TRUE(IsOk(engine->Close()));
    }
  }

  // Runs every call on its own thread while a Tx holds the writer (an
  // exclusive store serialises writers, so they queue up), then releases it.
  // Returns each call's status, in the order given.
  std::vector<Status> BehindBusyWriter(const std::vector<std::function<Status()>>& calls) {
    HeldWriter writer(*engine);
    std::atomic<int> started{0};
    std::vector<std::future<Status>> fs;
    for (const auto& call : calls) {
      fs.push_back(std::async(std::launch::async, [&started, &call] {
        ++started;
        return call();
      }));
    }
    EXPECT_TRUE(SpinUntil([&] { return started.load() == static_cast<int>(calls.size()); }))
        << "the callers did not start";
    // Let the callers reach the writer. Grouping is asserted with retries, so
    // a slow scheduler makes a round ungrouped, not the test red.
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_TRUE(IsOk(writer.Release()));
    std::vector<Status> out;
    for (auto& f : fs) out.push_back(f.get());
    return out;
  }
};

MQLITE_TCK_GRADES(TckConcurrency, Spec9_GroupedWritesEachGetExactlyTheirOwnResult, "G1", "G2",
                  "G5");
TEST_P(TckConcurrency, Spec9_GroupedWritesEachGetExactlyTheirOwnResult) {
  CloseEngine();
  Probed p;
  MQ_ASSERT_OK(p.Open(fixture(), profile(), engine_options()));
  Engine& e = *p.engine;
  bool grouped = false;
  for (int round = 0; round < 5 && !grouped; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string q = "gq" + std::to_string(round);
    MQ_ASSERT_OK(CreateQueue(e, q, WithDedup(60'000)));
    MQ_ASSERT_OK(SendMsg(e, q, "first", std::nullopt, 0, 0, "id-1"));
    MQ_ASSERT_OK(SendBody(e, q, "second"));
    MQ_ASSERT_OK_AND_ASSIGN(Message held, ReceiveOne(e, q));
    ASSERT_EQ(held.body, "first");
    MQ_ASSERT_OK_AND_ASSIGN(Message other, ReceiveOne(e, q));
    ASSERT_EQ(other.body, "second");
    const int runs0 = p.probe->write_runs.load();
    const int sps0 = p.probe->savepoints.load();
    std::vector<int64_t> seqs(4, 0);
    std::vector<std::function<Status()>> calls;
    for (int i = 0; i < 4; ++i) {
      calls.push_back([&, i] {
        auto s = e.Send(q, Out("ok-" + std::to_string(i)));
        if (s.ok()) seqs[i] = *s;
        return s.status();
      });
    }
    calls.push_back([&] { return e.Send("no-such-queue", Out("x")).status(); });
    calls.push_back([&] {  // the same message_id with another body
      return SendMsg(e, q, "changed", std::nullopt, 0, 0, "id-1").status();
    });
    calls.push_back([&] { return e.Complete(q, held.seq, Tampered(held.lock_token)); });
    calls.push_back([&] { return e.Complete(q, other.seq, other.lock_token); });
    calls.push_back([&] { return SendMsg(e, q, "bad priority", std::nullopt, 42).status(); });
    std::vector<Status> got = p.BehindBusyWriter(calls);
    for (int i = 0; i < 4; ++i) {
      MQ_EXPECT_OK(got[i]);
      EXPECT_GT(seqs[i], 0);
    }
    MQ_EXPECT_CODE(got[4], kQueueNotFound);
    MQ_EXPECT_CODE(got[5], kDedupConflict);
    MQ_EXPECT_CODE(got[6], kLockLost);
    MQ_EXPECT_OK(got[7]);
    MQ_EXPECT_CODE(got[8], kInvalidArgument);
    // The state is what the successful calls alone would have left.
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAllOf(e, q));
    std::multiset<std::string> bodies;
    for (const Message& m : all) bodies.insert(m.body);
    EXPECT_EQ(bodies, (std::multiset<std::string>{"first", "ok-0", "ok-1", "ok-2", "ok-3"}));
    MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(e, q, held.seq));
    EXPECT_EQ(still.state, MessageState::kLocked);
    MQ_EXPECT_OK(e.Complete(q, held.seq, held.lock_token));
    for (int i = 0; i < 4; ++i) {
      MQ_ASSERT_OK_AND_ASSIGN(Message m, Find(e, q, seqs[i]));
      EXPECT_EQ(m.body, "ok-" + std::to_string(i));
    }
    // Nine requests (plus the Tx) in fewer transactions, using savepoints.
    grouped = p.probe->write_runs.load() - runs0 < static_cast<int>(calls.size()) + 1 &&
              p.probe->savepoints.load() > sps0;
  }
  // A shared store may run writers side by side instead of queueing them.
  if (profile().exclusive) {
    EXPECT_TRUE(grouped) << "no round shared a transaction between queued writers";
  }
}

MQLITE_TCK_GRADES(TckConcurrency, Spec9_StoreErrorInOneGroupedRequestFailsOnlyThatRequest, "G1",
                  "G5");
TEST_P(TckConcurrency, Spec9_StoreErrorInOneGroupedRequestFailsOnlyThatRequest) {
  CloseEngine();
  Probed p;
  MQ_ASSERT_OK(p.Open(fixture(), profile(), engine_options()));
  Engine& e = *p.engine;
  MQ_ASSERT_OK(CreateQueue(e, "gq"));
  bool grouped = false;
  std::multiset<std::string> acknowledged;
  for (int round = 0; round < 5 && !grouped; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int sps0 = p.probe->savepoints.load();
    std::vector<std::string> bodies;
    for (int i = 0; i < 7; ++i) {
      bodies.push_back(i == 3 ? "poison" : "ok-" + std::to_string(round) + "-" + std::to_string(i));
    }
    std::vector<std::function<Status()>> calls;
    for (const std::string& b : bodies) {
      calls.push_back([&e, &b] { return e.Send("gq", Out(b)).status(); });
    }
    std::vector<Status> got = p.BehindBusyWriter(calls);
    for (size_t i = 0; i < got.size(); ++i) {
      if (bodies[i] == "poison") {
        MQ_EXPECT_CODE(got[i], kStoreFull);
      } else {
        MQ_EXPECT_OK(got[i]);
        if (got[i].ok()) acknowledged.insert(bodies[i]);
      }
    }
    grouped = p.probe->savepoints.load() > sps0;
  }
  // Every acknowledged send is there exactly once; the failed one is not.
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAllOf(e, "gq"));
  std::multiset<std::string> stored;
  for (const Message& m : all) stored.insert(m.body);
  EXPECT_EQ(stored, acknowledged);
  if (profile().exclusive) {
    EXPECT_TRUE(grouped) << "no round shared a transaction between queued writers";
  }
}

MQLITE_TCK_GRADES(TckConcurrency, Spec10_WriterQueuedBehindAGroupLeaderIsCancelledAndWritesNothing,
                  "G1", "G5");
TEST_P(TckConcurrency, Spec10_WriterQueuedBehindAGroupLeaderIsCancelledAndWritesNothing) {
  if (SkipUnlessExclusive()) return;
  CloseEngine();
  Probed p;
  MQ_ASSERT_OK(p.Open(fixture(), profile(), engine_options()));
  Engine& e = *p.engine;
  MQ_ASSERT_OK(CreateQueue(e, "gq"));
  // SPEC §10: a caller queued for the next group (behind the one already
  // waiting at the store) still gives up promptly on its deadline; the
  // leader is unaffected.
  const int runs0 = p.probe->write_runs.load();
  HeldWriter writer(e);
  auto leader = std::async(std::launch::async, [&] { return e.Send("gq", Out("leader")).status(); });
  // Until the Tx and the leader are both at the store (at most kHangBound).
  SpinUntil([&] { return p.probe->write_runs.load() >= runs0 + 2; });
  const auto t0 = Steady::now();
  Status s = e.Send("gq", Out("gives up"), CallOptions::Timeout(100)).status();
  const auto took = Steady::now() - t0;
  MQ_ASSERT_OK(writer.Release());
  MQ_EXPECT_OK(leader.get());
  MQ_EXPECT_CODE(s, kCancelled);
  EXPECT_LT(took, kFunctionalBound);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAllOf(e, "gq"));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].body, "leader");
}

}  // namespace
}  // namespace mqlite::tck
