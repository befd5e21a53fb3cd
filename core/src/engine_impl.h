// Engine::Impl: the engine's shared state and the operations its public
// methods and TxContext share (engine.cc), split by what each part owns:
//   group_commit.h  the writer queue (SPEC §9 group commit)
//   maintenance.h   the maintenance thread (SPEC §1)
//   tx_context.cc   Tx and its pooled contexts (SPEC §8)
//   keys.h          idempotency keys (SPEC §4, §7.2)
//   validate.h      every argument rule (SPEC §2–§10)
// Internal: not installed.
#ifndef MQLITE_CORE_SRC_ENGINE_IMPL_H_
#define MQLITE_CORE_SRC_ENGINE_IMPL_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "call.h"
#include "group_commit.h"
#include "maintenance.h"
#include "mqlite/engine.h"
#include "validate.h"

namespace mqlite {
namespace internal {

// The engine whose Tx callback is running on this thread, if any: its public
// methods refuse to run there (they would wait for the transaction the
// callback is inside of).
extern thread_local const Engine::Impl* tl_tx_engine;

inline std::string SeqLabel(int64_t seq) { return "seq " + std::to_string(seq); }

// A settle of `op` on `seq` under `token`; the caller adds the op's arguments
// (delay, reason) and the engine fills in `now`.
inline SettleRequest MakeSettle(SettleOp op, int64_t seq, const LockToken& token) {
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = op;
  return r;
}

}  // namespace internal

struct Engine::Impl {
  std::unique_ptr<Store> store;
  EngineOptions options;
  Clock* clock = nullptr;
  StoreCapabilities caps;
  // This engine's registration with a shared store (Store::RegisterEngine,
  // spec.md §9), withdrawn at Close; declared after `store`, so a failed
  // Open drops it first too.
  std::unique_ptr<EngineRegistration> registration;

  // The waits below sleep under mu; never held across a store call. The
  // counters are atomics so a call's admission and Wake() take no lock on
  // the common path (seq_cst: a Close or a waiter that registers under mu
  // and then re-checks cannot miss an update).
  std::mutex mu;
  std::condition_variable_any cv;  // in-flight drain, long-poll wake-ups
  std::atomic<bool> closed{false};
  bool close_done = false;  // guarded by mu
  std::atomic<int> inflight{0};
  std::atomic<int> waiters{0};
  std::atomic<uint64_t> wake_gen{0};  // bumped when messages may have become eligible
  // Change feed bookkeeping (guarded by mu): a counter of feed events and,
  // per queue id, the value it had at that queue's latest change.
  uint64_t feed_seq = 0;
  std::unordered_map<int64_t, uint64_t> queue_changed_at;
  // Long-poll claims after a wake-up (Engine::Receive), per queue id: one
  // runs at a time, and a woken waiter whose wake-up a finished one already
  // covered — it began after that wake-up and took fewer messages than it
  // asked for, so the queue had no more — waits again instead of claiming.
  // A message sent to a queue with N waiters then costs one claim, not N.
  // Guarded by mu.
  struct ClaimRound {
    bool running = false;  // a woken waiter's claim is under way
    // The last finished one: whether it took fewer than it asked for (false
    // until one has finished), and wake_gen and feed_seq when it began.
    bool drained = false;
    uint64_t gen = 0;
    uint64_t feed = 0;
  };
  std::unordered_map<int64_t, ClaimRound> claim_rounds;

  // Ends one in-flight call; the last one out after Close wakes it.
  void Leave() {
    if (inflight.fetch_sub(1) == 1 && closed.load()) {
      std::lock_guard<std::mutex> l(mu);
      cv.notify_all();
    }
  }

  // Owned parts (each file says what it owns): the writer queue and the
  // maintenance thread. Declared after `store` and `options`, which they use.
  std::unique_ptr<internal::GroupCommit> writer;
  std::unique_ptr<internal::Maintainer> maintainer;

  // The store's change feed, if it has one (declared after everything its
  // callback touches, so it is destroyed first).
  std::unique_ptr<ChangeSubscription> feed;

  // Tx contexts, reused across Tx calls (see TxContext's comment).
  std::mutex tx_mu;
  std::vector<std::unique_ptr<TxContext>> tx_contexts;
  std::vector<TxContext*> tx_free;

  // RAII admission of one public call: the Close fence (SPEC §9), the
  // cancellation pre-check (SPEC §10) and the no-reentry-from-Tx rule.
  class Call {
   public:
    Call(Impl* impl, const CallOptions& call, std::string_view what) : impl_(impl) {
      if (internal::tl_tx_engine == impl_) {
        status_ = Status::InvalidArgument(std::string(what) +
                                          " called inside Tx on the same engine; use the "
                                          "TxContext passed to the callback");
        impl_ = nullptr;
        return;
      }
      status_ = internal::CheckCancelled(call, what);
      if (!status_.ok()) {
        impl_ = nullptr;
        return;
      }
      impl_->inflight.fetch_add(1);
      if (impl_->closed.load()) {
        impl_->Leave();
        status_ = Status::Closed(std::string(what) + ": engine is closed");
        impl_ = nullptr;
      }
    }
    ~Call() {
      if (impl_) impl_->Leave();
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    const Status& status() const { return status_; }

   private:
    Impl* impl_;
    Status status_;
  };

  // The clock, saturated to [0, kMaxClockMs] (EngineOptions::clock) so that
  // now + any validated duration cannot overflow.
  int64_t Now() { return std::clamp<int64_t>(clock->NowMs(), 0, internal::kMaxClockMs); }


  // Every write transaction goes through group commit (SPEC §9).
  Status Write(const CallOptions& call, const std::function<Status(StoreTxn&)>& body) {
    return writer->Write(call, body);
  }

  Status Read(const CallOptions& call, const std::function<Status(StoreTxn&)>& body) {
    return store->Run(TxnKind::kRead, internal::ToRunOptions(call), body);
  }

  // Wakes long-poll waiters after this engine's own commit: something may
  // have become eligible. With a change feed the store reports every commit
  // (this engine's included) per queue through WakeQueue, so this does
  // nothing.
  void Wake() {
    if (feed) return;
    wake_gen.fetch_add(1);
    if (waiters.load() > 0) {
      std::lock_guard<std::mutex> l(mu);  // a waiter between its check and its sleep holds mu
      cv.notify_all();
    }
  }

  uint64_t WakeGen() { return wake_gen.load(); }

  // The change feed's callback (Store::Subscribe): a commit touched queue
  // `queue_id`. Only long-polls on that queue re-run their claim.
  void WakeQueue(int64_t queue_id) {
    std::lock_guard<std::mutex> l(mu);
    queue_changed_at[queue_id] = ++feed_seq;
    if (waiters.load() > 0) cv.notify_all();
  }
  // The change-feed counter now, to pass to QueueChangedSince later; 0 (and
  // no lock taken) without a feed, when nothing ever changes it.
  uint64_t FeedSeq() {
    if (!feed) return 0;
    std::lock_guard<std::mutex> l(mu);
    return feed_seq;
  }
  // Whether queue `queue_id` changed after feed_seq was `since`. Under mu.
  bool QueueChangedSince(int64_t queue_id, uint64_t since) const {
    auto it = queue_changed_at.find(queue_id);
    return it != queue_changed_at.end() && it->second > since;
  }

  // The shape of most single-queue calls: check the name, then one store
  // transaction of `kind` that looks the queue up and runs fn(txn, queue).
  // A write goes through group commit like every other write (SPEC §9).
  template <typename Fn>
  Status OnQueue(TxnKind kind, const CallOptions& call, std::string_view name, const Fn& fn) {
    MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(name));
    auto body = [&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(QueueRecord q, LookupQueue(txn, name));
      return fn(txn, q);
    };
    return kind == TxnKind::kWrite ? Write(call, body) : Read(call, body);
  }

  static Result<QueueRecord> LookupQueue(StoreTxn& txn, std::string_view name) {
    auto q = txn.GetQueue(name);
    if (!q && q.error().code() == StatusCode::kQueueNotFound) {
      return Status::QueueNotFound(internal::QueueLabel(name) + " does not exist");
    }
    return q;
  }

  static Status LockLostError(std::string_view queue, int64_t seq, SettleOp op) {
    return Status::LockLost(internal::QueueLabel(queue) + ": " + internal::SeqLabel(seq) + ": " +
                            std::string(SettleOpName(op)) +
                            " refused: the message is not locked under this token (wrong or "
                            "stale token, the lease expired, or it was already settled)");
  }

  // ---- Operations shared by the engine's methods and TxContext ----------------
  // Each runs inside a store transaction the caller provides.
  // SPEC §4. `single`: a dedup conflict is the call's error rather than the
  // slot's outcome.
  Status DoSend(StoreTxn& txn, std::string_view queue, std::span<const OutgoingMessage> messages,
                bool single, std::vector<SendOutcome>* out, bool* wrote);

  // SPEC §6 + §7.2: settle, write a receipt in the same commit; on LockLost,
  // a live receipt for the identical request is a successful replay.
  // `final_call`: the body runs alone and this settle is its last write
  // (StoreTxn::FinalCallFollows); only SettleOne's body passes true.
  Result<SettleResult> DoSettle(StoreTxn& txn, const QueueRecord& q, SettleRequest req,
                                bool final_call = false);
  // DoSettle's two halves, shared with SettleBatch: the fields the engine
  // fills in (renewal, receipt key and expiry), and the reading of the
  // store's answer (a LockLost with a live receipt is a replay).
  void PrepareSettle(const QueueRecord& q, SettleRequest* req) const;
  Result<SettleResult> FinishSettle(StoreTxn& txn, const QueueRecord& q, const SettleRequest& req,
                                    Result<SettleResult> stored);

  Result<SettleResult> SettleInTxn(StoreTxn& txn, std::string_view queue, SettleRequest req,
                                   bool final_call = false);

  Result<SettleResult> SettleOne(std::string_view queue, SettleRequest req,
                                 const CallOptions& call);

  // Shared by CompleteBatch and RenewBatch: per-item validation, then one
  // commit in which each item settles alone (a failed settle changes nothing).
  Status SettleBatch(std::string_view queue, std::span<const SettleItem> items, SettleOp op,
                     const CallOptions& call, std::vector<Status>* statuses,
                     std::vector<int64_t>* locked_until);
};

}  // namespace mqlite

#endif  // MQLITE_CORE_SRC_ENGINE_IMPL_H_
