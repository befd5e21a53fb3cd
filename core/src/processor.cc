// mqlite::Processor (mqlite/processor.h, docs/processor.md).
//
// Threads: one receiver per queue, `concurrency` workers, one renewer. All
// shared state is under Impl::mu; store calls are made without it.
//
// A claim lives in `claims` from the Receive that returned it until its
// verdict (or Stop's hand-back) is applied; while it is there the renewer
// keeps its lease. `ready` holds the claims no worker has started, in claim
// order.
#include "mqlite/processor.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "mqlite/typed_queue.h"
#include "validate.h"

namespace mqlite {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr size_t kMaxQueues = 64;
constexpr int kMaxConcurrency = 256;
constexpr int kMaxPrefetch = 256;
using internal::kMaxDelayMs;
using internal::kMaxReceive;
using internal::kMaxWaitMs;
constexpr int64_t kHandBackTimeoutMs = 10'000;
constexpr size_t kRenewBatch = internal::kMaxSettleBatch;
constexpr size_t kMaxDescriptionBytes = internal::kMaxTextBytes;

// Handler latencies: 8 buckets per power of two, exact below 8 µs.
class Histogram {
 public:
  void Add(int64_t us) {
    if (us < 0) us = 0;
    ++buckets_[Bucket(static_cast<uint64_t>(us))];
    ++count_;
    sum_ += us;
    max_ = std::max(max_, us);
  }
  LatencySummary Summary() const {
    LatencySummary s;
    s.count = count_;
    if (count_ == 0) return s;
    s.mean_us = sum_ / count_;
    s.max_us = max_;
    s.p50_us = std::min(max_, Quantile(0.50));
    s.p99_us = std::min(max_, Quantile(0.99));
    return s;
  }

 private:
  static constexpr size_t kBuckets = 8 * 62;
  static size_t Bucket(uint64_t us) {
    if (us < 8) return us;
    const int e = 63 - std::countl_zero(us);  // ≥ 3
    const uint64_t sub = (us >> (e - 3)) & 7;
    return static_cast<size_t>(e - 2) * 8 + sub;
  }
  // The middle of bucket i.
  static int64_t Middle(size_t i) {
    if (i < 8) return static_cast<int64_t>(i);
    const int e = static_cast<int>(i / 8) + 2;
    const int64_t lower = static_cast<int64_t>(8 + i % 8) << (e - 3);
    const int64_t width = int64_t{1} << (e - 3);
    return lower + width / 2;
  }
  int64_t Quantile(double q) const {
    const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * count_)));
    int64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += buckets_[i];
      if (seen >= rank) return Middle(i);
    }
    return max_;
  }
  std::array<int64_t, kBuckets> buckets_{};
  int64_t count_ = 0;
  int64_t sum_ = 0;
  int64_t max_ = 0;
};

double JitterDraw() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

std::string Truncate(std::string s, size_t max) {
  if (s.size() <= max) return s;
  s.resize(max);
  // Do not leave half a UTF-8 sequence at the end: find the last lead byte
  // and drop its sequence only if the cut left it incomplete.
  size_t lead = s.size();
  while (lead > 0 && (static_cast<unsigned char>(s[lead - 1]) & 0xC0) == 0x80) --lead;
  if (lead == 0) return s;
  const auto b = static_cast<unsigned char>(s[lead - 1]);
  const size_t want = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
  if (s.size() - (lead - 1) < want) s.resize(lead - 1);
  return s;
}

// Applies `v` to `m` through an Engine or a TxContext (same settle methods).
template <typename Settler>
Status ApplyVerdict(Settler& s, const Message& m, const HandlerVerdict& v) {
  switch (v.kind) {
    case HandlerVerdict::Kind::kComplete:
      return s.Complete(m.queue, m.seq, m.lock_token);
    case HandlerVerdict::Kind::kAbandon:
      return s.Abandon(m.queue, m.seq, m.lock_token, v.delay_ms);
    case HandlerVerdict::Kind::kReject:
      return s.Reject(m.queue, m.seq, m.lock_token, v.reason, v.description);
    case HandlerVerdict::Kind::kDefer:
      return s.Defer(m.queue, m.seq, m.lock_token);
  }
  return Status::InvalidArgument("processor: unknown verdict kind " +
                                 std::to_string(static_cast<int>(v.kind)));
}

// Runs `fn`, turning an exception into an Internal error.
template <typename Fn>
Result<HandlerVerdict> Guarded(Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("handler threw: ") + e.what());
  } catch (...) {
    return Status::Internal("handler threw a non-std::exception");
  }
}

Status ValidateOptions(const ProcessorOptions& o) {
  if (o.queues.empty() || o.queues.size() > kMaxQueues) {
    return Status::InvalidArgument("processor: queues must name 1-64 queues, got " +
                                   std::to_string(o.queues.size()));
  }
  std::set<std::string> seen;
  for (const std::string& q : o.queues) {
    MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(q));
    if (!seen.insert(q).second) {
      return Status::InvalidArgument("processor: queue '" + q + "' is listed twice");
    }
  }
  if (o.concurrency < 1 || o.concurrency > kMaxConcurrency) {
    return Status::InvalidArgument("processor: concurrency must be 1-256, got " +
                                   std::to_string(o.concurrency));
  }
  if (o.prefetch < 0 || o.prefetch > kMaxPrefetch) {
    return Status::InvalidArgument("processor: prefetch must be 0-256, got " +
                                   std::to_string(o.prefetch));
  }
  if (o.wait_ms < 1 || o.wait_ms > kMaxWaitMs) {
    return Status::InvalidArgument("processor: wait_ms must be 1-20000, got " +
                                   std::to_string(o.wait_ms));
  }
  const RetryPolicy& r = o.retry;
  if (r.max_backoff_ms < 0 || r.max_backoff_ms > kMaxDelayMs) {
    return Status::InvalidArgument("processor: retry.max_backoff_ms must be 0-" +
                                   std::to_string(kMaxDelayMs) + " (365 days), got " +
                                   std::to_string(r.max_backoff_ms));
  }
  if (r.initial_backoff_ms < 0 || r.initial_backoff_ms > r.max_backoff_ms) {
    return Status::InvalidArgument("processor: retry.initial_backoff_ms must be 0-max_backoff_ms (" +
                                   std::to_string(r.max_backoff_ms) + "), got " +
                                   std::to_string(r.initial_backoff_ms));
  }
  if (!(r.multiplier >= 1.0 && r.multiplier <= 100.0)) {
    return Status::InvalidArgument("processor: retry.multiplier must be 1-100, got " +
                                   std::to_string(r.multiplier));
  }
  if (!(r.jitter >= 0.0 && r.jitter <= 1.0)) {
    return Status::InvalidArgument("processor: retry.jitter must be 0-1, got " +
                                   std::to_string(r.jitter));
  }
  return Status::OK();
}

}  // namespace

std::string typed_internal::DeadLetterDescription(const Status& decode_error) {
  return Truncate(decode_error.ToString(), kMaxDescriptionBytes);
}

int64_t RetryPolicy::Backoff(int32_t delivery_count, double unit) const {
  const double cap = static_cast<double>(std::max<int64_t>(0, max_backoff_ms));
  if (initial_backoff_ms <= 0) return 0;  // (0 · multiplier^n would be NaN once the power overflows)
  const int32_t n = std::max<int32_t>(1, delivery_count);
  double d = static_cast<double>(initial_backoff_ms) * std::pow(std::max(1.0, multiplier), n - 1);
  d = std::min(d, cap);
  const double j = std::clamp(jitter, 0.0, 1.0);
  d *= 1.0 - j + 2.0 * j * std::clamp(unit, 0.0, 1.0);
  d = std::clamp(d, 0.0, cap);
  return static_cast<int64_t>(std::llround(d));
}

struct Processor::Impl {
  struct QueueState {
    std::string name;
    int64_t lock_ms = 0;
    int32_t max_delivery = 0;
    int outstanding = 0;  // claimed, not settled
  };
  struct Claim {
    size_t q = 0;
    Message message;
    std::stop_source stop;
    SteadyClock::time_point renew_at;
    bool lost = false;         // a renewal answered LockLost
    bool handed_back = false;  // Stop abandoned it
    bool settling = false;     // its verdict is being applied: renewals and Stop leave it alone

    // Still ours and nobody settling it: the renewer renews it, Stop may hand
    // it back. REQUIRES: mu held.
    bool Idle() const { return !lost && !handed_back && !settling; }
  };
  using Key = std::pair<size_t, int64_t>;

  Impl(Engine& e, ProcessorOptions o) : engine(e), options(std::move(o)) {}

  Engine& engine;
  const ProcessorOptions options;
  Handler handler;
  TxHandler tx_handler;
  std::vector<QueueState> queues;

  mutable std::mutex mu;
  std::condition_variable work_cv;       // ready non-empty, or workers_exit
  std::condition_variable_any space_cv;  // a queue's outstanding dropped
  std::condition_variable renew_cv;      // claims changed, or renewer_exit
  std::condition_variable drained_cv;    // claims empty
  std::deque<std::shared_ptr<Claim>> ready;
  std::map<Key, std::shared_ptr<Claim>> claims;
  bool workers_exit = false;
  bool renewer_exit = false;
  bool stopped = false;     // a Stop has begun
  bool stop_done = false;   // ... and finished
  std::condition_variable stop_done_cv;
  std::set<std::thread::id> worker_ids;
  ProcessorStats counters;
  Histogram latency;

  std::stop_source receive_stop;
  std::vector<std::thread> receivers;
  std::vector<std::thread> workers;
  std::thread renewer;

  int Limit() const { return options.concurrency + options.prefetch; }

  void NoteError(const Status& s) {  // REQUIRES: mu held
    counters.last_error = s.ToString();
  }

  // ---- Receivers -----------------------------------------------------------
  void ReceiveLoop(size_t q) {
    const std::stop_token stop = receive_stop.get_token();
    QueueState& qs = queues[q];
    int64_t backoff_ms = 0;
    while (!stop.stop_requested()) {
      int want = 0;
      {
        std::unique_lock lk(mu);
        if (!space_cv.wait(lk, stop, [&] { return qs.outstanding < Limit(); })) break;
        want = std::min(kMaxReceive, Limit() - qs.outstanding);
      }
      CallOptions call;
      call.stop_token = stop;
      ReceiveOptions ro;
      ro.max_messages = want;
      ro.wait_ms = options.wait_ms;
      Result<std::vector<Message>> got = engine.Receive(qs.name, ro, call);
      if (!got.ok()) {
        if (stop.stop_requested()) break;
        std::unique_lock lk(mu);
        ++counters.receive_errors;
        NoteError(got.status());
        if (got.status().code() == StatusCode::kClosed) break;  // nothing more to receive
        backoff_ms = std::clamp<int64_t>(backoff_ms * 2, 50, 5'000);
        space_cv.wait_for(lk, stop, std::chrono::milliseconds(backoff_ms), [] { return false; });
        continue;
      }
      backoff_ms = 0;
      if (got->empty()) continue;
      const auto renew_at = SteadyClock::now() + std::chrono::milliseconds(qs.lock_ms / 3);
      std::vector<std::shared_ptr<Claim>> stale;
      {
        std::lock_guard lk(mu);
        for (Message& m : *got) {
          // The same seq claimed again while an older claim of it still runs
          // (its lease lapsed): the old one has lost its lease.
          if (auto old = claims.find({q, m.seq}); old != claims.end() && !old->second->lost) {
            old->second->lost = true;
            ++counters.leases_lost;
            stale.push_back(old->second);
          }
          auto c = std::make_shared<Claim>();
          c->q = q;
          c->renew_at = renew_at;
          c->message = std::move(m);
          claims[{q, c->message.seq}] = c;
          ready.push_back(std::move(c));
          ++qs.outstanding;
          ++counters.received;
        }
      }
      for (const auto& c : stale) c->stop.request_stop();
      work_cv.notify_all();
      renew_cv.notify_one();
    }
  }

  // ---- Workers -------------------------------------------------------------
  void WorkLoop() {
    for (;;) {
      std::shared_ptr<Claim> c;
      {
        std::unique_lock lk(mu);
        work_cv.wait(lk, [&] { return !ready.empty() || workers_exit; });
        if (ready.empty()) return;
        c = std::move(ready.front());
        ready.pop_front();
        if (c->lost || c->handed_back) {  // lease gone while it waited, or Stop took it back
          Finish(lk, c);
          continue;
        }
      }
      Run(*c);
      std::unique_lock lk(mu);
      Finish(lk, c);
    }
  }

  // Drops a settled (or given up) claim. REQUIRES: mu held through `lk`.
  void Finish(std::unique_lock<std::mutex>& lk, const std::shared_ptr<Claim>& c) {
    auto it = claims.find({c->q, c->message.seq});
    if (it != claims.end() && it->second == c) claims.erase(it);
    --queues[c->q].outstanding;
    const bool empty = claims.empty();
    lk.unlock();
    space_cv.notify_all();
    if (empty) drained_cv.notify_all();
    lk.lock();
  }

  // Takes the right to settle `c`: false if its lease was lost or Stop
  // handed it back. From then on renewals and Stop leave it alone.
  bool BeginSettle(Claim& c) {
    std::lock_guard lk(mu);
    if (!c.Idle() || c.stop.stop_requested()) return false;
    c.settling = true;
    return true;
  }
  // A settle failed and the message is still ours (renewed again).
  void EndSettle(Claim& c) {
    std::lock_guard lk(mu);
    c.settling = false;
  }

  void Run(Claim& c) {
    const Message& m = c.message;
    HandlerContext ctx;
    ctx.stop_token = c.stop.get_token();
    ctx.attempt = m.delivery_count;
    const auto t0 = SteadyClock::now();
    auto record_latency = [&] {
      const auto us =
          std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - t0).count();
      std::lock_guard lk(mu);
      latency.Add(us);
    };

    Status s;
    HandlerVerdict verdict;
    if (tx_handler) {
      bool handler_failed = false;
      bool given_up = false;
      Status handler_error;
      s = engine.Tx([&](TxContext& tx) -> Status {
        Result<HandlerVerdict> r = Guarded([&] { return tx_handler(m, tx, ctx); });
        record_latency();
        if (!r.ok()) {
          handler_failed = true;
          handler_error = r.status();
          return handler_error;  // rolls back what the handler wrote
        }
        if (!BeginSettle(c)) {
          given_up = true;
          return Status::LockLost("processor: the lease was lost while the handler ran");
        }
        verdict = *r;
        return ApplyVerdict(tx, m, verdict);  // LockLost here rolls the outputs back too
      });
      if (handler_failed) return OnHandlerError(c, handler_error);
      if (given_up) return;
    } else {
      Result<HandlerVerdict> r = Guarded([&] { return handler(m, ctx); });
      record_latency();
      if (!r.ok()) return OnHandlerError(c, r.status());
      if (!BeginSettle(c)) return;  // lease lost or handed back: not ours to settle
      verdict = *r;
      s = ApplyVerdict(engine, m, verdict);
    }
    if (s.ok()) return CountVerdict(verdict);
    if (s.code() == StatusCode::kLockLost) return CountSettleFailure(s);
    // The verdict was invalid (InvalidArgument: a permanent error) or the
    // store failed (the Tx's writes rolled back, the lease still ours): the
    // retry policy decides, as for a handler error.
    EndSettle(c);
    return OnHandlerError(c, s);
  }

  void CountVerdict(const HandlerVerdict& v) {
    std::lock_guard lk(mu);
    switch (v.kind) {
      case HandlerVerdict::Kind::kComplete: ++counters.completed; break;
      case HandlerVerdict::Kind::kAbandon: ++counters.abandoned; break;
      case HandlerVerdict::Kind::kReject: ++counters.dead_lettered; break;
      case HandlerVerdict::Kind::kDefer: ++counters.deferred; break;
    }
  }

  void CountSettleFailure(const Status& s) {
    std::lock_guard lk(mu);
    ++counters.settle_failures;
    NoteError(s);
  }

  // The retry policy: reject a permanent error or a failed last delivery
  // (with the error as the description), abandon with a backoff otherwise.
  void OnHandlerError(Claim& c, const Status& error) {
    const Message& m = c.message;
    const QueueState& qs = queues[c.q];
    {
      std::lock_guard lk(mu);
      ++counters.handler_errors;
      NoteError(error);
    }
    if (!BeginSettle(c)) return;
    const RetryPolicy& policy = options.retry;
    const bool permanent = policy.is_permanent ? policy.is_permanent(error)
                                               : error.code() == StatusCode::kInvalidArgument;
    Status s;
    bool rejected = false;
    if (permanent || m.delivery_count >= qs.max_delivery) {
      const std::string_view reason = permanent ? kReasonProcessingFailed : kReasonMaxDelivery;
      std::string why = permanent ? "permanent error: " : "last of " + std::to_string(qs.max_delivery) +
                                                              " deliveries failed: ";
      s = engine.Reject(m.queue, m.seq, m.lock_token, reason,
                        Truncate(why + error.ToString(), kMaxDescriptionBytes));
      rejected = true;
    } else {
      s = engine.Abandon(m.queue, m.seq, m.lock_token,
                         policy.Backoff(m.delivery_count, JitterDraw()));
    }
    if (!s.ok()) return CountSettleFailure(s);
    std::lock_guard lk(mu);
    ++(rejected ? counters.dead_lettered : counters.retried);
  }

  // ---- Renewer -------------------------------------------------------------
  void RenewLoop() {
    std::unique_lock lk(mu);
    while (!renewer_exit) {
      auto next = SteadyClock::time_point::max();
      for (const auto& [key, c] : claims) {
        if (c->Idle()) next = std::min(next, c->renew_at);
      }
      if (next == SteadyClock::time_point::max()) {
        renew_cv.wait(lk);
        continue;
      }
      const auto now = SteadyClock::now();
      if (next > now) {
        renew_cv.wait_until(lk, next);
        continue;
      }
      // Every lease due within a sixth of its duration goes in this round,
      // so claims made together are renewed together.
      std::vector<std::vector<std::shared_ptr<Claim>>> due(queues.size());
      for (const auto& [key, c] : claims) {
        if (!c->Idle()) continue;
        const auto slack = std::chrono::milliseconds(queues[c->q].lock_ms / 6);
        if (c->renew_at <= now + slack) due[c->q].push_back(c);
      }
      lk.unlock();
      std::vector<std::shared_ptr<Claim>> lost;
      for (size_t q = 0; q < due.size(); ++q) {
        for (size_t i = 0; i < due[q].size(); i += kRenewBatch) {
          RenewChunk(q, std::span(due[q]).subspan(i, std::min(kRenewBatch, due[q].size() - i)),
                     lost);
        }
      }
      for (const auto& c : lost) c->stop.request_stop();  // outside mu: runs stop callbacks
      lk.lock();
    }
  }

  void RenewChunk(size_t q, std::span<const std::shared_ptr<Claim>> chunk,
                  std::vector<std::shared_ptr<Claim>>& lost) {
    const QueueState& qs = queues[q];
    std::vector<SettleItem> items;
    items.reserve(chunk.size());
    for (const auto& c : chunk) items.push_back({c->message.seq, c->message.lock_token});
    // Within a third of the lease: a stalled store must not hold Stop up.
    Result<std::vector<RenewOutcome>> out =
        engine.RenewBatch(qs.name, items, CallOptions::Timeout(std::max<int64_t>(1, qs.lock_ms / 3)));
    const auto now = SteadyClock::now();
    const auto again = now + std::chrono::milliseconds(qs.lock_ms / 3);
    const auto retry = now + std::chrono::milliseconds(std::min<int64_t>(1'000, qs.lock_ms / 10));
    std::lock_guard lk(mu);
    for (size_t i = 0; i < chunk.size(); ++i) {
      const std::shared_ptr<Claim>& c = chunk[i];
      auto it = claims.find({q, c->message.seq});
      // Settled meanwhile, or being settled (a LockLost would be its own).
      if (it == claims.end() || it->second != c || !c->Idle()) continue;
      if (!out.ok()) {
        c->renew_at = retry;
        NoteError(out.status());
        continue;
      }
      const RenewOutcome& o = (*out)[i];
      if (o.status.ok()) {
        c->renew_at = again;
        ++counters.renewals;
      } else if (o.status.code() == StatusCode::kLockLost) {
        c->lost = true;
        ++counters.leases_lost;
        NoteError(o.status);
        lost.push_back(c);
      } else {
        c->renew_at = retry;
        NoteError(o.status);
      }
    }
  }

  // ---- Stop ----------------------------------------------------------------
  // Abandons `handed` (already marked handed_back and off `ready`); returns
  // how many the engine took back.
  int64_t HandBack(const std::vector<std::shared_ptr<Claim>>& handed) {
    int64_t n = 0;
    for (const auto& c : handed) {
      const Message& m = c->message;
      const Status s =
          engine.Abandon(m.queue, m.seq, m.lock_token, 0, CallOptions::Timeout(kHandBackTimeoutMs));
      std::lock_guard lk(mu);
      if (s.ok()) {
        ++n;
        ++counters.abandoned_on_stop;
      } else {
        NoteError(s);
      }
    }
    return n;
  }

  Status Stop(std::chrono::milliseconds drain) {
    const auto deadline = SteadyClock::now() + drain;
    {
      std::unique_lock lk(mu);
      if (worker_ids.count(std::this_thread::get_id())) {
        return Status::InvalidArgument("processor: Stop called from a handler would wait for itself");
      }
      if (stopped) {
        stop_done_cv.wait(lk, [&] { return stop_done; });
        return Status::OK();
      }
      stopped = true;
    }
    Status result = StopOnce(deadline);
    {
      std::lock_guard lk(mu);
      stop_done = true;
    }
    stop_done_cv.notify_all();
    return result;
  }

  Status StopOnce(SteadyClock::time_point deadline) {
    receive_stop.request_stop();
    for (std::thread& t : receivers) t.join();

    // Claimed, not started: straight back to the queue — except a message on
    // its last delivery, which an Abandon would dead-letter (SPEC §3) though
    // its handler never ran: the workers run those within the drain.
    std::vector<std::shared_ptr<Claim>> unstarted;
    {
      std::unique_lock lk(mu);
      std::deque<std::shared_ptr<Claim>> keep;
      for (auto& c : ready) {
        if (!c->lost && c->message.delivery_count >= queues[c->q].max_delivery) {
          keep.push_back(c);
        } else {
          unstarted.push_back(c);
        }
      }
      ready = std::move(keep);
    }
    std::vector<std::shared_ptr<Claim>> to_hand;
    for (const auto& c : unstarted) {
      std::lock_guard lk(mu);
      if (c->lost) continue;  // its lease is gone already
      c->handed_back = true;
      to_hand.push_back(c);
    }
    for (const auto& c : to_hand) c->stop.request_stop();
    HandBack(to_hand);
    {
      std::unique_lock lk(mu);
      for (const auto& c : unstarted) Finish(lk, c);
    }

    // Running: until the deadline to finish.
    std::vector<std::shared_ptr<Claim>> late;
    {
      std::unique_lock lk(mu);
      drained_cv.wait_until(lk, deadline, [&] { return claims.empty(); });
      for (const auto& [key, c] : claims) {
        if (c->Idle()) {
          c->handed_back = true;
          late.push_back(c);
        }
      }
    }
    for (const auto& c : late) c->stop.request_stop();
    const int64_t handed = HandBack(late);

    {
      std::lock_guard lk(mu);
      workers_exit = true;
    }
    work_cv.notify_all();
    for (std::thread& t : workers) t.join();
    {
      std::lock_guard lk(mu);
      renewer_exit = true;
    }
    renew_cv.notify_all();
    if (renewer.joinable()) renewer.join();
    if (!late.empty()) {
      return Status::Cancelled("processor: " + std::to_string(late.size()) +
                               " message(s) still in flight at the stop deadline; " +
                               std::to_string(handed) + " message(s) handed back");
    }
    return Status::OK();
  }

  // Exactly one of `handler` and `tx_handler` is set by the caller.
  static Result<std::unique_ptr<Processor>> Start(Engine& engine, ProcessorOptions options,
                                                  Handler handler, TxHandler tx_handler) {
    if (!handler && !tx_handler) return Status::InvalidArgument("processor: handler is empty");
    auto impl = std::make_unique<Impl>(engine, std::move(options));
    impl->handler = std::move(handler);
    impl->tx_handler = std::move(tx_handler);
    MQLITE_RETURN_IF_ERROR(ValidateOptions(impl->options));
    if (impl->engine.capabilities().read_only) {
      return Status::InvalidArgument("processor: the store is open read-only");
    }
    for (const std::string& name : impl->options.queues) {
      Result<QueueConfig> cfg = impl->engine.GetQueue(name);
      if (!cfg.ok()) return cfg.status();
      impl->queues.push_back({name, cfg->lock_duration_ms, cfg->max_delivery_count, 0});
    }
    Impl& s = *impl;
    {
      // Worker ids are registered before any worker can run a handler.
      std::lock_guard lk(s.mu);
      for (int i = 0; i < s.options.concurrency; ++i) {
        s.workers.emplace_back([&s] { s.WorkLoop(); });
        s.worker_ids.insert(s.workers.back().get_id());
      }
    }
    s.renewer = std::thread([&s] { s.RenewLoop(); });
    for (size_t q = 0; q < s.queues.size(); ++q) {
      s.receivers.emplace_back([&s, q] { s.ReceiveLoop(q); });
    }
    return std::unique_ptr<Processor>(new Processor(std::move(impl)));
  }
};

Processor::Processor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Processor::~Processor() { (void)Stop(); }

Result<std::unique_ptr<Processor>> Processor::Start(Engine& engine, ProcessorOptions options,
                                                    Handler handler) {
  return Impl::Start(engine, std::move(options), std::move(handler), nullptr);
}

Result<std::unique_ptr<Processor>> Processor::StartTx(Engine& engine, ProcessorOptions options,
                                                      TxHandler handler) {
  return Impl::Start(engine, std::move(options), nullptr, std::move(handler));
}

Status Processor::Stop(std::chrono::milliseconds drain) { return impl_->Stop(drain); }

ProcessorStats Processor::stats() const {
  std::lock_guard lk(impl_->mu);
  ProcessorStats s = impl_->counters;
  int64_t in_flight = 0;
  for (const auto& q : impl_->queues) in_flight += q.outstanding;
  s.in_flight = in_flight;
  s.handler_latency = impl_->latency.Summary();
  return s;
}

}  // namespace mqlite
