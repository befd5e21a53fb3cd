// mqlite::Processor — the receive loop done once, right (docs/processor.md).
//
//   auto p = mqlite::Processor::Start(*engine, {.queues = {"jobs"}, .concurrency = 4},
//       [](const mqlite::Message& m, const mqlite::HandlerContext& ctx)
//           -> mqlite::Result<mqlite::HandlerVerdict> {
//         if (!Handle(m.body, ctx.stop_token)) return mqlite::Status::Unavailable("try later");
//         return mqlite::HandlerVerdict::Complete();
//       });
//   ...
//   (void)(*p)->Stop(std::chrono::seconds(30));
//
// What it does for every queue in ProcessorOptions::queues:
//  - one receiver thread long-polls Receive (PeekLock) and keeps at most
//    concurrency + prefetch of that queue's messages claimed and not yet
//    settled; `concurrency` worker threads, shared by all queues, run the
//    handler on them in the order they were claimed;
//  - one renewal thread renews every claimed message's lease (running or still
//    waiting for a worker) a third of the way into it, in RenewBatch calls of
//    up to 512 messages per queue. A renewal answered LockLost (the lease
//    lapsed, or an operator dead-lettered or deleted the message) stops that
//    message's HandlerContext::stop_token; its verdict is then not applied;
//  - the handler's verdict is applied with Complete / Abandon(delay) /
//    Reject(reason) / Defer. A handler that returns an error (or throws) is
//    retried by RetryPolicy: Abandon with an exponential, jittered delay; on
//    its last delivery (delivery_count ≥ the queue's max_delivery_count) or
//    for a permanent error it is rejected to the DLQ with the error as the
//    description, so the dead letter says why (SPEC §3, §6).
//
// Delivery is at least once (SPEC §1): a message whose process dies
// mid-handler, or whose lease is lost, is delivered again. With StartTx the
// handler runs inside Engine::Tx and its verdict is applied in the same
// transaction, so what it writes (TxContext sends, its own tables through the
// native handle) commits exactly when the message is settled (SPEC §8).
//
// Thread-safety: stats() and Stop() may be called from any thread except a
// handler's (Stop from a handler would wait for itself: InvalidArgument).
#ifndef MQLITE_PROCESSOR_H_
#define MQLITE_PROCESSOR_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/status.h"
#include "mqlite/types.h"

namespace mqlite {

// What to do with a message the handler has finished with. (Not to be
// confused with mqlite::Verdict in store_util.h, the stores' claim decision.)
struct HandlerVerdict {
  enum class Kind : int { kComplete, kAbandon, kReject, kDefer };
  Kind kind = Kind::kComplete;
  int64_t delay_ms = 0;      // kAbandon: 0 – 365 days before it is claimable again
  std::string reason{};      // kReject: 1–128 bytes (dead_letter_reason)
  std::string description{}; // kReject: ≤ 1024 bytes

  static HandlerVerdict Complete() { return {}; }
  static HandlerVerdict Abandon(int64_t delay_ms = 0) { return {Kind::kAbandon, delay_ms, {}, {}}; }
  static HandlerVerdict Reject(std::string reason, std::string description = {}) {
    return {Kind::kReject, 0, std::move(reason), std::move(description)};
  }
  static HandlerVerdict Defer() { return {Kind::kDefer, 0, {}, {}}; }
};

struct HandlerContext {
  // Stopped when the message's lease is lost (a renewal answered LockLost)
  // or when Stop's deadline passes. A handler doing long work should check
  // it (or pass it to CallOptions) and return: its verdict will not be
  // applied, the message is delivered again.
  std::stop_token stop_token{};
  // The message's delivery_count: 1 on the first delivery.
  int32_t attempt = 1;
};

using Handler = std::function<Result<HandlerVerdict>(const Message&, const HandlerContext&)>;
// Runs inside Engine::Tx; the verdict is applied through the same TxContext,
// so the handler's writes commit together with the settle or not at all.
using TxHandler =
    std::function<Result<HandlerVerdict>(const Message&, TxContext&, const HandlerContext&)>;

// How a handler's error becomes a retry (Abandon with a delay) or a dead
// letter.
struct RetryPolicy {
  // Delay before delivery n + 1 after a failed delivery n:
  //   min(max_backoff_ms, initial_backoff_ms · multiplier^(n−1)),
  // then scaled by a uniform factor in [1 − jitter, 1 + jitter] (and capped
  // at max_backoff_ms again), so a burst of failures does not come back as a
  // burst. Ranges: initial 0 – max; max ≤ 365 days; multiplier 1 – 100;
  // jitter 0 – 1.
  int64_t initial_backoff_ms = 1'000;
  int64_t max_backoff_ms = 5 * 60'000;
  double multiplier = 2.0;
  double jitter = 0.2;
  // True for an error retrying cannot fix: the message is rejected at once
  // with reason kReasonProcessingFailed. Empty = InvalidArgument is permanent,
  // every other code is retried.
  std::function<bool(const Status&)> is_permanent{};

  // The delay for a failed delivery `delivery_count` (≥ 1) with the jitter
  // draw `unit` in [0, 1): the formula above, deterministic.
  int64_t Backoff(int32_t delivery_count, double unit) const;
};

// The dead_letter_reason of a message the processor rejected because its
// handler failed (permanently, or on its last delivery); the description
// holds the handler's error ("Unavailable: ...").
inline constexpr std::string_view kReasonProcessingFailed = "ProcessingFailed";

struct ProcessorOptions {
  std::vector<std::string> queues{};  // 1–64 distinct existing queues
  int concurrency = 1;                // worker threads, 1–256
  // Messages per queue claimed ahead of a free worker (they are leased and
  // renewed while they wait), 0–256. Receive asks for up to
  // concurrency + prefetch − (claimed and unsettled) at a time.
  int prefetch = 0;
  // Long-poll of each Receive, 1 – 20,000 ms (SPEC §5).
  int64_t wait_ms = 5'000;
  RetryPolicy retry{};
};

// Latencies of handler calls (from a worker starting the handler to its
// return; not the wait for a worker, not the settle), from a histogram with 8 buckets per power of two: quantiles are
// within ~9 %.
struct LatencySummary {
  int64_t count = 0;
  int64_t mean_us = 0;
  int64_t p50_us = 0;
  int64_t p99_us = 0;
  int64_t max_us = 0;
};

// Monotonic counters since Start, and the current in_flight.
struct ProcessorStats {
  int64_t received = 0;       // messages claimed
  int64_t completed = 0;      // settled Complete (verdict, or TxHandler's commit)
  int64_t abandoned = 0;      // Abandon verdicts
  int64_t retried = 0;        // handler errors abandoned with a backoff delay
  int64_t dead_lettered = 0;  // rejected: Reject verdicts and failed last/permanent deliveries
  int64_t deferred = 0;
  // Errors returned or exceptions thrown by the handler, and verdicts that
  // could not be applied for a reason other than LockLost (an invalid
  // verdict; a store failure, which rolled a Tx handler's writes back) —
  // each goes through the RetryPolicy.
  int64_t handler_errors = 0;
  int64_t renewals = 0;       // lease renewals that succeeded
  int64_t leases_lost = 0;    // renewals answered LockLost (handler's token stopped)
  int64_t settle_failures = 0;  // a settle answered LockLost (or failed after a retry decision)
  int64_t receive_errors = 0;   // failed Receive calls (retried with a backoff)
  int64_t abandoned_on_stop = 0;  // claimed messages Stop handed back
  int64_t in_flight = 0;        // claimed and not yet settled, now
  std::string last_error{};     // the most recent error above, "" if none
  LatencySummary handler_latency{};
};

class Processor {
 public:
  // Validates `options` (InvalidArgument naming the field; QueueNotFound for a
  // missing queue; InvalidArgument on a read-only store) and starts the
  // threads. `engine` must outlive the processor.
  static Result<std::unique_ptr<Processor>> Start(Engine& engine, ProcessorOptions options,
                                                  Handler handler);
  static Result<std::unique_ptr<Processor>> StartTx(Engine& engine, ProcessorOptions options,
                                                    TxHandler handler);
  ~Processor();  // Stop(30 s) if still running
  Processor(const Processor&) = delete;
  Processor& operator=(const Processor&) = delete;

  // Stops receiving at once and hands back (Abandon, no delay) every claimed
  // message no worker has started — except one on its last delivery, which
  // Abandon would dead-letter (SPEC §3): the workers run those within the
  // drain. Handlers still running have until `drain` to return and have
  // their verdicts applied; at the deadline their stop tokens are stopped
  // and every message still in flight is abandoned, so another consumer can
  // take it without waiting for the lease. Returns once every handler has
  // returned (a handler that ignores its stop token delays this) and every
  // thread has exited: OK if all in-flight work finished in time, Cancelled
  // naming how many messages were handed back at the deadline otherwise.
  // Idempotent: a later or concurrent call waits for the first to finish
  // and returns OK.
  Status Stop(std::chrono::milliseconds drain = std::chrono::seconds(30));

  ProcessorStats stats() const;

  struct Impl;

 private:
  explicit Processor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mqlite

#endif  // MQLITE_PROCESSOR_H_
