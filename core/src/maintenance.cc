#include "maintenance.h"

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "call.h"
#include "validate.h"

namespace mqlite::internal {

Maintainer::Maintainer(Store* store, GroupCommit* writer, const EngineOptions* options,
                       bool lock_queues, std::function<int64_t()> now, std::function<void()> wake)
    : store_(store),
      writer_(writer),
      options_(options),
      lock_queues_(lock_queues),
      now_(std::move(now)),
      wake_(std::move(wake)) {}

Maintainer::~Maintainer() { Stop(); }

Result<MaintenanceReport> Maintainer::RunPass(int64_t limit, const CallOptions& call) {
  std::vector<QueueRecord> queues;
  MQLITE_RETURN_IF_ERROR(
      store_->Run(TxnKind::kRead, ToRunOptions(call), [&](StoreTxn& txn) -> Status {
        MQLITE_ASSIGN_OR_RETURN(queues, txn.ListQueues());
        return Status::OK();
      }));
  MaintenanceReport report;
  auto note = [&](int64_t n) {
    if (n >= limit) report.more = true;
    return n;
  };
  for (const QueueRecord& listed : queues) {
    // spec.md §9: engines sharing a store take turns per queue. A queue
    // another engine is maintaining is skipped: that engine does the work.
    // The lock is held until this queue's transaction has committed.
    std::unique_ptr<MaintenanceLock> held;
    if (lock_queues_) {
      auto lock = store_->TryLockMaintenance(listed.id);
      if (!lock && lock.error().code() != StatusCode::kUnimplemented) {
        return lock.error().WithContext(QueueLabel(listed.config.name) + ": maintenance lock");
      }
      if (lock && !*lock) {
        ++report.queues_skipped;
        continue;
      }
      if (lock) held = std::move(*lock);
    }
    // Counted outside the body: a body the store re-runs must not count twice.
    int64_t promoted = 0, reclaimed = 0, expired = 0, dropped = 0;
    Status s = writer_->Write(call, [&](StoreTxn& txn) -> Status {
      auto q = txn.GetQueue(listed.config.name);
      if (!q) {
        // Deleted since we listed it: nothing to maintain.
        return q.error().code() == StatusCode::kQueueNotFound ? Status::OK() : q.error();
      }
      // Deleted and created again since: not the queue listed (and locked);
      // the next pass maintains the new one.
      if (q->id != listed.id) return Status::OK();
      const int64_t now = now_();
      MQLITE_ASSIGN_OR_RETURN(promoted, txn.PromoteDue(*q, now, limit));
      MQLITE_ASSIGN_OR_RETURN(reclaimed, txn.ReclaimLocks(*q, now, false, limit));
      MQLITE_ASSIGN_OR_RETURN(expired, txn.ExpireMessages(*q, now, limit));
      MQLITE_ASSIGN_OR_RETURN(
          dropped, txn.EnforceRetention(*q, ResolveRetention(q->config, *options_), now, limit));
      return Status::OK();
    });
    if (!s.ok()) return s.WithContext(QueueLabel(listed.config.name) + ": maintenance");
    report.promoted += note(promoted);
    report.reclaimed += note(reclaimed);
    report.expired += note(expired);
    report.retention_dropped += note(dropped);
  }
  int64_t records = 0;
  MQLITE_RETURN_IF_ERROR(writer_->Write(call, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(records, txn.DropExpiredRecords(now_(), limit));
    return Status::OK();
  }));
  // Outside any transaction (spec.md §1 "Space reclaim"): VACUUM-like work
  // cannot run inside one.
  MQLITE_ASSIGN_OR_RETURN(int64_t freed, store_->ReclaimSpace(ToRunOptions(call), limit));
  report.records_dropped = note(records);
  report.space_reclaimed = note(freed);
  if (report.promoted > 0 || report.reclaimed > 0 || report.expired > 0) wake_();
  return report;
}

void Maintainer::Start() {
  std::lock_guard<std::mutex> l(mu_);
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { Loop(); });
}

void Maintainer::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Maintainer::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    cv_.wait_for(l, std::chrono::milliseconds(options_->maintenance_interval_ms),
                 [&] { return stop_; });
    if (stop_) break;
    l.unlock();
    // A failed pass changed nothing it did not commit (one commit per queue);
    // the next pass retries.
    (void)RunPass(options_->maintenance_batch, CallOptions{});
    l.lock();
  }
}

}  // namespace mqlite::internal
