// TckIntegrity — the integrity sweep (SPEC §7.4, §7.5, §12; G1, G2): no loss,
// content hashes, the delivery bound.
//
// One producer thread sends a numbered sequence of random binary bodies (0–4
// KB, NUL bytes included) while consumer threads receive in batches
// (Peek-Lock) and Complete most, Abandon some (redelivery) and simply drop
// others so their lease lapses. A driver thread moves the fixture's
// ManualClock past the lease and runs maintenance, so lapsed messages come
// back. Everything the test knows lives OUTSIDE the engine: the content hash
// and length of every acknowledged send, every delivery seen (with the
// delivery_count the claim reported), every successful Complete. The run
// drains until Stats says only dead letters are left, then the ledger is
// checked:
//   - seqs strictly increase in send order (G1); no unknown seq is delivered;
//   - every delivered body (and every dead letter) hashes to what was sent;
//   - each claim of a message reports delivery_count 1, 2, 3, ... exactly once
//     each, never above max_delivery_count (§7.4);
//   - every acknowledged send was completed exactly once, or sits in the DLQ
//     with delivery_count == max and reason MaxDeliveryCountExceeded (§7.5).
// Settle results are checked against the lease: OK only if the lease was live
// when the call started, LockLost only if the clock reached locked_until by
// the time it returned.
//
// Bounded: a fixed number of messages, wall-clock bounds only to turn a hang
// into a failure; no sleep decides an outcome.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorIntegrity() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

using Steady = std::chrono::steady_clock;


// Seeds: MQLITE_INTEGRITY_SEED pins one; otherwise random. Printed.
uint64_t SweepSeed() {
  if (const char* env = std::getenv("MQLITE_INTEGRITY_SEED"); env != nullptr && *env != '\0') {
    return std::strtoull(env, nullptr, 0);
  }
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

struct SweepConfig {
  int messages = 3000;
  int consumers = 3;
  int32_t max_delivery_count = 50;
  int complete_pct = 80;  // of deliveries
  int abandon_pct = 10;   // the rest lapse
  // The driver moves the clock once this many leases were left to lapse (or
  // when consumers find nothing to claim while some are pending).
  int lapse_batch = 25;
};

struct Sent {
  uint64_t hash = 0;
  size_t len = 0;
  int index = 0;  // 1..N, in send order
};

// The ledger, outside the engine. Guarded by `mu`.
struct Ledger {
  std::mutex mu;
  std::map<int64_t, Sent> sent;                     // acknowledged sends
  std::map<int64_t, std::vector<int32_t>> claimed;  // seq → delivery_counts reported
  std::map<int64_t, int> completed;                 // seq → successful Completes
  std::vector<std::pair<int64_t, std::pair<uint64_t, size_t>>> seen;  // seq → (hash, len)
  std::vector<std::pair<int64_t, std::string>> seen_ids;              // seq → message_id
};

std::string MessageId(int index) { return "i-" + std::to_string(index); }

// Checks a settle result against the lease (SPEC §6): OK only if the lease was
// live when the call started (now < locked_until at `before`); LockLost only if
// the clock had reached locked_until by `after`. Any other code is an error.
void CheckSettle(const char* op, const Message& m, const Status& s, int64_t before, int64_t after,
                 Errors& errors) {
  const std::string what = std::string(op) + " seq " + std::to_string(m.seq);
  if (s.ok()) {
    if (before >= m.locked_until) {
      errors.Add(what + " succeeded although its lease had expired (locked_until " +
                 std::to_string(m.locked_until) + ", now " + std::to_string(before) + ")");
    }
  } else if (s.code() == StatusCode::kLockLost) {
    if (after < m.locked_until) {
      errors.Add(what + " got LockLost while its lease was live (locked_until " +
                 std::to_string(m.locked_until) + ", now " + std::to_string(after) +
                 "): " + s.ToString());
    }
  } else {
    errors.Add(what + ": expected OK or LockLost, got " + s.ToString());
  }
}

class Sweep {
 public:
  Sweep(Engine& e, ManualClock& clock, std::string queue, SweepConfig cfg, uint64_t seed,
        int64_t lock_ms)
      : e_(e), clock_(clock), q_(std::move(queue)), cfg_(cfg), seed_(seed), lock_ms_(lock_ms) {}

  void Run() {
    const auto deadline = Steady::now() + kHangBound;
    std::thread producer([&] { Produce(); });
    std::vector<std::thread> consumers;
    for (int c = 0; c < cfg_.consumers; ++c) {
      consumers.emplace_back([&, c] { Consume(c, deadline); });
    }
    std::thread driver([&] { Drive(deadline); });

    // Drain: until the producer is done and only dead letters remain.
    {
      std::unique_lock<std::mutex> l(wake_mu_);
      while (!errors_.any() && Steady::now() < deadline) {
        if (producer_done_.load()) {
          Result<QueueStats> st = e_.Stats(q_);
          if (!st.has_value()) {
            errors_.Add("Stats: " + st.status().ToString());
            break;
          }
          if (st->total == st->dead_lettered) {
            drained_ = true;
            break;
          }
          // The workload never schedules or defers (Abandon has no delay):
          // such a message is one an acknowledged send will never deliver.
          if (st->scheduled != 0 || st->deferred != 0) {
            errors_.Add("messages the workload never scheduled or deferred are stuck: " +
                        StatsString(*st));
            break;
          }
        }
        wake_.wait_for(l, std::chrono::milliseconds(5));
      }
    }
    stop_.store(true);
    wake_.notify_all();
    producer.join();
    for (std::thread& t : consumers) t.join();
    driver.join();
  }

  Errors& errors() { return errors_; }
  Ledger& ledger() { return ledger_; }
  bool drained() const { return drained_; }
  int64_t lapsed() const { return lapsed_total_.load(); }
  int64_t abandoned() const { return abandoned_.load(); }
  int64_t clock_moves() const { return clock_moves_.load(); }
  int64_t lock_lost() const { return lock_lost_.load(); }

 private:
  void Produce() {
    std::mt19937_64 rng(seed_);
    int64_t last_seq = 0;
    int index = 0;
    while (index < cfg_.messages && !errors_.any() && !stop_.load()) {
      // Mostly single sends; sometimes a small batch (slot order = send order).
      const int n = (rng() % 5 == 0)
                        ? std::min<int>(1 + static_cast<int>(rng() % 8), cfg_.messages - index)
                        : 1;
      std::vector<OutgoingMessage> batch;
      std::vector<Sent> meta;
      for (int k = 0; k < n; ++k) {
        ++index;
        OutgoingMessage m;
        m.body = RandomBody(rng);
        m.message_id = MessageId(index);
        meta.push_back({BodyHash(m.body), m.body.size(), index});
        batch.push_back(std::move(m));
      }
      std::vector<int64_t> seqs;
      if (n == 1) {
        Result<int64_t> seq = e_.Send(q_, batch[0]);
        if (!seq.has_value()) {
          errors_.Add("Send #" + std::to_string(index) + ": " + seq.status().ToString());
          break;
        }
        seqs.push_back(*seq);
      } else {
        Result<std::vector<int64_t>> got = SendBatchSeqs(e_, q_, batch);
        if (!got.has_value()) {
          errors_.Add("SendBatch up to #" + std::to_string(index) + ": " + got.status().ToString());
          break;
        }
        seqs = std::move(*got);
        if (seqs.size() != batch.size()) {
          errors_.Add("SendBatch returned " + std::to_string(seqs.size()) + " seqs for " +
                      std::to_string(batch.size()) + " messages");
          break;
        }
      }
      std::lock_guard<std::mutex> l(ledger_.mu);
      for (size_t k = 0; k < seqs.size(); ++k) {
        // G1: strictly increasing in send order.
        if (seqs[k] <= last_seq) {
          errors_.Add("seq " + std::to_string(seqs[k]) + " of send #" +
                      std::to_string(meta[k].index) + " is not above the previous seq " +
                      std::to_string(last_seq));
        }
        last_seq = seqs[k];
        if (!ledger_.sent.emplace(seqs[k], meta[k]).second) {
          errors_.Add("seq " + std::to_string(seqs[k]) + " acknowledged twice");
        }
      }
    }
    producer_done_.store(true);
    wake_.notify_all();
  }

  void Consume(int c, Steady::time_point deadline) {
    std::mt19937_64 rng(seed_ * 7919 + static_cast<uint64_t>(c) + 1);
    while (!stop_.load() && !errors_.any() && Steady::now() < deadline) {
      ReceiveOptions o;
      o.max_messages = 1 + static_cast<int>(rng() % 16);
      o.wait_ms = 10;  // woken at once by a send or settle; bounded otherwise
      Result<std::vector<Message>> got = e_.Receive(q_, o);
      if (!got.has_value()) {
        errors_.Add("Receive: " + got.status().ToString());
        return;
      }
      if (got->empty()) {
        idle_.store(true);
        wake_.notify_all();
        continue;
      }
      if (static_cast<int>(got->size()) > o.max_messages) {
        errors_.Add("Receive returned " + std::to_string(got->size()) + " messages for max " +
                    std::to_string(o.max_messages));
      }
      std::vector<const Message*> to_complete;
      std::set<int64_t> in_batch;
      {
        std::lock_guard<std::mutex> l(ledger_.mu);
        for (const Message& m : *got) {
          if (!in_batch.insert(m.seq).second) {
            errors_.Add("seq " + std::to_string(m.seq) + " twice in one Receive batch");
          }
          ledger_.claimed[m.seq].push_back(m.delivery_count);
          ledger_.seen.push_back({m.seq, {BodyHash(m.body), m.body.size()}});
          ledger_.seen_ids.push_back({m.seq, m.message_id.value_or("<absent>")});
        }
      }
      int lapsed_here = 0;
      for (const Message& m : *got) {
        if (m.state != MessageState::kLocked || m.lock_token.empty() || m.locked_until <= 0) {
          errors_.Add("received seq " + std::to_string(m.seq) + " is not locked with a token");
          continue;
        }
        if (m.delivery_count < 1 || m.delivery_count > cfg_.max_delivery_count) {
          errors_.Add("received seq " + std::to_string(m.seq) + " with delivery_count " +
                      std::to_string(m.delivery_count) + " (max " +
                      std::to_string(cfg_.max_delivery_count) + ")");
        }
        const int r = static_cast<int>(rng() % 100);
        if (r < cfg_.complete_pct) {
          to_complete.push_back(&m);
        } else if (r < cfg_.complete_pct + cfg_.abandon_pct) {
          const int64_t before = clock_.NowMs();
          Status s = e_.Abandon(q_, m.seq, m.lock_token);
          const int64_t after = clock_.NowMs();
          CheckSettle("Abandon", m, s, before, after, errors_);
          if (s.ok()) ++abandoned_;
          if (s.code() == StatusCode::kLockLost) ++lock_lost_;
        } else {
          ++lapsed_here;  // drop the token: the lease lapses when the clock moves
        }
      }
      if (lapsed_here > 0) {
        lapsed_total_ += lapsed_here;
        lapsed_pending_ += lapsed_here;
        wake_.notify_all();
      }
      if (to_complete.empty()) continue;
      // One [before, after] clock window per result: the call's own window
      // for single Completes, the batch's (one commit) for CompleteBatch.
      std::vector<Status> results;
      std::vector<std::pair<int64_t, int64_t>> windows;
      if (to_complete.size() > 1 && rng() % 2 == 0) {
        std::vector<SettleItem> items;
        for (const Message* m : to_complete) items.push_back({m->seq, m->lock_token});
        const int64_t before = clock_.NowMs();
        Result<std::vector<Status>> batch = e_.CompleteBatch(q_, items);
        const int64_t after = clock_.NowMs();
        if (!batch.has_value()) {
          errors_.Add("CompleteBatch: " + batch.status().ToString());
          return;
        }
        if (batch->size() != items.size()) {
          errors_.Add("CompleteBatch returned " + std::to_string(batch->size()) + " results for " +
                      std::to_string(items.size()) + " items");
          return;
        }
        results = std::move(*batch);
        windows.assign(results.size(), {before, after});
      } else {
        for (const Message* m : to_complete) {
          const int64_t before = clock_.NowMs();
          results.push_back(e_.Complete(q_, m->seq, m->lock_token));
          windows.push_back({before, clock_.NowMs()});
        }
      }
      std::lock_guard<std::mutex> l(ledger_.mu);
      for (size_t k = 0; k < to_complete.size(); ++k) {
        const Message& m = *to_complete[k];
        CheckSettle("Complete", m, results[k], windows[k].first, windows[k].second, errors_);
        if (results[k].ok()) ++ledger_.completed[m.seq];
        if (results[k].code() == StatusCode::kLockLost) ++lock_lost_;
      }
    }
  }

  void Drive(Steady::time_point deadline) {
    std::unique_lock<std::mutex> l(wake_mu_);
    while (!stop_.load() && !errors_.any() && Steady::now() < deadline) {
      const int64_t pending = lapsed_pending_.load();
      const bool idle = idle_.exchange(false);
      if (pending >= cfg_.lapse_batch || (pending > 0 && idle)) {
        lapsed_pending_ -= pending;
        l.unlock();
        // Past every lease granted so far: lapsed messages come back (or go to
        // the DLQ at the max), and consumers still working see LockLost.
        clock_.Advance(lock_ms_ + 1);
        ++clock_moves_;
        for (int pass = 0; pass < 100; ++pass) {
          Result<MaintenanceReport> rep = e_.RunMaintenance();
          if (!rep.has_value()) {
            errors_.Add("RunMaintenance: " + rep.status().ToString());
            break;
          }
          if (!rep->more) break;
        }
        wake_.notify_all();
        l.lock();
        continue;
      }
      wake_.wait_for(l, std::chrono::milliseconds(5));
    }
  }

  Engine& e_;
  ManualClock& clock_;
  const std::string q_;
  const SweepConfig cfg_;
  const uint64_t seed_;
  const int64_t lock_ms_;
  Errors errors_;
  Ledger ledger_;
  std::mutex wake_mu_;
  std::condition_variable wake_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> producer_done_{false};
  std::atomic<bool> idle_{false};
  std::atomic<int64_t> lapsed_pending_{0};
  std::atomic<int64_t> lapsed_total_{0};
  std::atomic<int64_t> abandoned_{0};
  std::atomic<int64_t> clock_moves_{0};
  std::atomic<int64_t> lock_lost_{0};
  bool drained_ = false;
};

// Runs the sweep on queue `q` and checks the ledger. Returns the number of
// dead letters.
void RunAndCheck(Engine& e, ManualClock& clock, const std::string& q, const SweepConfig& cfg,
                 int64_t* dead_letters) {
  const uint64_t seed = SweepSeed();
  std::cout << "[ integrity ] seed " << seed << " (pin with MQLITE_INTEGRITY_SEED=" << seed
            << ")\n";
  SCOPED_TRACE("MQLITE_INTEGRITY_SEED=" + std::to_string(seed));
  QueueConfig qc;
  qc.name = q;
  qc.max_delivery_count = cfg.max_delivery_count;
  qc.lock_duration_ms = 10'000;
  MQ_ASSERT_OK(e.CreateQueue(qc));

  const auto started = Steady::now();
  Sweep sweep(e, clock, q, cfg, seed, qc.lock_duration_ms);
  sweep.Run();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - started).count();
  std::cout << "[ integrity ] " << cfg.messages << " messages, " << sweep.lapsed()
            << " leases lapsed, " << sweep.abandoned() << " abandoned, " << sweep.lock_lost()
            << " LockLost, " << sweep.clock_moves() << " clock moves, " << ms << " ms\n";
  ASSERT_FALSE(sweep.errors().any()) << sweep.errors().Summary();
  ASSERT_TRUE(sweep.drained()) << "the queue did not drain to its dead letters within "
                               << kHangBound.count()
                               << " s: " << StatsString(e.Stats(q).value_or(QueueStats{}));

  Ledger& L = sweep.ledger();
  std::lock_guard<std::mutex> l(L.mu);
  // Every send was acknowledged, numbered 1..N in seq order (G1).
  ASSERT_EQ(L.sent.size(), static_cast<size_t>(cfg.messages));
  {
    int expect_index = 1;
    for (const auto& [seq, s] : L.sent) {
      ASSERT_EQ(s.index, expect_index) << "seq " << seq << " is out of send order";
      ++expect_index;
    }
  }
  // No unknown seq was ever delivered; every delivered body and id is exact.
  for (const auto& [seq, hl] : L.seen) {
    auto it = L.sent.find(seq);
    ASSERT_NE(it, L.sent.end()) << "delivered seq " << seq << " was never acknowledged";
    EXPECT_EQ(hl.first, it->second.hash) << "seq " << seq << ": delivered body differs from sent";
    EXPECT_EQ(hl.second, it->second.len) << "seq " << seq << ": delivered body length differs";
  }
  for (const auto& [seq, id] : L.seen_ids) {
    EXPECT_EQ(id, MessageId(L.sent.at(seq).index)) << "seq " << seq << ": message_id differs";
  }
  // The dead letters, checked against the ledger.
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> dlq, PeekAllOf(e, q, MessageState::kDeadLettered));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, PeekAllOf(e, q));
  ASSERT_EQ(all.size(), dlq.size()) << "messages other than dead letters remain";
  std::set<int64_t> dead;
  for (const Message& m : dlq) {
    dead.insert(m.seq);
    auto it = L.sent.find(m.seq);
    ASSERT_NE(it, L.sent.end()) << "dead letter " << m.seq << " was never acknowledged";
    EXPECT_EQ(BodyHash(m.body), it->second.hash) << "dead letter " << m.seq << ": body differs";
    EXPECT_EQ(m.body.size(), it->second.len) << "dead letter " << m.seq << ": length differs";
    EXPECT_EQ(m.message_id, std::optional<std::string>(MessageId(it->second.index)));
    EXPECT_EQ(m.delivery_count, cfg.max_delivery_count) << "dead letter " << m.seq;
    EXPECT_EQ(m.dead_letter_reason, std::optional<std::string>(kReasonMaxDelivery))
        << "dead letter " << m.seq;
    EXPECT_EQ(L.completed.count(m.seq), 0u) << "dead letter " << m.seq << " was also completed";
  }
  // Every acknowledged send: claims reported delivery_count 1..k exactly once
  // each with k <= max (§7.4); completed exactly once unless dead-lettered
  // after exactly max deliveries (§7.5).
  int failures = 0;
  for (const auto& [seq, s] : L.sent) {
    if (failures > 20) break;
    std::vector<int32_t> counts;
    if (auto it = L.claimed.find(seq); it != L.claimed.end()) counts = it->second;
    std::sort(counts.begin(), counts.end());
    std::vector<int32_t> want;
    for (int32_t k = 1; k <= static_cast<int32_t>(counts.size()); ++k) want.push_back(k);
    if (counts != want || counts.size() > static_cast<size_t>(cfg.max_delivery_count)) {
      ADD_FAILURE() << "seq " << seq << ": claims reported delivery counts "
                    << ::testing::PrintToString(counts) << ", want 1.." << counts.size() << " (max "
                    << cfg.max_delivery_count << ")";
      ++failures;
    }
    const int completions = L.completed.count(seq) ? L.completed.at(seq) : 0;
    if (dead.count(seq)) {
      if (counts.size() != static_cast<size_t>(cfg.max_delivery_count)) {
        ADD_FAILURE() << "dead letter " << seq << " was delivered " << counts.size()
                      << " times, want max_delivery_count " << cfg.max_delivery_count;
        ++failures;
      }
    } else if (completions != 1) {
      ADD_FAILURE() << "acknowledged seq " << seq << " (send #" << s.index << ") completed "
                    << completions << " times and is not in the DLQ (delivered " << counts.size()
                    << " times)";
      ++failures;
    }
  }
  // The run exercised what it claims to: redelivery by abandon and by lapse.
  EXPECT_GT(sweep.lapsed(), 0);
  EXPECT_GT(sweep.abandoned(), 0);
  EXPECT_GT(sweep.clock_moves(), 0);
  *dead_letters = static_cast<int64_t>(dlq.size());
}

}  // namespace

// With a high max_delivery_count nothing dead-letters: every acknowledged send
// is completed exactly once, byte-exact, within the delivery bound.
MQLITE_TCK_GRADES(TckIntegrity, Spec7_4_7_5_SweepCompletesEveryAcknowledgedSendExactlyOnce, "G1",
                  "G2");
TEST_P(TckIntegrity, Spec7_4_7_5_SweepCompletesEveryAcknowledgedSendExactlyOnce) {
  SweepConfig cfg;
  cfg.messages = 3000;
  cfg.max_delivery_count = 50;
  int64_t dead = -1;
  ASSERT_NO_FATAL_FAILURE(RunAndCheck(engine(), clock(), "sweep", cfg, &dead));
  EXPECT_EQ(dead, 0) << "with max_delivery_count 50 nothing should dead-letter";
  QueueStats st = StatsOk("sweep");
  EXPECT_TRUE(StatsEq(st, QueueStats{})) << "the queue is empty after the drain";
}

// With a small max_delivery_count many messages dead-letter: each after
// exactly max deliveries, never completed, body intact; the rest are
// completed exactly once.
MQLITE_TCK_GRADES(TckIntegrity, Spec7_4_7_5_SweepDeadLettersAtExactlyMaxDeliveries, "G1", "G2",
                  "G4");
TEST_P(TckIntegrity, Spec7_4_7_5_SweepDeadLettersAtExactlyMaxDeliveries) {
  SweepConfig cfg;
  cfg.messages = 1500;
  cfg.max_delivery_count = 2;
  cfg.complete_pct = 60;
  cfg.abandon_pct = 25;  // 15% lapse
  int64_t dead = -1;
  ASSERT_NO_FATAL_FAILURE(RunAndCheck(engine(), clock(), "sweep-dlq", cfg, &dead));
  EXPECT_GT(dead, 0) << "with max_delivery_count 2 some messages must dead-letter";
  QueueStats st = StatsOk("sweep-dlq");
  EXPECT_EQ(st.total, dead);
  EXPECT_EQ(st.dead_lettered, dead);
}

}  // namespace mqlite::tck
