#include "mqlite/store_util.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <tuple>
#include <utility>

#include "mqlite/engine.h"

namespace mqlite {
namespace {

std::string SeqText(int64_t seq) { return "seq " + std::to_string(seq); }

Verdict DeadLetter(std::string_view reason, std::optional<std::string> description = {}) {
  Verdict v;
  v.action = Verdict::Action::kDeadLetter;
  v.reason = reason;
  v.description = std::move(description);
  return v;
}

Verdict Unlock(MessageState to, int64_t visible_at = 0) {
  Verdict v;
  v.action = Verdict::Action::kUnlock;
  v.to = to;
  v.visible_at = visible_at;
  return v;
}

Verdict Simple(Verdict::Action action) {
  Verdict v;
  v.action = action;
  return v;
}

}  // namespace

Verdict DecideExpire(const QueueConfig& config) {
  return config.dead_letter_on_expire ? DeadLetter(kReasonTtlExpired)
                                      : Simple(Verdict::Action::kDelete);
}

Verdict DecideClaim(const RowFacts& candidate, const QueueConfig& config, int64_t now) {
  if (Expired(candidate, now)) return DecideExpire(config);
  if (DeliveriesExhausted(candidate, config)) return DeadLetter(kReasonMaxDelivery);
  return Simple(Verdict::Action::kDeliver);
}

Verdict DecideReclaim(const RowFacts& locked, const QueueConfig& config) {
  if (DeliveriesExhausted(locked, config)) return DeadLetter(kReasonMaxDelivery);
  return Unlock(MessageState::kActive);
}

Result<Verdict> DecideSettle(const RowFacts* row, const QueueConfig& config,
                             const SettleRequest& req) {
  if (!row || row->state != MessageState::kLocked || !(row->token == req.token) ||
      row->locked_until <= req.now) {
    return Status::LockLost(SeqText(req.seq) + " is not locked under this token");
  }
  switch (req.op) {
    case SettleOp::kComplete:
      return Simple(Verdict::Action::kDelete);
    case SettleOp::kAbandon:
      if (DeliveriesExhausted(*row, config)) return DeadLetter(kReasonMaxDelivery);
      if (req.delay_ms > 0) return Unlock(MessageState::kScheduled, req.now + req.delay_ms);
      return Unlock(MessageState::kActive);
    case SettleOp::kReject:
      return DeadLetter(req.reason, req.description);
    case SettleOp::kDefer:
      return Unlock(MessageState::kDeferred);
    case SettleOp::kRenew: {
      Verdict v = Simple(Verdict::Action::kRenew);
      v.locked_until = std::max(row->locked_until, req.renew_until);
      return v;
    }
  }
  return Status::InvalidArgument("unknown settle operation");
}

SettleResult SettleResultOf(const Verdict& verdict) {
  SettleResult r;
  switch (verdict.action) {
    case Verdict::Action::kDelete:
      r.deleted = true;
      break;
    case Verdict::Action::kDeadLetter:
      r.new_state = MessageState::kDeadLettered;
      break;
    case Verdict::Action::kUnlock:
      r.new_state = verdict.to;
      break;
    case Verdict::Action::kRenew:
      r.new_state = MessageState::kLocked;
      r.locked_until = verdict.locked_until;
      break;
    case Verdict::Action::kDeliver:
      r.new_state = MessageState::kLocked;
      break;
  }
  return r;
}

Result<SettleResult> Settled(StoreTxn& txn, const SettleRequest& req, const Verdict& verdict) {
  if (!req.receipt_key.empty()) {
    MQLITE_RETURN_IF_ERROR(txn.PutReceipt(req.receipt_key, req.receipt_expires_at));
  }
  return SettleResultOf(verdict);
}

Status SettleTheRest(StoreTxn& txn, const QueueRecord& queue, std::span<const SettleRequest> reqs,
                     const std::vector<bool>& done, std::vector<Result<SettleResult>>* out) {
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (done[i]) continue;
    auto res = txn.Settle(queue, reqs[i]);
    if (!res && res.error().code() != StatusCode::kLockLost) return res.error();
    (*out)[i] = std::move(res);
  }
  return Status::OK();
}

void ApplyToRow(const Verdict& verdict, RowState* row) {
  switch (verdict.action) {
    case Verdict::Action::kUnlock:
      row->state = verdict.to;
      row->token = LockToken{};
      row->locked_until = 0;
      if (verdict.to == MessageState::kScheduled) row->visible_at = verdict.visible_at;
      return;
    case Verdict::Action::kRenew:
      row->locked_until = verdict.locked_until;
      return;
    case Verdict::Action::kDeliver:
    case Verdict::Action::kDeadLetter:
    case Verdict::Action::kDelete:
      return;
  }
}

void DeadLetterRow(std::string_view reason, const std::optional<std::string>& description,
                   int64_t now, RowState* row) {
  row->state = MessageState::kDeadLettered;
  row->token = LockToken{};
  row->locked_until = 0;
  row->dead_lettered_at = now;
  row->dead_letter_reason = std::string(reason);
  row->dead_letter_description = description;
  row->is_head = false;
}

Message ToMessage(int64_t seq, std::string_view queue_name, const RowState& r,
                  const RowPayload& p) {
  return ToMessage(seq, queue_name, r, RowPayload(p));
}

Message ToMessage(int64_t seq, std::string_view queue_name, const RowState& r, RowPayload&& p) {
  Message m;
  m.seq = seq;
  m.queue = std::string(queue_name);
  m.body = std::move(p.body);
  m.message_id = std::move(p.message_id);
  m.group_id = std::move(p.group_id);
  m.subject = std::move(p.subject);
  m.correlation_id = std::move(p.correlation_id);
  m.content_type = std::move(p.content_type);
  m.properties = std::move(p.properties);
  m.priority = r.priority;
  m.enqueued_at = r.enqueued_at;
  m.visible_at = r.visible_at;
  m.expires_at = r.expires_at;
  m.delivery_count = r.delivery_count;
  m.state = r.state;
  m.locked_until = r.locked_until;
  m.lock_token = r.token;
  m.dead_letter_reason = r.dead_letter_reason;
  m.dead_letter_description = r.dead_letter_description;
  m.dead_lettered_at = r.dead_lettered_at;
  return m;
}

Status CheckCancelScheduled(const RowFacts* row, int64_t seq) {
  if (row && row->state == MessageState::kScheduled && row->delivery_count == 0) {
    return Status::OK();
  }
  return Status::NotFound(SeqText(seq) + " is not a scheduled, never-delivered message");
}

Status CheckClaimDeferred(const RowFacts* row, const QueueConfig& config, int64_t seq,
                          int64_t now) {
  if (!row || row->state != MessageState::kDeferred) {
    return Status::NotFound(SeqText(seq) + " is not a deferred message");
  }
  if (Expired(*row, now)) return Status::NotFound(SeqText(seq) + " has expired (TTL)");
  if (DeliveriesExhausted(*row, config)) {
    return Status::NotFound(SeqText(seq) + " has used all " +
                            std::to_string(config.max_delivery_count) + " deliveries");
  }
  return Status::OK();
}

Status CheckDeadLetterMessage(const RowFacts* row, int64_t seq) {
  if (row && row->state != MessageState::kDeadLettered) return Status::OK();
  return Status::NotFound(SeqText(seq) + " is not a live message");
}

Status CheckDeleteMessage(const RowFacts* row, int64_t seq) {
  if (row) return Status::OK();
  return Status::NotFound(SeqText(seq) + " is not a message");
}

Status CheckOrderingChange(const QueueConfig& stored, const QueueConfig& requested,
                           bool queue_holds_messages) {
  if (stored.ordering == requested.ordering || !queue_holds_messages) return Status::OK();
  return Status::InvalidArgument("queue '" + requested.name + "': ordering cannot change from " +
                                 std::string(OrderingName(stored.ordering)) + " to " +
                                 std::string(OrderingName(requested.ordering)) +
                                 " while the queue holds messages");
}

Status ReadOnlyWriteRefused(std::string_view store) {
  return Status::InvalidArgument(std::string(store) +
                                 " was opened read-only (for inspection): writes need an ordinary "
                                 "open, which takes its exclusive lock");
}

Status CheckAgreedDefaults(const EngineDefaults& mine, const EngineDefaults& live) {
  auto text = [](int64_t v) { return v > 0 ? std::to_string(v) : std::string("unbounded"); };
  const RetentionBounds& a = mine.dlq_retention;
  const RetentionBounds& b = live.dlq_retention;
  std::string diff;
  for (auto [field, m, l] : {std::tuple{"dlq_max_age_ms", a.max_age_ms, b.max_age_ms},
                             std::tuple{"dlq_max_count", a.max_count, b.max_count},
                             std::tuple{"dlq_max_bytes", a.max_bytes, b.max_bytes}}) {
    if (m == l) continue;
    diff += std::string(diff.empty() ? "" : "; ") + "EngineOptions::" + field + " is " + text(m) +
            " here but " + text(l) + " in an engine already using the store";
  }
  if (diff.empty()) return Status::OK();
  return Status::InvalidArgument(
      "engines sharing a store must use the same DLQ retention defaults (spec.md §9): " + diff +
      ". Open this engine with the same values, or close every engine using the store first "
      "to change them");
}

Status CheckClaimRequest(const ClaimRequest& req) {
  if (req.mode == ReceiveMode::kPeekLock &&
      req.tokens.size() < static_cast<size_t>(std::max(req.max_messages, 0))) {
    return Status::Internal("Claim: fewer tokens than max_messages");
  }
  return Status::OK();
}

bool RetentionPass::Evict(int64_t dead_lettered_at, int64_t body_size) {
  const bool over = (bounds_.max_age_ms > 0 && dead_lettered_at <= now_ - bounds_.max_age_ms) ||
                    (bounds_.max_count > 0 && count_ > bounds_.max_count) ||
                    (bounds_.max_bytes > 0 && bytes_ > bounds_.max_bytes);
  if (over) {
    count_ -= 1;
    bytes_ -= body_size;
  }
  return over;
}

std::optional<RedrivePlan> PlanRedrive(const std::optional<std::string>& group_id,
                                       const QueueConfig& target, int64_t now) {
  if (target.ordering == Ordering::kGroupFifo && !group_id) return std::nullopt;
  RedrivePlan p;
  p.group_key = GroupKeyFor(target.ordering, group_id);
  p.visible_at = now;
  p.expires_at = target.default_ttl_ms > 0 ? now + target.default_ttl_ms : 0;
  return p;
}

Status RunGate::Acquire(Mode mode, const RunOptions& options, std::string_view what) {
  const bool exclusive = mode == Mode::kExclusive;
  std::unique_lock<std::mutex> l(mu_);
  if (exclusive) ++writers_waiting_;
  auto free = [&] {
    return exclusive ? !writer_ && readers_ == 0 : !writer_ && writers_waiting_ == 0;
  };
  const bool got = options.deadline == std::chrono::steady_clock::time_point::max()
                       ? cv_.wait(l, options.stop, free)
                       : cv_.wait_until(l, options.stop, options.deadline, free);
  if (exclusive) --writers_waiting_;
  if (!got) {
    if (exclusive) cv_.notify_all();  // shared holders held off by this one may go
    return Status::Cancelled(
        std::string(options.stop.stop_requested() ? "cancelled" : "deadline passed") +
        " while waiting for " + std::string(what));
  }
  if (exclusive) {
    writer_ = true;
  } else {
    ++readers_;
  }
  return Status::OK();
}

void RunGate::Release(Mode mode) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (mode == Mode::kExclusive) {
      writer_ = false;
    } else {
      --readers_;
    }
  }
  cv_.notify_all();
}

Result<void*> NativeHandleOf(TxContext& tx, std::string_view type, std::string_view caller) {
  if (tx.native_handle_type() != type) {
    return Status::InvalidArgument(std::string(caller) + ": this Tx runs on a store whose handle is '" +
                                   tx.native_handle_type() + "', not '" + std::string(type) + "'");
  }
  void* handle = tx.native_handle();
  if (!handle) {
    return Status::InvalidArgument(std::string(caller) + ": the Tx callback has returned");
  }
  return handle;
}

void AsReceivedAndDeleted(Message* m) {
  m->delivery_count += 1;
  m->state = MessageState::kActive;
  m->lock_token = LockToken{};
  m->locked_until = 0;
}

std::string EncodePropertyBlob(const std::map<std::string, std::string>& props) {
  std::string out;
  auto put = [&](const std::string& s) {
    uint32_t n = static_cast<uint32_t>(s.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    out += s;
  };
  for (const auto& [k, v] : props) {
    put(k);
    put(v);
  }
  return out;
}

Status DecodePropertyBlob(std::string_view in, std::map<std::string, std::string>* out) {
  out->clear();
  size_t pos = 0;
  auto get = [&](std::string* s) -> bool {
    if (in.size() - pos < 4) return false;
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(static_cast<uint8_t>(in[pos + i])) << (8 * i);
    pos += 4;
    if (in.size() - pos < n) return false;
    s->assign(in.substr(pos, n));
    pos += n;
    return true;
  };
  while (pos < in.size()) {
    std::string k, v;
    if (!get(&k) || !get(&v)) return Status::Corruption("malformed properties blob");
    (*out)[std::move(k)] = std::move(v);
  }
  return Status::OK();
}


}  // namespace mqlite
