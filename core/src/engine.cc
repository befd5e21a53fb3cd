#include "mqlite/engine.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "token.h"
#include "validate.h"

namespace mqlite {

using internal::QueueLabel;

struct Engine::Impl {
  std::unique_ptr<Store> store;
  EngineOptions options;
  Clock* clock = nullptr;
  StoreCapabilities caps;

  // Guards everything below. Never held across a store call.
  std::mutex mu;
  std::condition_variable cv;  // in-flight drain, and long-poll wake-ups
  bool closed = false;
  bool close_done = false;
  int inflight = 0;
  int waiters = 0;
  uint64_t wake_gen = 0;  // bumped when messages may have become eligible

  std::thread maintenance_thread;

  // RAII admission of one public call (SPEC §9 Close fence).
  class Call {
   public:
    explicit Call(Impl* impl) : impl_(impl) {
      std::lock_guard<std::mutex> l(impl_->mu);
      if (impl_->closed) {
        status_ = Status::Closed("engine is closed");
        impl_ = nullptr;
        return;
      }
      ++impl_->inflight;
    }
    ~Call() {
      if (!impl_) return;
      std::lock_guard<std::mutex> l(impl_->mu);
      if (--impl_->inflight == 0) impl_->cv.notify_all();
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    const Status& status() const { return status_; }

   private:
    Impl* impl_;
    Status status_;
  };

  int64_t Now() { return clock->NowMs(); }

  Status Write(const std::function<Status(StoreTxn&)>& body) {
    return store->Run(TxnKind::kWrite, /*rerunnable=*/true, body);
  }
  Status Read(const std::function<Status(StoreTxn&)>& body) {
    return store->Run(TxnKind::kRead, /*rerunnable=*/true, body);
  }

  // Wakes long-poll waiters: something may have become eligible.
  void Wake() {
    std::lock_guard<std::mutex> l(mu);
    ++wake_gen;
    if (waiters > 0) cv.notify_all();
  }

  uint64_t WakeGen() {
    std::lock_guard<std::mutex> l(mu);
    return wake_gen;
  }

  static Result<QueueRecord> LookupQueue(StoreTxn& txn, std::string_view name) {
    auto q = txn.GetQueue(name);
    if (!q && q.error().code() == StatusCode::kQueueNotFound) {
      return Status::QueueNotFound(QueueLabel(name) + " does not exist");
    }
    return q;
  }

  // Store errors for a settle carry the store's wording; the engine's own
  // LockLost message names the queue, seq and the possible causes.
  static Status SettleError(std::string_view queue, int64_t seq, SettleOp op, const Status& s) {
    if (s.code() == StatusCode::kLockLost) {
      return Status::LockLost(QueueLabel(queue) + ": seq " + std::to_string(seq) + ": " +
                              std::string(SettleOpName(op)) +
                              " refused: the message is not locked under this token (wrong or "
                              "stale token, the lease expired, or it was settled)");
    }
    return s;
  }

  Result<SettleResult> SettleOne(std::string_view queue, SettleRequest req) {
    MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
    MQLITE_RETURN_IF_ERROR(internal::ValidateToken(queue, req.seq, req.token));
    SettleResult result;
    Status s = Write([&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(QueueRecord q, LookupQueue(txn, queue));
      req.now = Now();
      req.renew_until = req.now + q.config.lock_duration_ms;
      auto r = txn.Settle(q, req);
      if (!r) return SettleError(queue, req.seq, req.op, r.error());
      result = *r;
      return Status::OK();
    });
    if (!s.ok()) return s;
    if (req.op != SettleOp::kRenew && req.op != SettleOp::kDefer) Wake();
    return result;
  }

  Result<MaintenanceReport> MaintainAll(int64_t limit) {
    std::vector<QueueRecord> queues;
    MQLITE_RETURN_IF_ERROR(Read([&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(queues, txn.ListQueues());
      return Status::OK();
    }));
    MaintenanceReport report;
    for (const QueueRecord& listed : queues) {
      Status s = Write([&](StoreTxn& txn) -> Status {
        auto q = txn.GetQueue(listed.config.name);
        if (!q) {
          // Deleted since we listed it: nothing to maintain.
          return q.error().code() == StatusCode::kQueueNotFound ? Status::OK() : q.error();
        }
        int64_t now = Now();
        MQLITE_ASSIGN_OR_RETURN(int64_t promoted, txn.PromoteDue(*q, now, limit));
        MQLITE_ASSIGN_OR_RETURN(int64_t reclaimed, txn.ReclaimLocks(*q, now, false, limit));
        MQLITE_ASSIGN_OR_RETURN(int64_t expired, txn.ExpireMessages(*q, now, limit));
        MQLITE_ASSIGN_OR_RETURN(
            int64_t dropped,
            txn.EnforceRetention(*q, internal::ResolveRetention(q->config, options), now, limit));
        report.promoted += promoted;
        report.reclaimed += reclaimed;
        report.expired += expired;
        report.retention_dropped += dropped;
        if (promoted == limit || reclaimed == limit || expired == limit || dropped == limit) {
          report.more = true;
        }
        return Status::OK();
      });
      if (!s.ok()) return s.WithContext(QueueLabel(listed.config.name) + ": maintenance");
    }
    if (report.promoted > 0 || report.reclaimed > 0) Wake();
    return report;
  }

  // Shared by CompleteBatch and RenewBatch: per-item validation, then one
  // commit in which each item settles alone (a failed settle changes nothing).
  template <typename OnItem>
    static Status SettleBatch(Impl* impl, std::string_view queue, std::span<const SettleItem> items,
                     SettleOp op, std::vector<Status>* statuses, OnItem on_item) {
    MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
    if (items.empty() || items.size() > internal::kMaxSettleBatch) {
      return Status::InvalidArgument(QueueLabel(queue) + ": a settle batch holds 1-512 items, got " +
                                     std::to_string(items.size()));
    }
    statuses->assign(items.size(), Status::OK());
    for (size_t i = 0; i < items.size(); ++i) {
      (*statuses)[i] = internal::ValidateToken(queue, items[i].seq, items[i].token);
    }
    return impl->Write([&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(QueueRecord q, LookupQueue(txn, queue));
      int64_t now = impl->Now();
      for (size_t i = 0; i < items.size(); ++i) {
        if (!(*statuses)[i].ok() && (*statuses)[i].code() == StatusCode::kInvalidArgument) continue;
        SettleRequest r;
        r.seq = items[i].seq;
        r.token = items[i].token;
        r.op = op;
        r.now = now;
        r.renew_until = now + q.config.lock_duration_ms;
        auto res = txn.Settle(q, r);
        if (!res && res.error().code() != StatusCode::kLockLost) return res.error();
        (*statuses)[i] = res ? Status::OK() : SettleError(queue, r.seq, op, res.error());
        on_item(i, res);
      }
      return Status::OK();
    });
  }

  void MaintenanceLoop() {
    std::unique_lock<std::mutex> l(mu);
    while (!closed) {
      cv.wait_for(l, std::chrono::milliseconds(options.maintenance_interval_ms),
                  [&] { return closed; });
      if (closed) break;
      ++inflight;
      l.unlock();
      // Errors are transient by nature here (the next pass retries); a pass
      // never changes state that a failed pass left half-done (one commit per
      // queue).
      (void)MaintainAll(options.maintenance_batch);
      l.lock();
      if (--inflight == 0) cv.notify_all();
    }
  }
};

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
    Status s = i->Write([&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(std::vector<QueueRecord> queues, txn.ListQueues());
      int64_t now = i->Now();
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
  {
    std::unique_lock<std::mutex> l(i->mu);
    if (i->closed) {
      i->cv.wait(l, [&] { return i->close_done; });
      return Status::OK();
    }
    i->closed = true;
    i->cv.notify_all();  // long-poll waiters and the maintenance thread
  }
  if (i->maintenance_thread.joinable()) i->maintenance_thread.join();
  {
    std::unique_lock<std::mutex> l(i->mu);
    i->cv.wait(l, [&] { return i->inflight == 0; });
  }
  i->store.reset();  // releases an embedded store's file lock
  std::lock_guard<std::mutex> l(i->mu);
  i->close_done = true;
  i->cv.notify_all();
  return Status::OK();
}

StoreCapabilities Engine::capabilities() const { return impl_->caps; }

// ---- Queues -----------------------------------------------------------------

Result<QueueConfig> Engine::CreateQueue(const QueueConfig& config) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueConfig(config));
  QueueConfig out;
  MQLITE_RETURN_IF_ERROR(impl_->Write([&](StoreTxn& txn) -> Status {
    bool created = false;
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, txn.UpsertQueue(config, impl_->Now(), &created));
    out = q.config;
    return Status::OK();
  }));
  return out;
}

Result<QueueConfig> Engine::GetQueue(std::string_view name) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(name));
  QueueConfig out;
  MQLITE_RETURN_IF_ERROR(impl_->Read([&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, name));
    out = q.config;
    return Status::OK();
  }));
  return out;
}

Result<std::vector<QueueConfig>> Engine::ListQueues() {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  std::vector<QueueConfig> out;
  MQLITE_RETURN_IF_ERROR(impl_->Read([&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(std::vector<QueueRecord> qs, txn.ListQueues());
    out.clear();
    for (auto& q : qs) out.push_back(std::move(q.config));
    return Status::OK();
  }));
  return out;
}

Status Engine::DeleteQueue(std::string_view name) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(name));
  return impl_->Write([&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, name));
    return txn.DeleteQueue(q);
  });
}

// ---- Send -------------------------------------------------------------------

Result<int64_t> Engine::Send(std::string_view queue, const OutgoingMessage& message) {
  MQLITE_ASSIGN_OR_RETURN(std::vector<int64_t> seqs,
                          SendBatch(queue, std::span<const OutgoingMessage>(&message, 1)));
  return seqs.at(0);
}

Result<std::vector<int64_t>> Engine::SendBatch(std::string_view queue,
                                               std::span<const OutgoingMessage> messages) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  if (messages.empty() || messages.size() > static_cast<size_t>(impl_->options.max_send_batch)) {
    return Status::InvalidArgument(QueueLabel(queue) + ": a send batch holds 1-" +
                                   std::to_string(impl_->options.max_send_batch) +
                                   " messages, got " + std::to_string(messages.size()));
  }
  std::vector<int64_t> seqs;
  std::vector<EnqueueItem> items(messages.size());
  MQLITE_RETURN_IF_ERROR(impl_->Write([&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
    int64_t now = impl_->Now();
    // SPEC §4: every message is validated before anything is written.
    for (size_t i = 0; i < messages.size(); ++i) {
      MQLITE_RETURN_IF_ERROR(
          internal::BuildEnqueueItem(q, impl_->options, messages[i], i, now, &items[i]));
    }
    MQLITE_ASSIGN_OR_RETURN(seqs, txn.Enqueue(q, items));
    return Status::OK();
  }));
  impl_->Wake();
  return seqs;
}

Status Engine::Cancel(std::string_view queue, int64_t seq) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  MQLITE_RETURN_IF_ERROR(internal::ValidateSeq(queue, seq));
  Status s = impl_->Write([&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
    return txn.CancelScheduled(q, seq);
  });
  if (s.code() == StatusCode::kNotFound) {
    return Status::NotFound(QueueLabel(queue) + ": seq " + std::to_string(seq) +
                            " is not a scheduled, never-delivered message");
  }
  if (s.ok()) impl_->Wake();  // a cancelled group head unblocks its group
  return s;
}

// ---- Receive ----------------------------------------------------------------

Result<std::vector<Message>> Engine::Receive(std::string_view queue,
                                             const ReceiveOptions& options) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateReceive(queue, options));
  std::vector<LockToken> tokens;
  if (options.mode == ReceiveMode::kPeekLock) {
    MQLITE_RETURN_IF_ERROR(internal::NewTokens(static_cast<size_t>(options.max_messages), &tokens));
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.wait_ms);
  // Between attempts a waiter also re-checks at this interval, so messages
  // that become eligible by time alone (a due schedule, an expired lease) are
  // seen without a send.
  const auto recheck = std::chrono::milliseconds(250);
  const int64_t step = impl_->options.maintenance_batch;
  for (;;) {
    uint64_t gen = impl_->WakeGen();
    std::vector<Message> got;
    MQLITE_RETURN_IF_ERROR(impl_->Write([&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
      int64_t now = impl_->Now();
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
      return Status::OK();
    }));
    if (!got.empty() || options.wait_ms == 0) return got;
    std::unique_lock<std::mutex> l(impl_->mu);
    if (std::chrono::steady_clock::now() >= deadline) return got;
    ++impl_->waiters;
    impl_->cv.wait_until(l, std::min(deadline, std::chrono::steady_clock::now() + recheck), [&] {
      return impl_->closed || impl_->wake_gen != gen;
    });
    --impl_->waiters;
    if (impl_->closed) return Status::Closed(QueueLabel(queue) + ": engine closed during Receive");
  }
}

Result<std::vector<Message>> Engine::ReceiveDeferred(std::string_view queue,
                                                     std::span<const int64_t> seqs) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  if (seqs.empty() || seqs.size() > static_cast<size_t>(internal::kMaxReceive)) {
    return Status::InvalidArgument(QueueLabel(queue) + ": ReceiveDeferred takes 1-256 seqs, got " +
                                   std::to_string(seqs.size()));
  }
  std::set<int64_t> seen;
  for (int64_t seq : seqs) {
    MQLITE_RETURN_IF_ERROR(internal::ValidateSeq(queue, seq));
    if (!seen.insert(seq).second) {
      return Status::InvalidArgument(QueueLabel(queue) + ": seq " + std::to_string(seq) +
                                     " is listed twice");
    }
  }
  std::vector<LockToken> tokens;
  MQLITE_RETURN_IF_ERROR(internal::NewTokens(seqs.size(), &tokens));
  std::vector<Message> out;
  MQLITE_RETURN_IF_ERROR(impl_->Write([&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
    int64_t now = impl_->Now();
    out.clear();
    for (size_t i = 0; i < seqs.size(); ++i) {
      auto m = txn.ClaimDeferred(q, seqs[i], tokens[i], now, now + q.config.lock_duration_ms);
      if (!m) {
        if (m.error().code() == StatusCode::kNotFound) {
          return Status::NotFound(QueueLabel(queue) + ": seq " + std::to_string(seqs[i]) +
                                  " is not a deferred message");
        }
        return m.error();
      }
      out.push_back(std::move(*m));
    }
    return Status::OK();
  }));
  return out;
}

// ---- Settle -----------------------------------------------------------------

Status Engine::Complete(std::string_view queue, int64_t seq, const LockToken& token) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kComplete;
  return impl_->SettleOne(queue, std::move(r)).status();
}

Status Engine::Abandon(std::string_view queue, int64_t seq, const LockToken& token,
                       int64_t delay_ms) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  if (delay_ms < 0 || delay_ms > internal::kMaxDelayMs) {
    return Status::InvalidArgument(QueueLabel(queue) + ": seq " + std::to_string(seq) +
                                   ": abandon delay_ms " + std::to_string(delay_ms) +
                                   " outside 0-365 days");
  }
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kAbandon;
  r.delay_ms = delay_ms;
  return impl_->SettleOne(queue, std::move(r)).status();
}

Status Engine::Reject(std::string_view queue, int64_t seq, const LockToken& token,
                      std::string_view reason, std::string_view description) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  if (reason.empty() || reason.size() > internal::kMaxIdBytes) {
    return Status::InvalidArgument(QueueLabel(queue) + ": seq " + std::to_string(seq) +
                                   ": reject reason must be 1-128 bytes");
  }
  if (description.size() > internal::kMaxTextBytes) {
    return Status::InvalidArgument(QueueLabel(queue) + ": seq " + std::to_string(seq) +
                                   ": reject description over 1024 bytes");
  }
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kReject;
  r.reason = std::string(reason);
  r.description = std::string(description);
  return impl_->SettleOne(queue, std::move(r)).status();
}

Status Engine::Defer(std::string_view queue, int64_t seq, const LockToken& token) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kDefer;
  return impl_->SettleOne(queue, std::move(r)).status();
}

Result<int64_t> Engine::Renew(std::string_view queue, int64_t seq, const LockToken& token) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  SettleRequest r;
  r.seq = seq;
  r.token = token;
  r.op = SettleOp::kRenew;
  MQLITE_ASSIGN_OR_RETURN(SettleResult res, impl_->SettleOne(queue, std::move(r)));
  return res.locked_until;
}

Result<std::vector<Status>> Engine::CompleteBatch(std::string_view queue,
                                                  std::span<const SettleItem> items) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  std::vector<Status> statuses;
  MQLITE_RETURN_IF_ERROR(Impl::SettleBatch(impl_.get(), queue, items, SettleOp::kComplete, &statuses,
                                     [](size_t, const Result<SettleResult>&) {}));
  impl_->Wake();
  return statuses;
}

Result<std::vector<RenewOutcome>> Engine::RenewBatch(std::string_view queue,
                                                     std::span<const SettleItem> items) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  std::vector<Status> statuses;
  std::vector<int64_t> until(items.size(), 0);
  MQLITE_RETURN_IF_ERROR(Impl::SettleBatch(impl_.get(), queue, items, SettleOp::kRenew, &statuses,
                                     [&](size_t i, const Result<SettleResult>& r) {
                                       until[i] = r ? r->locked_until : 0;
                                     }));
  std::vector<RenewOutcome> out(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    out[i].status = statuses[i];
    out[i].locked_until = statuses[i].ok() ? until[i] : 0;
  }
  return out;
}

// ---- Inspection and DLQ -------------------------------------------------------

Result<std::vector<Message>> Engine::Peek(std::string_view queue, const PeekOptions& options) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidatePeek(queue, options));
  std::vector<Message> out;
  MQLITE_RETURN_IF_ERROR(impl_->Read([&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
    MQLITE_ASSIGN_OR_RETURN(out, txn.Peek(q, options));
    return Status::OK();
  }));
  return out;
}

Result<QueueStats> Engine::Stats(std::string_view queue) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  QueueStats out;
  MQLITE_RETURN_IF_ERROR(impl_->Read([&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
    MQLITE_ASSIGN_OR_RETURN(out, txn.Stats(q, impl_->Now()));
    return Status::OK();
  }));
  return out;
}

Result<int64_t> Engine::Redrive(std::string_view queue, const RedriveOptions& options) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  std::string_view target = options.target_queue.empty() ? queue : options.target_queue;
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(target));
  if (options.max_messages < 0 || options.older_than_ms < 0) {
    return Status::InvalidArgument(QueueLabel(queue) +
                                   ": redrive max_messages and older_than_ms must not be negative");
  }
  int64_t moved = 0;
  MQLITE_RETURN_IF_ERROR(impl_->Write([&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
    auto t = Impl::LookupQueue(txn, target);
    if (!t) return t.error().WithContext("redrive target");
    MQLITE_ASSIGN_OR_RETURN(moved, txn.Redrive(q, *t, options, impl_->Now()));
    return Status::OK();
  }));
  if (moved > 0) impl_->Wake();
  return moved;
}

Result<int64_t> Engine::Purge(std::string_view queue, const PurgeOptions& options) {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  if (options.max_messages < 0 || options.older_than_ms < 0) {
    return Status::InvalidArgument(QueueLabel(queue) +
                                   ": purge max_messages and older_than_ms must not be negative");
  }
  int64_t purged = 0;
  MQLITE_RETURN_IF_ERROR(impl_->Write([&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
    MQLITE_ASSIGN_OR_RETURN(purged, txn.PurgeDeadLetters(q, options, impl_->Now()));
    return Status::OK();
  }));
  return purged;
}

// ---- Maintenance --------------------------------------------------------------

Result<MaintenanceReport> Engine::RunMaintenance() {
  Impl::Call call(impl_.get());
  MQLITE_RETURN_IF_ERROR(call.status());
  return impl_->MaintainAll(impl_->options.maintenance_batch);
}

}  // namespace mqlite
