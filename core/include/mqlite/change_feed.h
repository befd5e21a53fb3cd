// Building blocks for a store's change feed (Store::Subscribe, spec.md §9),
// for stores whose every writer lives in this process (memory, LMDB): a hub
// of subscribers, and a StoreTxn wrapper that records which queues a write
// transaction touched so the store can publish them after the commit.
// (A server store publishes from its own notification channel instead, e.g.
// PostgreSQL LISTEN/NOTIFY, and may still use ChangeHub to fan out.)
#ifndef MQLITE_CHANGE_FEED_H_
#define MQLITE_CHANGE_FEED_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "mqlite/store.h"

namespace mqlite {

// Subscribers of one data set. Thread-safe. Publish calls every callback
// under the hub's lock, so destroying a subscription waits for a callback in
// progress (the ChangeSubscription contract); callbacks must not call back
// into the hub or the store.
class ChangeHub : public std::enable_shared_from_this<ChangeHub> {
 public:
  static std::shared_ptr<ChangeHub> Create() { return std::shared_ptr<ChangeHub>(new ChangeHub); }

  std::unique_ptr<ChangeSubscription> Subscribe(ChangeCallback on_change);
  // Calls every subscriber once per id.
  void Publish(std::span<const int64_t> queue_ids);
  bool empty() const;

 private:
  ChangeHub() = default;
  class Sub;
  mutable std::mutex mu_;
  uint64_t next_ = 0;
  std::map<uint64_t, ChangeCallback> subs_;
};

// Forwards to `target` and remembers the id of every queue a write operation
// named (including in savepoints; a rolled-back savepoint's ids stay, which
// only makes a wake-up spurious). Read operations are not recorded.
class ChangeTrackingTxn final : public StoreTxnWrapper {
 public:
  explicit ChangeTrackingTxn(StoreTxn* target) : StoreTxnWrapper(target) {}
  // Distinct ids in first-touched order.
  const std::vector<int64_t>& touched() const { return touched_; }

  Result<QueueRecord> UpsertQueue(const QueueConfig& c, int64_t now, bool* created) override;
  Status DeleteQueue(const QueueRecord& q) override;
  Result<std::vector<int64_t>> Enqueue(const QueueRecord& q,
                                       std::span<const EnqueueItem> items) override;
  Status CancelScheduled(const QueueRecord& q, int64_t seq) override;
  Result<std::vector<Message>> Claim(const QueueRecord& q, const ClaimRequest& r) override;
  Result<Message> ClaimDeferred(const QueueRecord& q, int64_t seq, const LockToken& t,
                                int64_t now, int64_t until) override;
  Result<SettleResult> Settle(const QueueRecord& q, const SettleRequest& r) override;
  Result<int64_t> Redrive(const QueueRecord& q, const QueueRecord& t, const RedriveOptions& o,
                          int64_t now) override;
  Result<int64_t> PurgeDeadLetters(const QueueRecord& q, const PurgeOptions& o,
                                   int64_t now) override;
  Status DeadLetterMessage(const QueueRecord& q, int64_t seq, std::string_view reason,
                           const std::optional<std::string>& description, int64_t now) override;
  Status DeleteMessage(const QueueRecord& q, int64_t seq) override;
  Result<int64_t> PromoteDue(const QueueRecord& q, int64_t now, int64_t limit) override;
  Result<int64_t> ReclaimLocks(const QueueRecord& q, int64_t now, bool all,
                               int64_t limit) override;
  Result<int64_t> ExpireMessages(const QueueRecord& q, int64_t now, int64_t limit) override;

 private:
  void Touch(int64_t id);
  std::vector<int64_t> touched_;
};

}  // namespace mqlite

#endif  // MQLITE_CHANGE_FEED_H_
