#include "mqlite/change_feed.h"

#include <algorithm>
#include <utility>

namespace mqlite {

class ChangeHub::Sub final : public ChangeSubscription {
 public:
  Sub(std::shared_ptr<ChangeHub> hub, uint64_t id) : hub_(std::move(hub)), id_(id) {}
  ~Sub() override {
    std::lock_guard<std::mutex> l(hub_->mu_);  // waits for a Publish in progress
    hub_->subs_.erase(id_);
  }

 private:
  std::shared_ptr<ChangeHub> hub_;
  uint64_t id_;
};

std::unique_ptr<ChangeSubscription> ChangeHub::Subscribe(ChangeCallback on_change) {
  std::lock_guard<std::mutex> l(mu_);
  const uint64_t id = next_++;
  subs_.emplace(id, std::move(on_change));
  return std::make_unique<Sub>(shared_from_this(), id);
}

void ChangeHub::Publish(std::span<const int64_t> queue_ids) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [id, fn] : subs_) {
    for (int64_t q : queue_ids) fn(q);
  }
}

bool ChangeHub::empty() const {
  std::lock_guard<std::mutex> l(mu_);
  return subs_.empty();
}

void ChangeTrackingTxn::Touch(int64_t id) {
  if (std::find(touched_.begin(), touched_.end(), id) == touched_.end()) touched_.push_back(id);
}

Result<QueueRecord> ChangeTrackingTxn::UpsertQueue(const QueueConfig& c, int64_t now,
                                                   bool* created) {
  auto r = StoreTxnWrapper::UpsertQueue(c, now, created);
  if (r) Touch(r->id);
  return r;
}
Status ChangeTrackingTxn::DeleteQueue(const QueueRecord& q) {
  Touch(q.id);
  return StoreTxnWrapper::DeleteQueue(q);
}
Result<std::vector<int64_t>> ChangeTrackingTxn::Enqueue(const QueueRecord& q,
                                                        std::span<const EnqueueItem> items) {
  Touch(q.id);
  return StoreTxnWrapper::Enqueue(q, items);
}
Status ChangeTrackingTxn::CancelScheduled(const QueueRecord& q, int64_t seq) {
  Touch(q.id);
  return StoreTxnWrapper::CancelScheduled(q, seq);
}
Result<std::vector<Message>> ChangeTrackingTxn::Claim(const QueueRecord& q,
                                                      const ClaimRequest& r) {
  // A claim that takes something (ReceiveAndDelete deletes, a lease hides)
  // may promote the next member of a group. One that takes nothing changed
  // nothing another waiter could claim: publishing it would only wake the
  // claimer's own long-poll, over and over.
  auto claimed = StoreTxnWrapper::Claim(q, r);
  if (claimed && !claimed->empty()) Touch(q.id);
  return claimed;
}
Result<Message> ChangeTrackingTxn::ClaimDeferred(const QueueRecord& q, int64_t seq,
                                                 const LockToken& t, int64_t now,
                                                 int64_t until) {
  Touch(q.id);
  return StoreTxnWrapper::ClaimDeferred(q, seq, t, now, until);
}
Result<SettleResult> ChangeTrackingTxn::Settle(const QueueRecord& q, const SettleRequest& r) {
  if (r.op != SettleOp::kRenew) Touch(q.id);  // a renewal frees nothing
  return StoreTxnWrapper::Settle(q, r);
}
Result<int64_t> ChangeTrackingTxn::Redrive(const QueueRecord& q, const QueueRecord& t,
                                           const RedriveOptions& o, int64_t now) {
  Touch(q.id);
  Touch(t.id);
  return StoreTxnWrapper::Redrive(q, t, o, now);
}
Result<int64_t> ChangeTrackingTxn::PurgeDeadLetters(const QueueRecord& q, const PurgeOptions& o,
                                                    int64_t now) {
  Touch(q.id);
  return StoreTxnWrapper::PurgeDeadLetters(q, o, now);
}
Status ChangeTrackingTxn::DeadLetterMessage(const QueueRecord& q, int64_t seq,
                                            std::string_view reason,
                                            const std::optional<std::string>& description,
                                            int64_t now) {
  Touch(q.id);
  return StoreTxnWrapper::DeadLetterMessage(q, seq, reason, description, now);
}
Status ChangeTrackingTxn::DeleteMessage(const QueueRecord& q, int64_t seq) {
  Touch(q.id);
  return StoreTxnWrapper::DeleteMessage(q, seq);
}
Result<int64_t> ChangeTrackingTxn::PromoteDue(const QueueRecord& q, int64_t now, int64_t limit) {
  auto r = StoreTxnWrapper::PromoteDue(q, now, limit);
  if (r && *r > 0) Touch(q.id);
  return r;
}
Result<int64_t> ChangeTrackingTxn::ReclaimLocks(const QueueRecord& q, int64_t now, bool all,
                                                int64_t limit) {
  auto r = StoreTxnWrapper::ReclaimLocks(q, now, all, limit);
  if (r && *r > 0) Touch(q.id);
  return r;
}
Result<int64_t> ChangeTrackingTxn::ExpireMessages(const QueueRecord& q, int64_t now,
                                                  int64_t limit) {
  auto r = StoreTxnWrapper::ExpireMessages(q, now, limit);
  if (r && *r > 0) Touch(q.id);
  return r;
}

}  // namespace mqlite
