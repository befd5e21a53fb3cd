#include "mqlite/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "codec.h"
#include "sha256.h"
#include "token.h"
#include "validate.h"

namespace mqlite {

using internal::QueueLabel;

namespace {

using SteadyClock = std::chrono::steady_clock;

// The engine whose Tx callback is running on this thread, if any: its public
// methods refuse to run there (they would wait for the transaction the
// callback is inside of).
thread_local const Engine::Impl* tl_tx_engine = nullptr;

Status CheckCancelled(const CallOptions& call, std::string_view what) {
  if (call.stop_token.stop_requested()) {
    return Status::Cancelled(std::string(what) + ": stop requested");
  }
  if (SteadyClock::now() >= call.deadline) {
    return Status::Cancelled(std::string(what) + ": deadline passed");
  }
  return Status::OK();
}

RunOptions ToRunOptions(const CallOptions& call, bool rerunnable = true) {
  RunOptions o;
  o.rerunnable = rerunnable;
  o.stop = call.stop_token;
  o.deadline = call.deadline;
  return o;
}

std::string Seq(int64_t seq) { return "seq " + std::to_string(seq); }

// SPEC §4: (queue, message_id), or (queue, SHA-256 of body) when the id is
// absent or empty. The prefix keeps the two key spaces apart.
std::string DedupKey(const OutgoingMessage& m) {
  if (m.message_id && !m.message_id->empty()) return "i" + *m.message_id;
  return "h" + internal::Sha256::HashBytes(m.body);
}

// SPEC §7.2: a receipt is keyed by the whole request — queue, seq, token,
// operation and the arguments that change its effect.
std::string ReceiptKey(int64_t queue_id, const SettleRequest& r) {
  internal::Sha256 h;
  h.UpdateField("mqlite-receipt-1");
  h.UpdateInt(queue_id);
  h.UpdateInt(r.seq);
  h.Update(std::string_view(reinterpret_cast<const char*>(r.token.bytes.data()), 16));
  h.UpdateInt(static_cast<int>(r.op));
  if (r.op == SettleOp::kAbandon) h.UpdateInt(r.delay_ms);
  if (r.op == SettleOp::kReject) {
    h.UpdateField(r.reason);
    h.UpdateField(r.description);
  }
  auto d = h.Finish();
  // The seq, big-endian, leads the key: receipts are written in roughly seq
  // order, so a store's key-ordered index appends to the pages it touched
  // last instead of dirtying a random page per settle (one B-tree page per
  // receipt was most of CompleteBatch's write volume on SQLite).
  std::string key(8, '\0');
  for (int i = 0; i < 8; ++i) key[i] = static_cast<char>(static_cast<uint64_t>(r.seq) >> (56 - 8 * i));
  key.append(reinterpret_cast<const char*>(d.data()), d.size());
  return key;
}

}  // namespace

struct Engine::Impl {
  std::unique_ptr<Store> store;
  EngineOptions options;
  Clock* clock = nullptr;
  StoreCapabilities caps;

  // The waits below sleep under mu; never held across a store call. The
  // counters are atomics so a call's admission and Wake() take no lock on
  // the common path (seq_cst: a Close or a waiter that registers under mu
  // and then re-checks cannot miss an update).
  std::mutex mu;
  std::condition_variable_any cv;  // in-flight drain, long-poll wake-ups
  std::condition_variable maintenance_cv;  // the maintenance thread's sleep; Close
  std::atomic<bool> closed{false};
  bool close_done = false;  // guarded by mu
  std::atomic<int> inflight{0};
  std::atomic<int> waiters{0};
  std::atomic<uint64_t> wake_gen{0};  // bumped when messages may have become eligible

  // Ends one in-flight call; the last one out after Close wakes it.
  void Leave() {
    if (inflight.fetch_sub(1) == 1 && closed.load()) {
      std::lock_guard<std::mutex> l(mu);
      cv.notify_all();
    }
  }

  std::thread maintenance_thread;

  // Tx contexts, reused across Tx calls (see TxContext's comment).
  std::mutex tx_mu;
  std::vector<std::unique_ptr<TxContext>> tx_contexts;
  std::vector<TxContext*> tx_free;

  // RAII admission of one public call: the Close fence (SPEC §9), the
  // cancellation pre-check (SPEC §10) and the no-reentry-from-Tx rule.
  class Call {
   public:
    Call(Impl* impl, const CallOptions& call, std::string_view what) : impl_(impl) {
      if (tl_tx_engine == impl_) {
        status_ = Status::InvalidArgument(std::string(what) +
                                          " called inside Tx on the same engine; use the "
                                          "TxContext passed to the callback");
        impl_ = nullptr;
        return;
      }
      status_ = CheckCancelled(call, what);
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

  int64_t Now() { return clock->NowMs(); }

  // ---- Group commit (SPEC §9; EngineOptions::group_commit_max) ---------------
  //
  // Leader/follower: a write call queues its request; if no group is running,
  // it leads one: inside a single store transaction it takes the queued
  // requests (up to group_commit_max, oldest first) and runs them in order
  // (see LeadGroup for how a failing member is isolated). The others wait for
  // their request to be done. Requests are taken only once the leader's
  // transaction has started, so a caller still queued can give up on
  // cancellation having done nothing (SPEC §10).
  struct WriteRequest {
    enum class State { kQueued, kTaken, kDone };
    const std::function<Status(StoreTxn&)>* body;
    const CallOptions* call;
    State state = State::kQueued;
    Status status;
    // This caller's own wake-up (done, or its turn to lead), so a commit
    // wakes exactly its members instead of every waiter. Notified only with
    // gc_mu held: the request lives on its caller's stack.
    std::condition_variable_any cv;
  };
  std::mutex gc_mu;  // guards gc_queue, gc_leading and every request's state
  std::deque<WriteRequest*> gc_queue;
  bool gc_leading = false;

  // With gc_mu held: no group is running, so the oldest queued caller leads
  // the next one.
  void HandOffLocked() {
    if (!gc_leading && !gc_queue.empty()) gc_queue.front()->cv.notify_one();
  }

  // Errors that belong to one request: its savepoint rolled back cleanly and
  // the transaction is as it was before the request. Anything else (a store
  // error) aborts the group, and every member is re-run alone.
  static bool RequestLocal(StatusCode c) {
    switch (c) {
      case StatusCode::kInvalidArgument:
      case StatusCode::kGroupRequired:
      case StatusCode::kMessageTooLarge:
      case StatusCode::kQueueNotFound:
      case StatusCode::kNotFound:
      case StatusCode::kLockLost:
      case StatusCode::kDedupConflict:
        return true;
      default:
        return false;
    }
  }

  Status Write(const CallOptions& call, const std::function<Status(StoreTxn&)>& body) {
    if (options.group_commit_max <= 1) {
      return store->Run(TxnKind::kWrite, ToRunOptions(call), body);
    }
    using State = WriteRequest::State;
    WriteRequest req{&body, &call, State::kQueued, Status::OK(), {}};
    std::unique_lock<std::mutex> l(gc_mu);
    gc_queue.push_back(&req);
    for (;;) {
      if (req.state == State::kDone) return req.status;
      if (req.state == State::kTaken) {  // running in a group: wait for its commit
        req.cv.wait(l, [&] { return req.state == State::kDone; });
        continue;
      }
      if (!gc_leading) {
        gc_leading = true;
        l.unlock();
        LeadGroup(req);
        l.lock();
        gc_leading = false;
        HandOffLocked();
        continue;
      }
      auto ready = [&] { return req.state != State::kQueued || !gc_leading; };
      bool woke = call.deadline == SteadyClock::time_point::max()
                      ? req.cv.wait(l, call.stop_token, ready)
                      : req.cv.wait_until(l, call.stop_token, call.deadline, ready);
      if (!woke && req.state == State::kQueued) {
        gc_queue.erase(std::find(gc_queue.begin(), gc_queue.end(), &req));
        HandOffLocked();  // it may have been this caller's turn to lead
        return CheckCancelled(call, "waiting for the writer");
      }
    }
  }

  // Runs one group transaction. On return, every request it took is done;
  // `leader` may still be queued (not taken because the group was full, or
  // the transaction never started), and if it was cancelled it is done too.
  //
  // Optimistic first: the members run one after another with no savepoints
  // (a savepoint costs SQLite an allocation and a page-set scan per member).
  // If any member fails, that attempt is rolled back whole and the group is
  // run again with each member in its own savepoint, so a failing request
  // never fails its neighbours; a store error there sends everyone solo.
  void LeadGroup(WriteRequest& leader) {
    using State = WriteRequest::State;
    std::vector<WriteRequest*> taken;
    bool started = false;
    bool member_failed = false;
    auto attempt = [&](bool isolate) {
      return store->Run(TxnKind::kWrite, ToRunOptions(*leader.call), [&](StoreTxn& txn) {
        if (!started) {  // a rerun (RunOptions::rerunnable) keeps the same members
          started = true;
          std::lock_guard<std::mutex> g(gc_mu);
          while (!gc_queue.empty() &&
                 taken.size() < static_cast<size_t>(options.group_commit_max)) {
            gc_queue.front()->state = State::kTaken;
            taken.push_back(gc_queue.front());
            gc_queue.pop_front();
          }
        }
        if (taken.size() == 1) return (*taken[0]->body)(txn);  // alone: exactly a solo Run
        member_failed = false;
        for (WriteRequest* r : taken) {
          r->status = CheckCancelled(*r->call, "waiting for the writer");
          if (!r->status.ok()) continue;  // ran nothing
          r->status = isolate ? txn.Savepoint(*r->body) : (*r->body)(txn);
          if (r->status.ok()) continue;
          if (!isolate || !RequestLocal(r->status.code())) {
            member_failed = !isolate;
            return r->status;
          }
        }
        return Status::OK();
      });
    };
    Status s = attempt(/*isolate=*/false);
    if (started && taken.size() > 1 && member_failed) s = attempt(/*isolate=*/true);
    if (!started) {
      // The transaction never began (the leader was cancelled while waiting
      // for the store, or BEGIN failed): that is the leader's answer alone.
      std::lock_guard<std::mutex> g(gc_mu);
      gc_queue.erase(std::find(gc_queue.begin(), gc_queue.end(), &leader));
      leader.status = s;
      leader.state = State::kDone;
      return;
    }
    if (taken.size() == 1) {
      taken[0]->status = s;
    } else if (!s.ok() && s.code() != StatusCode::kOutcomeUnknown) {
      // Rolled back as a whole (a member's store error, or a failed commit):
      // nothing committed, so each member runs alone and gets its own answer.
      for (WriteRequest* r : taken) {
        r->status = store->Run(TxnKind::kWrite, ToRunOptions(*r->call), *r->body);
      }
    } else if (!s.ok()) {
      for (WriteRequest* r : taken) r->status = s;  // the commit's fate is every member's
    }
    std::lock_guard<std::mutex> g(gc_mu);
    for (WriteRequest* r : taken) {
      r->state = State::kDone;
      if (r != &leader) r->cv.notify_one();
    }
  }

  Status Read(const CallOptions& call, const std::function<Status(StoreTxn&)>& body) {
    return store->Run(TxnKind::kRead, ToRunOptions(call), body);
  }

  // Wakes long-poll waiters: something may have become eligible.
  void Wake() {
    wake_gen.fetch_add(1);
    if (waiters.load() > 0) {
      std::lock_guard<std::mutex> l(mu);  // a waiter between its check and its sleep holds mu
      cv.notify_all();
    }
  }

  uint64_t WakeGen() { return wake_gen.load(); }

  // The shape of most single-queue calls: check the name, then one store
  // transaction of `kind` that looks the queue up and runs fn(txn, queue).
  template <typename Fn>
  Status OnQueue(TxnKind kind, const CallOptions& call, std::string_view name, const Fn& fn) {
    MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(name));
    return store->Run(kind, ToRunOptions(call), [&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(QueueRecord q, LookupQueue(txn, name));
      return fn(txn, q);
    });
  }

  static Result<QueueRecord> LookupQueue(StoreTxn& txn, std::string_view name) {
    auto q = txn.GetQueue(name);
    if (!q && q.error().code() == StatusCode::kQueueNotFound) {
      return Status::QueueNotFound(QueueLabel(name) + " does not exist");
    }
    return q;
  }

  static Status LockLostError(std::string_view queue, int64_t seq, SettleOp op) {
    return Status::LockLost(QueueLabel(queue) + ": " + Seq(seq) + ": " +
                            std::string(SettleOpName(op)) +
                            " refused: the message is not locked under this token (wrong or "
                            "stale token, the lease expired, or it was already settled)");
  }

  // ---- Operations shared by the engine's methods and TxContext ----------------
  // Each runs inside a store transaction the caller provides.

  // SPEC §4. `single`: a dedup conflict is an error rather than seq 0.
  Status DoSend(StoreTxn& txn, std::string_view queue, std::span<const OutgoingMessage> messages,
                bool single, std::vector<int64_t>* seqs, bool* wrote) {
    *wrote = false;
    MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
    if (messages.empty() || messages.size() > static_cast<size_t>(options.max_send_batch)) {
      return Status::InvalidArgument(QueueLabel(queue) + ": a send batch holds 1-" +
                                     std::to_string(options.max_send_batch) + " messages, got " +
                                     std::to_string(messages.size()));
    }
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, LookupQueue(txn, queue));
    const int64_t now = Now();
    std::vector<EnqueueItem> items(messages.size());
    // Every message is validated before anything is written.
    for (size_t i = 0; i < messages.size(); ++i) {
      MQLITE_RETURN_IF_ERROR(
          internal::BuildEnqueueItem(q, options, messages[i], i, now, &items[i]));
    }
    seqs->assign(messages.size(), 0);
    if (q.config.dedup_window_ms <= 0) {
      MQLITE_ASSIGN_OR_RETURN(*seqs, txn.Enqueue(q, items));
      *wrote = true;
      return Status::OK();
    }
    // Dedup: classify each slot, insert the new ones in one Enqueue, then
    // record their keys in the same commit.
    struct NewKey {
      size_t slot;
      std::string hash;
    };
    std::map<std::string, NewKey> batch;        // key → first slot with it
    std::vector<std::pair<size_t, size_t>> refs;  // slot → earlier slot
    std::vector<size_t> fresh;
    std::vector<std::string> keys(messages.size());
    for (size_t i = 0; i < messages.size(); ++i) {
      keys[i] = DedupKey(messages[i]);
      std::string hash = internal::Sha256::HashBytes(messages[i].body);
      int64_t original = 0;
      bool same = false, known = false;
      if (auto it = batch.find(keys[i]); it != batch.end()) {
        known = true;
        same = it->second.hash == hash;
        if (same) refs.emplace_back(i, it->second.slot);
      } else {
        MQLITE_ASSIGN_OR_RETURN(std::optional<DedupRecord> rec, txn.FindDedup(q, keys[i], now));
        if (rec) {
          known = true;
          same = rec->body_hash == hash;
          original = rec->seq;
        }
      }
      if (!known) {
        batch.emplace(keys[i], NewKey{i, std::move(hash)});
        fresh.push_back(i);
        continue;
      }
      if (same) {
        (*seqs)[i] = original;  // 0 for a ref, resolved below
        continue;
      }
      if (single) {
        std::string what = messages[i].message_id && !messages[i].message_id->empty()
                               ? "message_id '" + *messages[i].message_id + "'"
                               : std::string("body hash");
        return Status::DedupConflict(QueueLabel(queue) + ": message " + std::to_string(i) + ": " +
                                     what + " was already sent within the dedup window with a "
                                     "different body" +
                                     (original ? " (original " + Seq(original) + ")" : ""));
      }
      (*seqs)[i] = 0;  // SPEC §4: the slot fails alone
    }
    if (!fresh.empty()) {
      std::vector<EnqueueItem> to_insert;
      to_insert.reserve(fresh.size());
      for (size_t i : fresh) to_insert.push_back(items[i]);
      MQLITE_ASSIGN_OR_RETURN(std::vector<int64_t> inserted, txn.Enqueue(q, to_insert));
      for (size_t k = 0; k < fresh.size(); ++k) {
        size_t i = fresh[k];
        (*seqs)[i] = inserted[k];
        DedupRecord rec{inserted[k], batch.at(keys[i]).hash, now + q.config.dedup_window_ms};
        MQLITE_RETURN_IF_ERROR(txn.PutDedup(q, keys[i], rec));
      }
      *wrote = true;
    }
    for (auto [slot, earlier] : refs) (*seqs)[slot] = (*seqs)[earlier];
    return Status::OK();
  }

  // SPEC §6 + §7.2: settle, write a receipt in the same commit; on LockLost,
  // a live receipt for the identical request is a successful replay.
  Result<SettleResult> DoSettle(StoreTxn& txn, const QueueRecord& q, SettleRequest req) {
    req.renew_until = req.now + q.config.lock_duration_ms;
    auto r = txn.Settle(q, req);
    const bool has_receipt = req.op != SettleOp::kRenew;  // Renew never replays
    if (r) {
      if (has_receipt) {
        MQLITE_RETURN_IF_ERROR(
            txn.PutReceipt(ReceiptKey(q.id, req), req.now + options.receipt_retention_ms));
      }
      return r;
    }
    if (r.error().code() != StatusCode::kLockLost) return r.error();
    if (has_receipt) {
      MQLITE_ASSIGN_OR_RETURN(bool live, txn.FindReceipt(ReceiptKey(q.id, req), req.now));
      if (live) return SettleResult{};  // replayed: the original effect stands
    }
    return LockLostError(q.config.name, req.seq, req.op);
  }

  Result<SettleResult> SettleInTxn(StoreTxn& txn, std::string_view queue, SettleRequest req) {
    MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
    MQLITE_RETURN_IF_ERROR(internal::ValidateToken(queue, req.seq, req.token));
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, LookupQueue(txn, queue));
    req.now = Now();
    return DoSettle(txn, q, std::move(req));
  }

  Result<SettleResult> SettleOne(std::string_view queue, SettleRequest req,
                                 const CallOptions& call) {
    SettleResult result;
    MQLITE_RETURN_IF_ERROR(Write(call, [&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(result, SettleInTxn(txn, queue, req));
      return Status::OK();
    }));
    if (req.op != SettleOp::kRenew && req.op != SettleOp::kDefer) Wake();
    return result;
  }

  // Shared by CompleteBatch and RenewBatch: per-item validation, then one
  // commit in which each item settles alone (a failed settle changes nothing).
  Status SettleBatch(std::string_view queue, std::span<const SettleItem> items, SettleOp op,
                     const CallOptions& call, std::vector<Status>* statuses,
                     std::vector<int64_t>* locked_until) {
    MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
    if (items.empty() || items.size() > internal::kMaxSettleBatch) {
      return Status::InvalidArgument(QueueLabel(queue) +
                                     ": a settle batch holds 1-512 items, got " +
                                     std::to_string(items.size()));
    }
    return Write(call, [&](StoreTxn& txn) -> Status {
      statuses->assign(items.size(), Status::OK());
      locked_until->assign(items.size(), 0);
      MQLITE_ASSIGN_OR_RETURN(QueueRecord q, LookupQueue(txn, queue));
      const int64_t now = Now();
      for (size_t i = 0; i < items.size(); ++i) {
        Status v = internal::ValidateToken(queue, items[i].seq, items[i].token);
        if (!v.ok()) {
          (*statuses)[i] = v;
          continue;
        }
        SettleRequest r;
        r.seq = items[i].seq;
        r.token = items[i].token;
        r.op = op;
        r.now = now;
        auto res = DoSettle(txn, q, r);
        if (!res && res.error().code() != StatusCode::kLockLost) return res.error();
        (*statuses)[i] = res.status();
        if (res) (*locked_until)[i] = res->locked_until;
      }
      return Status::OK();
    });
  }

  Result<MaintenanceReport> MaintainAll(int64_t limit, const CallOptions& call) {
    std::vector<QueueRecord> queues;
    MQLITE_RETURN_IF_ERROR(Read(call, [&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(queues, txn.ListQueues());
      return Status::OK();
    }));
    MaintenanceReport report;
    auto note = [&](int64_t n) {
      if (n >= limit) report.more = true;
      return n;
    };
    for (const QueueRecord& listed : queues) {
      // One short transaction per queue keeps the writer available.
      Status s = Write(call, [&](StoreTxn& txn) -> Status {
        auto q = txn.GetQueue(listed.config.name);
        if (!q) {
          // Deleted since we listed it: nothing to maintain.
          return q.error().code() == StatusCode::kQueueNotFound ? Status::OK() : q.error();
        }
        const int64_t now = Now();
        MQLITE_ASSIGN_OR_RETURN(int64_t promoted, txn.PromoteDue(*q, now, limit));
        MQLITE_ASSIGN_OR_RETURN(int64_t reclaimed, txn.ReclaimLocks(*q, now, false, limit));
        MQLITE_ASSIGN_OR_RETURN(int64_t expired, txn.ExpireMessages(*q, now, limit));
        MQLITE_ASSIGN_OR_RETURN(
            int64_t dropped,
            txn.EnforceRetention(*q, internal::ResolveRetention(q->config, options), now, limit));
        report.promoted += note(promoted);
        report.reclaimed += note(reclaimed);
        report.expired += note(expired);
        report.retention_dropped += note(dropped);
        return Status::OK();
      });
      if (!s.ok()) return s.WithContext(QueueLabel(listed.config.name) + ": maintenance");
    }
    MQLITE_RETURN_IF_ERROR(Write(call, [&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(int64_t n, txn.DropExpiredRecords(Now(), limit));
      report.records_dropped = note(n);
      MQLITE_ASSIGN_OR_RETURN(int64_t freed, txn.ReclaimSpace(limit));
      report.space_reclaimed = note(freed);
      return Status::OK();
    }));
    if (report.promoted > 0 || report.reclaimed > 0 || report.expired > 0) Wake();
    return report;
  }

  void MaintenanceLoop() {
    std::unique_lock<std::mutex> l(mu);
    while (!closed.load()) {
      maintenance_cv.wait_for(l, std::chrono::milliseconds(options.maintenance_interval_ms),
                              [&] { return closed.load(); });
      if (closed.load()) break;
      inflight.fetch_add(1);
      l.unlock();
      // A failed pass changed nothing it did not commit (one commit per
      // queue); the next pass retries.
      (void)MaintainAll(options.maintenance_batch, CallOptions{});
      Leave();
      l.lock();
    }
  }
};

// ---- TxContext --------------------------------------------------------------------

struct TxContext::State {
  Engine::Impl* impl = nullptr;
  StoreTxn* txn = nullptr;
  const CallOptions* call = nullptr;
  std::thread::id thread;
  bool active = false;
  bool wrote = false;

  // Every TxContext operation: valid context, not cancelled, then run `op` in
  // a savepoint so a failed operation leaves no trace even if the callback
  // carries on.
  Status Run(std::string_view what, const std::function<Status(StoreTxn&)>& op) {
    if (!active || txn == nullptr || std::this_thread::get_id() != thread) {
      return Status::InvalidArgument(std::string(what) +
                                     ": TxContext used outside its Tx callback");
    }
    MQLITE_RETURN_IF_ERROR(CheckCancelled(*call, what));
    return txn->Savepoint(op);
  }

  Status Settle(std::string_view what, std::string_view queue, const SettleRequest& req) {
    return Run(what, [&](StoreTxn& t) -> Status {
      Status s = impl->SettleInTxn(t, queue, req).status();
      wrote |= s.ok();
      return s;
    });
  }
};

TxContext::TxContext(std::unique_ptr<State> state) : state_(std::move(state)) {}
TxContext::~TxContext() = default;

void* TxContext::native_handle() const {
  if (!state_->active || !state_->txn || std::this_thread::get_id() != state_->thread) {
    return nullptr;
  }
  return state_->txn->NativeHandle();
}

const std::string& TxContext::native_handle_type() const {
  return state_->impl->caps.native_handle_type;
}

Result<std::vector<int64_t>> TxContext::SendBatch(std::string_view queue,
                                                  std::span<const OutgoingMessage> messages) {
  std::vector<int64_t> seqs;
  MQLITE_RETURN_IF_ERROR(state_->Run("Tx Send", [&](StoreTxn& txn) -> Status {
    bool wrote = false;
    Status s = state_->impl->DoSend(txn, queue, messages, /*single=*/false, &seqs, &wrote);
    state_->wrote |= s.ok() && wrote;
    return s;
  }));
  return seqs;
}

Result<int64_t> TxContext::Send(std::string_view queue, const OutgoingMessage& message) {
  std::vector<int64_t> seqs;
  MQLITE_RETURN_IF_ERROR(state_->Run("Tx Send", [&](StoreTxn& txn) -> Status {
    bool wrote = false;
    Status s = state_->impl->DoSend(txn, queue, std::span<const OutgoingMessage>(&message, 1),
                                    /*single=*/true, &seqs, &wrote);
    state_->wrote |= s.ok() && wrote;
    return s;
  }));
  return seqs.at(0);
}

Status TxContext::Complete(std::string_view queue, int64_t seq, const LockToken& token) {
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kComplete;
  return state_->Settle("Tx Complete", queue, r);
}

Status TxContext::Abandon(std::string_view queue, int64_t seq, const LockToken& token,
                          int64_t delay_ms) {
  if (delay_ms < 0 || delay_ms > internal::kMaxDelayMs) {
    return Status::InvalidArgument(QueueLabel(queue) + ": " + Seq(seq) + ": abandon delay_ms " +
                                   std::to_string(delay_ms) + " outside 0-365 days");
  }
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kAbandon;
  r.delay_ms = delay_ms;
  return state_->Settle("Tx Abandon", queue, r);
}

Status TxContext::Reject(std::string_view queue, int64_t seq, const LockToken& token,
                         std::string_view reason, std::string_view description) {
  if (reason.empty() || reason.size() > internal::kMaxIdBytes ||
      description.size() > internal::kMaxTextBytes) {
    return Status::InvalidArgument(QueueLabel(queue) + ": " + Seq(seq) +
                                   ": reject reason must be 1-128 bytes and description ≤ 1024");
  }
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kReject;
  r.reason = std::string(reason);
  r.description = std::string(description);
  return state_->Settle("Tx Reject", queue, r);
}

Status TxContext::Defer(std::string_view queue, int64_t seq, const LockToken& token) {
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kDefer;
  return state_->Settle("Tx Defer", queue, r);
}

// ---- Engine -------------------------------------------------------------------------

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() { (void)Close(); }

Result<std::unique_ptr<Engine>> Engine::Open(std::unique_ptr<Store> store,
                                             EngineOptions options) {
  if (!store) return Status::InvalidArgument("Engine::Open: store is null");
  if (options.maintenance_interval_ms <= 0 || options.maintenance_batch <= 0) {
    return Status::InvalidArgument(
        "Engine::Open: maintenance_interval_ms and maintenance_batch must be positive");
  }
  if (options.max_message_bytes <= 0 ||
      options.max_message_bytes > internal::kMaxMessageBytesLimit) {
    return Status::InvalidArgument("Engine::Open: max_message_bytes outside 1 B - 256 MiB");
  }
  if (options.max_send_batch <= 0) {
    return Status::InvalidArgument("Engine::Open: max_send_batch must be positive");
  }
  if (options.receipt_retention_ms <= 0 || options.attempt_retention_ms <= 0) {
    return Status::InvalidArgument(
        "Engine::Open: receipt_retention_ms and attempt_retention_ms must be positive");
  }
  auto impl = std::make_unique<Impl>();
  impl->store = std::move(store);
  impl->options = options;
  impl->clock = options.clock ? options.clock : SystemClock();
  impl->caps = impl->store->Capabilities();

  // SPEC §7.1: an exclusive store has no other live engine, so every locked
  // row is an orphan of a dead process. A shared store reclaims only expired
  // leases, which ordinary maintenance does.
  if (impl->caps.exclusive) {
    Impl* i = impl.get();
    Status s = i->Write(CallOptions{}, [&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(std::vector<QueueRecord> queues, txn.ListQueues());
      const int64_t now = i->Now();
      for (const QueueRecord& q : queues) {
        MQLITE_RETURN_IF_ERROR(
            txn.ReclaimLocks(q, now, /*all_locked=*/true, std::numeric_limits<int64_t>::max())
                .status());
      }
      return Status::OK();
    });
    if (!s.ok()) return s.WithContext("recovery at open");
  }
  if (options.background_maintenance) {
    Impl* i = impl.get();
    i->maintenance_thread = std::thread([i] { i->MaintenanceLoop(); });
  }
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Status Engine::Close() {
  Impl* i = impl_.get();
  if (tl_tx_engine == i) {
    return Status::InvalidArgument("Close called inside Tx on the same engine");
  }
  {
    std::unique_lock<std::mutex> l(i->mu);
    if (i->closed.load()) {
      i->cv.wait(l, [&] { return i->close_done; });
      return Status::OK();
    }
    i->closed.store(true);
    i->cv.notify_all();  // long-poll waiters
    i->maintenance_cv.notify_all();
  }
  if (i->maintenance_thread.joinable()) i->maintenance_thread.join();
  {
    std::unique_lock<std::mutex> l(i->mu);
    i->cv.wait(l, [&] { return i->inflight.load() == 0; });
  }
  i->store.reset();  // releases an embedded store's file lock
  std::lock_guard<std::mutex> l(i->mu);
  i->close_done = true;
  i->cv.notify_all();
  return Status::OK();
}

StoreCapabilities Engine::capabilities() const { return impl_->caps; }

// ---- Queues -------------------------------------------------------------------------

Result<QueueConfig> Engine::CreateQueue(const QueueConfig& config, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "CreateQueue");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueConfig(config));
  QueueConfig out;
  MQLITE_RETURN_IF_ERROR(impl_->Write(call, [&](StoreTxn& txn) -> Status {
    bool created = false;
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, txn.UpsertQueue(config, impl_->Now(), &created));
    out = q.config;
    return Status::OK();
  }));
  return out;
}

Result<QueueConfig> Engine::GetQueue(std::string_view name, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "GetQueue");
  MQLITE_RETURN_IF_ERROR(guard.status());
  QueueConfig out;
  MQLITE_RETURN_IF_ERROR(
      impl_->OnQueue(TxnKind::kRead, call, name, [&](StoreTxn&, const QueueRecord& q) {
        out = q.config;
        return Status::OK();
      }));
  return out;
}

Result<std::vector<QueueConfig>> Engine::ListQueues(const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "ListQueues");
  MQLITE_RETURN_IF_ERROR(guard.status());
  std::vector<QueueConfig> out;
  MQLITE_RETURN_IF_ERROR(impl_->Read(call, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(std::vector<QueueRecord> qs, txn.ListQueues());
    out.clear();
    for (auto& q : qs) out.push_back(std::move(q.config));
    return Status::OK();
  }));
  return out;
}

Status Engine::DeleteQueue(std::string_view name, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "DeleteQueue");
  MQLITE_RETURN_IF_ERROR(guard.status());
  return impl_->OnQueue(TxnKind::kWrite, call, name,
                        [&](StoreTxn& txn, const QueueRecord& q) { return txn.DeleteQueue(q); });
}

// ---- Send -----------------------------------------------------------------------------

Result<int64_t> Engine::Send(std::string_view queue, const OutgoingMessage& message,
                             const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Send");
  MQLITE_RETURN_IF_ERROR(guard.status());
  std::vector<int64_t> seqs;
  bool wrote = false;
  MQLITE_RETURN_IF_ERROR(impl_->Write(call, [&](StoreTxn& txn) -> Status {
    return impl_->DoSend(txn, queue, std::span<const OutgoingMessage>(&message, 1),
                         /*single=*/true, &seqs, &wrote);
  }));
  if (wrote) impl_->Wake();
  return seqs.at(0);
}

Result<std::vector<int64_t>> Engine::SendBatch(std::string_view queue,
                                               std::span<const OutgoingMessage> messages,
                                               const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "SendBatch");
  MQLITE_RETURN_IF_ERROR(guard.status());
  std::vector<int64_t> seqs;
  bool wrote = false;
  MQLITE_RETURN_IF_ERROR(impl_->Write(call, [&](StoreTxn& txn) -> Status {
    return impl_->DoSend(txn, queue, messages, /*single=*/false, &seqs, &wrote);
  }));
  if (wrote) impl_->Wake();
  return seqs;
}

Status Engine::Cancel(std::string_view queue, int64_t seq, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Cancel");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));  // name before seq, as elsewhere
  MQLITE_RETURN_IF_ERROR(internal::ValidateSeq(queue, seq));
  Status s = impl_->OnQueue(TxnKind::kWrite, call, queue, [&](StoreTxn& txn, const QueueRecord& q) {
    return txn.CancelScheduled(q, seq);
  });
  if (s.code() == StatusCode::kNotFound) {
    return Status::NotFound(QueueLabel(queue) + ": " + Seq(seq) +
                            " is not a scheduled, never-delivered message");
  }
  if (s.ok()) impl_->Wake();  // a cancelled group head unblocks its group
  return s;
}

// ---- Receive ----------------------------------------------------------------------------

Result<std::vector<Message>> Engine::Receive(std::string_view queue,
                                             const ReceiveOptions& options,
                                             const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Receive");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateReceive(queue, options));
  if (options.attempt_id &&
      (options.attempt_id->empty() || options.attempt_id->size() > internal::kMaxIdBytes)) {
    return Status::InvalidArgument(QueueLabel(queue) + ": attempt_id must be 1-128 bytes");
  }
  std::vector<LockToken> tokens;
  if (options.mode == ReceiveMode::kPeekLock) {
    MQLITE_RETURN_IF_ERROR(
        internal::NewTokens(static_cast<size_t>(options.max_messages), &tokens));
  }
  const auto wait_end = SteadyClock::now() + std::chrono::milliseconds(options.wait_ms);
  // A waiter also re-checks at this interval, so messages that become
  // eligible by time alone (a due schedule, an expired lease) are seen
  // without a send; sends and settles in this engine wake it at once.
  const auto recheck = std::chrono::milliseconds(250);
  const int64_t step = impl_->options.maintenance_batch;
  for (;;) {
    const uint64_t gen = impl_->WakeGen();
    std::vector<Message> got;
    bool replayed = false;
    MQLITE_RETURN_IF_ERROR(impl_->Write(call, [&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
      const int64_t now = impl_->Now();
      if (options.attempt_id) {  // SPEC §7.3
        MQLITE_ASSIGN_OR_RETURN(std::optional<AttemptRecord> rec,
                                txn.FindAttempt(*options.attempt_id, now));
        if (rec) {
          if (rec->queue_id != q.id || rec->mode != options.mode) {
            return Status::InvalidArgument(
                QueueLabel(queue) + ": attempt_id '" + *options.attempt_id +
                "' was used earlier with another queue or receive mode");
          }
          MQLITE_ASSIGN_OR_RETURN(got, internal::DecodeMessages(rec->payload));
          replayed = true;
          return Status::OK();
        }
      }
      // Apply this queue's time-driven transitions first, so a Receive sees
      // what maintenance would have made eligible at `now`.
      MQLITE_RETURN_IF_ERROR(txn.PromoteDue(q, now, step).status());
      MQLITE_RETURN_IF_ERROR(txn.ReclaimLocks(q, now, false, step).status());
      ClaimRequest req;
      req.now = now;
      req.max_messages = options.max_messages;
      req.mode = options.mode;
      req.locked_until = now + q.config.lock_duration_ms;
      req.tokens = tokens;
      MQLITE_ASSIGN_OR_RETURN(got, txn.Claim(q, req));
      if (options.attempt_id && !got.empty()) {
        AttemptRecord rec{q.id, options.mode, internal::EncodeMessages(got),
                          now + impl_->options.attempt_retention_ms};
        MQLITE_RETURN_IF_ERROR(txn.PutAttempt(*options.attempt_id, rec));
      }
      return Status::OK();
    }));
    if (!got.empty() || replayed || options.wait_ms == 0) return got;
    std::unique_lock<std::mutex> l(impl_->mu);
    if (SteadyClock::now() >= wait_end) return got;
    impl_->waiters.fetch_add(1);
    const auto until = std::min({wait_end, SteadyClock::now() + recheck, call.deadline});
    impl_->cv.wait_until(l, call.stop_token, until,
                         [&] { return impl_->closed.load() || impl_->wake_gen.load() != gen; });
    impl_->waiters.fetch_sub(1);
    if (impl_->closed.load()) {
      return Status::Closed(QueueLabel(queue) + ": engine closed during Receive");
    }
    l.unlock();
    MQLITE_RETURN_IF_ERROR(CheckCancelled(call, "Receive"));
  }
}

Result<std::vector<Message>> Engine::ReceiveDeferred(std::string_view queue,
                                                     std::span<const int64_t> seqs,
                                                     const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "ReceiveDeferred");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  if (seqs.empty() || seqs.size() > static_cast<size_t>(internal::kMaxReceive)) {
    return Status::InvalidArgument(QueueLabel(queue) +
                                   ": ReceiveDeferred takes 1-256 seqs, got " +
                                   std::to_string(seqs.size()));
  }
  std::set<int64_t> seen;
  for (int64_t seq : seqs) {
    MQLITE_RETURN_IF_ERROR(internal::ValidateSeq(queue, seq));
    if (!seen.insert(seq).second) {
      return Status::InvalidArgument(QueueLabel(queue) + ": " + Seq(seq) + " is listed twice");
    }
  }
  std::vector<LockToken> tokens;
  MQLITE_RETURN_IF_ERROR(internal::NewTokens(seqs.size(), &tokens));
  std::vector<Message> out;
  MQLITE_RETURN_IF_ERROR(impl_->Write(call, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
    const int64_t now = impl_->Now();
    out.clear();
    for (size_t i = 0; i < seqs.size(); ++i) {
      auto m = txn.ClaimDeferred(q, seqs[i], tokens[i], now, now + q.config.lock_duration_ms);
      if (!m) {
        if (m.error().code() == StatusCode::kNotFound) {
          return Status::NotFound(QueueLabel(queue) + ": " + std::string(m.error().message()));
        }
        return m.error();
      }
      out.push_back(std::move(*m));
    }
    return Status::OK();
  }));
  return out;
}

// ---- Settle -------------------------------------------------------------------------------

Status Engine::Complete(std::string_view queue, int64_t seq, const LockToken& token,
                        const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Complete");
  MQLITE_RETURN_IF_ERROR(guard.status());
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kComplete;
  return impl_->SettleOne(queue, std::move(r), call).status();
}

Status Engine::Abandon(std::string_view queue, int64_t seq, const LockToken& token,
                       int64_t delay_ms, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Abandon");
  MQLITE_RETURN_IF_ERROR(guard.status());
  if (delay_ms < 0 || delay_ms > internal::kMaxDelayMs) {
    return Status::InvalidArgument(QueueLabel(queue) + ": " + Seq(seq) + ": abandon delay_ms " +
                                   std::to_string(delay_ms) + " outside 0-365 days");
  }
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kAbandon;
  r.delay_ms = delay_ms;
  return impl_->SettleOne(queue, std::move(r), call).status();
}

Status Engine::Reject(std::string_view queue, int64_t seq, const LockToken& token,
                      std::string_view reason, std::string_view description,
                      const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Reject");
  MQLITE_RETURN_IF_ERROR(guard.status());
  if (reason.empty() || reason.size() > internal::kMaxIdBytes) {
    return Status::InvalidArgument(QueueLabel(queue) + ": " + Seq(seq) +
                                   ": reject reason must be 1-128 bytes");
  }
  if (description.size() > internal::kMaxTextBytes) {
    return Status::InvalidArgument(QueueLabel(queue) + ": " + Seq(seq) +
                                   ": reject description over 1024 bytes");
  }
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kReject;
  r.reason = std::string(reason);
  r.description = std::string(description);
  return impl_->SettleOne(queue, std::move(r), call).status();
}

Status Engine::Defer(std::string_view queue, int64_t seq, const LockToken& token,
                     const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Defer");
  MQLITE_RETURN_IF_ERROR(guard.status());
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kDefer;
  return impl_->SettleOne(queue, std::move(r), call).status();
}

Result<int64_t> Engine::Renew(std::string_view queue, int64_t seq, const LockToken& token,
                              const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Renew");
  MQLITE_RETURN_IF_ERROR(guard.status());
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kRenew;
  MQLITE_ASSIGN_OR_RETURN(SettleResult res, impl_->SettleOne(queue, std::move(r), call));
  return res.locked_until;
}

Result<std::vector<Status>> Engine::CompleteBatch(std::string_view queue,
                                                  std::span<const SettleItem> items,
                                                  const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "CompleteBatch");
  MQLITE_RETURN_IF_ERROR(guard.status());
  std::vector<Status> statuses;
  std::vector<int64_t> unused;
  MQLITE_RETURN_IF_ERROR(
      impl_->SettleBatch(queue, items, SettleOp::kComplete, call, &statuses, &unused));
  impl_->Wake();
  return statuses;
}

Result<std::vector<RenewOutcome>> Engine::RenewBatch(std::string_view queue,
                                                     std::span<const SettleItem> items,
                                                     const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "RenewBatch");
  MQLITE_RETURN_IF_ERROR(guard.status());
  std::vector<Status> statuses;
  std::vector<int64_t> until;
  MQLITE_RETURN_IF_ERROR(
      impl_->SettleBatch(queue, items, SettleOp::kRenew, call, &statuses, &until));
  std::vector<RenewOutcome> out(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    out[i].status = statuses[i];
    out[i].locked_until = statuses[i].ok() ? until[i] : 0;
  }
  return out;
}

// ---- Tx ---------------------------------------------------------------------------------------

Status Engine::Tx(const std::function<Status(TxContext&)>& fn, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Tx");
  MQLITE_RETURN_IF_ERROR(guard.status());
  if (!fn) return Status::InvalidArgument("Tx: callback is empty");
  std::exception_ptr thrown;
  bool wrote = false;
  TxContext* ctx = nullptr;
  {
    std::lock_guard<std::mutex> l(impl_->tx_mu);
    if (impl_->tx_free.empty()) {
      auto state = std::make_unique<TxContext::State>();
      state->impl = impl_.get();
      impl_->tx_contexts.push_back(std::unique_ptr<TxContext>(new TxContext(std::move(state))));
      impl_->tx_free.push_back(impl_->tx_contexts.back().get());
    }
    ctx = impl_->tx_free.back();
    impl_->tx_free.pop_back();
  }
  TxContext::State& state = *ctx->state_;
  Status s = impl_->store->Run(
      TxnKind::kWrite, ToRunOptions(call, /*rerunnable=*/false), [&](StoreTxn& txn) -> Status {
        state.txn = &txn;
        state.call = &call;
        state.thread = std::this_thread::get_id();
        state.wrote = false;
        state.active = true;
        tl_tx_engine = impl_.get();
        Status r;
        try {
          r = fn(*ctx);
        } catch (...) {
          thrown = std::current_exception();
          r = Status::Internal("Tx: the callback threw; everything it did was rolled back");
        }
        tl_tx_engine = nullptr;
        state.active = false;
        state.txn = nullptr;
        state.call = nullptr;
        if (r.ok()) r = txn.CheckNativeTxnOpen();
        // SPEC §10: cancellation observed before commit rolls everything back.
        if (r.ok()) r = CheckCancelled(call, "Tx");
        wrote = state.wrote;
        return r;
      });
  {
    std::lock_guard<std::mutex> l(impl_->tx_mu);
    impl_->tx_free.push_back(ctx);
  }
  if (thrown) std::rethrow_exception(thrown);
  if (s.ok() && wrote) impl_->Wake();
  return s;
}

// ---- Inspection and DLQ -------------------------------------------------------------------------

Result<std::vector<Message>> Engine::Peek(std::string_view queue, const PeekOptions& options,
                                          const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Peek");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidatePeek(queue, options));
  std::vector<Message> out;
  MQLITE_RETURN_IF_ERROR(impl_->OnQueue(TxnKind::kRead, call, queue,
                                        [&](StoreTxn& txn, const QueueRecord& q) -> Status {
                                          MQLITE_ASSIGN_OR_RETURN(out, txn.Peek(q, options));
                                          return Status::OK();
                                        }));
  return out;
}

Result<QueueStats> Engine::Stats(std::string_view queue, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Stats");
  MQLITE_RETURN_IF_ERROR(guard.status());
  QueueStats out;
  MQLITE_RETURN_IF_ERROR(impl_->OnQueue(TxnKind::kRead, call, queue,
                                        [&](StoreTxn& txn, const QueueRecord& q) -> Status {
                                          MQLITE_ASSIGN_OR_RETURN(out, txn.Stats(q, impl_->Now()));
                                          return Status::OK();
                                        }));
  return out;
}

Result<int64_t> Engine::Redrive(std::string_view queue, const RedriveOptions& options,
                                const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Redrive");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  std::string_view target = options.target_queue.empty() ? queue : options.target_queue;
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(target));
  if (options.max_messages < 0 || options.older_than_ms < 0) {
    return Status::InvalidArgument(QueueLabel(queue) +
                                   ": redrive max_messages and older_than_ms must not be negative");
  }
  int64_t moved = 0;
  MQLITE_RETURN_IF_ERROR(impl_->Write(call, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
    auto t = Impl::LookupQueue(txn, target);
    if (!t) return t.error().WithContext("redrive target");
    MQLITE_ASSIGN_OR_RETURN(moved, txn.Redrive(q, *t, options, impl_->Now()));
    return Status::OK();
  }));
  if (moved > 0) impl_->Wake();
  return moved;
}

Result<int64_t> Engine::Purge(std::string_view queue, const PurgeOptions& options,
                              const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Purge");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  if (options.max_messages < 0 || options.older_than_ms < 0) {
    return Status::InvalidArgument(QueueLabel(queue) +
                                   ": purge max_messages and older_than_ms must not be negative");
  }
  int64_t purged = 0;
  MQLITE_RETURN_IF_ERROR(impl_->OnQueue(
      TxnKind::kWrite, call, queue, [&](StoreTxn& txn, const QueueRecord& q) -> Status {
        MQLITE_ASSIGN_OR_RETURN(purged, txn.PurgeDeadLetters(q, options, impl_->Now()));
        return Status::OK();
      }));
  return purged;
}

// ---- Maintenance ----------------------------------------------------------------------------------

Result<MaintenanceReport> Engine::RunMaintenance(const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "RunMaintenance");
  MQLITE_RETURN_IF_ERROR(guard.status());
  return impl_->MaintainAll(impl_->options.maintenance_batch, call);
}

}  // namespace mqlite
