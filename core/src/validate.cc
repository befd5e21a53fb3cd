#include "validate.h"

#include <cstdint>
#include <limits>
#include <set>
#include <string>

namespace mqlite::internal {
namespace {

std::string Str(std::string_view s) { return std::string(s); }

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '/' || c == '-';
}

// `where()` names the message; it is built only for an error (a send
// validates every message of every batch).
template <class Where>
Status CheckOptionalLen(const Where& where, std::string_view field,
                        const std::optional<std::string>& v, size_t max) {
  if (v && v->size() > max) {
    return Status::InvalidArgument(where() + ": " + Str(field) + " is " +
                                   std::to_string(v->size()) + " bytes (max " +
                                   std::to_string(max) + ")");
  }
  return Status::OK();
}

int64_t Resolve(int64_t queue_value, int64_t engine_value) {
  if (queue_value < 0) return -1;
  if (queue_value > 0) return queue_value;
  return engine_value > 0 ? engine_value : -1;
}

}  // namespace

std::string QueueLabel(std::string_view name) { return "queue '" + Str(name) + "'"; }

Status ValidateQueueName(std::string_view name) {
  if (name.empty() || name.size() > 128) {
    return Status::InvalidArgument("queue name must be 1-128 bytes, got " +
                                   std::to_string(name.size()));
  }
  for (char c : name) {
    if (!NameChar(c)) {
      return Status::InvalidArgument("queue name '" + Str(name) +
                                     "' has a character outside [A-Za-z0-9._:/-]");
    }
  }
  return Status::OK();
}

Status ValidateQueueConfig(const QueueConfig& c) {
  MQLITE_RETURN_IF_ERROR(ValidateQueueName(c.name));
  std::string q = QueueLabel(c.name);
  if (c.lock_duration_ms < kMinLockMs || c.lock_duration_ms > kMaxLockMs) {
    return Status::InvalidArgument(q + ": lock_duration_ms " + std::to_string(c.lock_duration_ms) +
                                   " outside 1000-43200000 (1 s - 12 h)");
  }
  if (c.max_delivery_count < 1 || c.max_delivery_count > kMaxDeliveryLimit) {
    return Status::InvalidArgument(q + ": max_delivery_count " +
                                   std::to_string(c.max_delivery_count) + " outside 1-1000");
  }
  if (c.default_ttl_ms < 0 || c.default_ttl_ms > kMaxTtlMs) {
    return Status::InvalidArgument(q + ": default_ttl_ms " + std::to_string(c.default_ttl_ms) +
                                   " must be 0 (none) or a positive duration");
  }
  if (c.dedup_window_ms < 0 || c.dedup_window_ms > kMaxDelayMs) {
    return Status::InvalidArgument(q + ": dedup_window_ms " + std::to_string(c.dedup_window_ms) +
                                   " outside 0-365 days");
  }
  if (c.ordering != Ordering::kStandard && c.ordering != Ordering::kGroupFifo &&
      c.ordering != Ordering::kStrictFifo) {
    return Status::InvalidArgument(q + ": unknown ordering value " +
                                   std::to_string(static_cast<int>(c.ordering)));
  }
  if (c.max_message_bytes < 0 || c.max_message_bytes > kMaxMessageBytesLimit) {
    return Status::InvalidArgument(q + ": max_message_bytes " +
                                   std::to_string(c.max_message_bytes) +
                                   " outside 0 (engine default) - 256 MiB");
  }
  return Status::OK();
}

Status ValidateReceive(std::string_view queue, const ReceiveOptions& o) {
  MQLITE_RETURN_IF_ERROR(ValidateQueueName(queue));
  if (o.max_messages < 1 || o.max_messages > kMaxReceive) {
    return Status::InvalidArgument(QueueLabel(queue) + ": max_messages " +
                                   std::to_string(o.max_messages) + " outside 1-256");
  }
  if (o.mode != ReceiveMode::kPeekLock && o.mode != ReceiveMode::kReceiveAndDelete) {
    return Status::InvalidArgument(QueueLabel(queue) + ": unknown receive mode");
  }
  if (o.wait_ms < 0 || o.wait_ms > kMaxWaitMs) {
    return Status::InvalidArgument(QueueLabel(queue) + ": wait_ms " + std::to_string(o.wait_ms) +
                                   " outside 0-" + std::to_string(kMaxWaitMs));
  }
  if (o.attempt_id && (o.attempt_id->empty() || o.attempt_id->size() > kMaxIdBytes)) {
    return Status::InvalidArgument(QueueLabel(queue) + ": attempt_id must be 1-" +
                                   std::to_string(kMaxIdBytes) + " bytes, got " +
                                   std::to_string(o.attempt_id->size()));
  }
  return Status::OK();
}

Status ValidateSendBatch(std::string_view queue, size_t count, const EngineOptions& options) {
  MQLITE_RETURN_IF_ERROR(ValidateQueueName(queue));
  if (count == 0 || count > static_cast<size_t>(options.max_send_batch)) {
    return Status::InvalidArgument(QueueLabel(queue) + ": a send batch holds 1-" +
                                   std::to_string(options.max_send_batch) + " messages, got " +
                                   std::to_string(count));
  }
  return Status::OK();
}

Status ValidateSettleBatch(std::string_view queue, size_t count) {
  MQLITE_RETURN_IF_ERROR(ValidateQueueName(queue));
  if (count == 0 || count > kMaxSettleBatch) {
    return Status::InvalidArgument(QueueLabel(queue) + ": a settle batch holds 1-" +
                                   std::to_string(kMaxSettleBatch) + " items, got " +
                                   std::to_string(count));
  }
  return Status::OK();
}

Status ValidateDeferredSeqs(std::string_view queue, std::span<const int64_t> seqs) {
  MQLITE_RETURN_IF_ERROR(ValidateQueueName(queue));
  if (seqs.empty() || seqs.size() > static_cast<size_t>(kMaxReceive)) {
    return Status::InvalidArgument(QueueLabel(queue) + ": ReceiveDeferred takes 1-" +
                                   std::to_string(kMaxReceive) + " seqs, got " +
                                   std::to_string(seqs.size()));
  }
  std::set<int64_t> seen;
  for (int64_t seq : seqs) {
    MQLITE_RETURN_IF_ERROR(ValidateSeq(queue, seq));
    if (!seen.insert(seq).second) {
      return Status::InvalidArgument(QueueLabel(queue) + ": seq " + std::to_string(seq) +
                                     " is listed twice");
    }
  }
  return Status::OK();
}

Status ValidateAbandonDelay(std::string_view queue, int64_t seq, int64_t delay_ms) {
  if (delay_ms < 0 || delay_ms > kMaxDelayMs) {
    return Status::InvalidArgument(QueueLabel(queue) + ": seq " + std::to_string(seq) +
                                   ": abandon delay_ms " + std::to_string(delay_ms) +
                                   " outside 0-" + std::to_string(kMaxDelayMs) + " (365 days)");
  }
  return Status::OK();
}

Status ValidateDlqSelection(std::string_view queue, std::string_view what, int64_t max_messages,
                            int64_t older_than_ms) {
  if (max_messages < 0 || older_than_ms < 0) {
    return Status::InvalidArgument(QueueLabel(queue) + ": " + std::string(what) +
                                   " max_messages and older_than_ms must not be negative");
  }
  return Status::OK();
}

Status ValidateSeq(std::string_view queue, int64_t seq) {
  if (seq <= 0) {
    return Status::InvalidArgument(QueueLabel(queue) + ": seq " + std::to_string(seq) +
                                   " must be positive");
  }
  return Status::OK();
}

Status ValidateToken(std::string_view queue, int64_t seq, const LockToken& token) {
  MQLITE_RETURN_IF_ERROR(ValidateSeq(queue, seq));
  if (token.empty()) {
    return Status::InvalidArgument(QueueLabel(queue) + ": seq " + std::to_string(seq) +
                                   ": lock token is empty");
  }
  return Status::OK();
}

Status ValidatePeek(std::string_view queue, const PeekOptions& o) {
  MQLITE_RETURN_IF_ERROR(ValidateQueueName(queue));
  if (o.max_messages < 1 || o.max_messages > kMaxPeek) {
    return Status::InvalidArgument(QueueLabel(queue) + ": peek max_messages " +
                                   std::to_string(o.max_messages) + " outside 1-1000");
  }
  if (o.from_seq < 0) {
    return Status::InvalidArgument(QueueLabel(queue) + ": peek from_seq must not be negative");
  }
  if (o.state && (static_cast<int>(*o.state) < 0 || static_cast<int>(*o.state) > 4)) {
    return Status::InvalidArgument(QueueLabel(queue) + ": unknown message state");
  }
  return Status::OK();
}

Status BuildEnqueueItem(const QueueRecord& queue, const EngineOptions& engine,
                        const OutgoingMessage& m, size_t slot, int64_t now, EnqueueItem* item) {
  const QueueConfig& c = queue.config;
  auto where = [&] { return QueueLabel(c.name) + ": message " + std::to_string(slot); };
  int64_t max_bytes = c.max_message_bytes > 0 ? c.max_message_bytes : engine.max_message_bytes;
  if (static_cast<int64_t>(m.body.size()) > max_bytes) {
    return Status::MessageTooLarge(where() + ": body is " + std::to_string(m.body.size()) +
                                   " bytes (max_message_bytes " + std::to_string(max_bytes) + ")");
  }
  MQLITE_RETURN_IF_ERROR(CheckOptionalLen(where, "message_id", m.message_id, kMaxIdBytes));
  MQLITE_RETURN_IF_ERROR(CheckOptionalLen(where, "group_id", m.group_id, kMaxIdBytes));
  MQLITE_RETURN_IF_ERROR(CheckOptionalLen(where, "correlation_id", m.correlation_id, kMaxIdBytes));
  MQLITE_RETURN_IF_ERROR(CheckOptionalLen(where, "subject", m.subject, kMaxTextBytes));
  MQLITE_RETURN_IF_ERROR(CheckOptionalLen(where, "content_type", m.content_type, kMaxTextBytes));
  if (m.properties.size() > kMaxProperties) {
    return Status::InvalidArgument(where() + ": " + std::to_string(m.properties.size()) +
                                   " properties (max 64)");
  }
  for (const auto& [k, v] : m.properties) {
    if (k.empty() || k.size() > kMaxPropertyKeyBytes) {
      return Status::InvalidArgument(where() + ": property key must be 1-128 bytes");
    }
    if (v.size() > kMaxPropertyValueBytes) {
      return Status::InvalidArgument(where() + ": property '" + k + "' value is " +
                                     std::to_string(v.size()) + " bytes (max 4096)");
    }
  }
  if (m.priority < 0 || m.priority > 9) {
    return Status::InvalidArgument(where() + ": priority " + std::to_string(m.priority) +
                                   " outside 0-9");
  }
  if (m.delay_ms < 0 || m.delay_ms > kMaxDelayMs) {
    return Status::InvalidArgument(where() + ": delay_ms " + std::to_string(m.delay_ms) +
                                   " outside 0-365 days");
  }
  if (m.schedule_at_ms < 0 || m.schedule_at_ms > now + kMaxDelayMs) {
    return Status::InvalidArgument(where() + ": schedule_at_ms " + std::to_string(m.schedule_at_ms) +
                                   " is negative or more than 365 days ahead");
  }
  if (m.delay_ms > 0 && m.schedule_at_ms > 0) {
    return Status::InvalidArgument(where() + ": set delay_ms or schedule_at_ms, not both");
  }
  if (m.ttl_ms < 0 || m.ttl_ms > kMaxTtlMs) {
    return Status::InvalidArgument(where() + ": ttl_ms " + std::to_string(m.ttl_ms) +
                                   " must be 0 (queue default) or a positive duration");
  }
  if (c.ordering == Ordering::kGroupFifo && !m.group_id) {
    return Status::GroupRequired(where() + ": group_fifo queue requires a group_id");
  }

  item->message = &m;
  item->group_key = GroupKeyFor(c.ordering, m.group_id);
  item->enqueued_at = now;
  int64_t due = m.delay_ms > 0 ? now + m.delay_ms : m.schedule_at_ms;
  if (due > now) {
    item->visible_at = due;
    item->state = MessageState::kScheduled;
  } else {
    item->visible_at = now;
    item->state = MessageState::kActive;
  }
  int64_t ttl = m.ttl_ms;
  if (c.default_ttl_ms > 0 && (ttl == 0 || ttl > c.default_ttl_ms)) ttl = c.default_ttl_ms;
  item->expires_at = ttl > 0 ? item->visible_at + ttl : 0;
  return Status::OK();
}

Status ValidateDeadLetterReason(std::string_view queue, int64_t seq, std::string_view reason,
                                std::string_view description) {
  const std::string where = QueueLabel(queue) + ": seq " + std::to_string(seq);
  if (reason.empty() || reason.size() > kMaxIdBytes) {
    return Status::InvalidArgument(where + ": dead-letter reason must be 1-" +
                                   std::to_string(kMaxIdBytes) + " bytes, got " +
                                   std::to_string(reason.size()));
  }
  if (description.size() > kMaxTextBytes) {
    return Status::InvalidArgument(where + ": dead-letter description over " +
                                   std::to_string(kMaxTextBytes) + " bytes");
  }
  return Status::OK();
}

namespace {

Status OutOfRange(std::string_view field, int64_t value, int64_t lo, int64_t hi,
                  std::string_view unit = {}) {
  if (value >= lo && value <= hi) return Status::OK();
  return Status::InvalidArgument("EngineOptions." + std::string(field) + " " +
                                 std::to_string(value) + " outside " + std::to_string(lo) + "-" +
                                 std::to_string(hi) + std::string(unit));
}

}  // namespace

Status ValidateEngineOptions(const EngineOptions& o) {
  MQLITE_RETURN_IF_ERROR(OutOfRange("maintenance_interval_ms", o.maintenance_interval_ms, 1,
                                    kMaxMaintenanceIntervalMs, " (1 ms - 1 day)"));
  MQLITE_RETURN_IF_ERROR(OutOfRange("poll_interval_ms", o.poll_interval_ms, 1,
                                    kMaxMaintenanceIntervalMs, " (1 ms - 1 day)"));
  MQLITE_RETURN_IF_ERROR(
      OutOfRange("maintenance_batch", o.maintenance_batch, 1, kMaxMaintenanceBatch));
  MQLITE_RETURN_IF_ERROR(OutOfRange("max_message_bytes", o.max_message_bytes, 1,
                                    kMaxMessageBytesLimit, " (1 B - 256 MiB)"));
  MQLITE_RETURN_IF_ERROR(OutOfRange("max_send_batch", o.max_send_batch, 1, kMaxSendBatchLimit));
  MQLITE_RETURN_IF_ERROR(OutOfRange("dlq_max_age_ms", o.dlq_max_age_ms,
                                    std::numeric_limits<int64_t>::min(), kMaxTtlMs,
                                    " (≤ 0 = unbounded, at most 100 years)"));
  MQLITE_RETURN_IF_ERROR(OutOfRange("receipt_retention_ms", o.receipt_retention_ms, 1,
                                    kMaxDelayMs, " (1 ms - 365 days)"));
  MQLITE_RETURN_IF_ERROR(OutOfRange("attempt_retention_ms", o.attempt_retention_ms, 1,
                                    kMaxDelayMs, " (1 ms - 365 days)"));
  MQLITE_RETURN_IF_ERROR(OutOfRange("group_commit_max", o.group_commit_max, 1, kMaxGroupCommit,
                                    " (1 = no grouping)"));
  return Status::OK();
}

RetentionBounds ResolveRetention(const QueueConfig& c, const EngineOptions& e) {
  return RetentionBounds{Resolve(c.dlq_max_age_ms, e.dlq_max_age_ms),
                         Resolve(c.dlq_max_count, e.dlq_max_count),
                         Resolve(c.dlq_max_bytes, e.dlq_max_bytes)};
}

EngineDefaults EngineDefaultsOf(const EngineOptions& e) {
  return EngineDefaults{ResolveRetention(QueueConfig{}, e)};
}

}  // namespace mqlite::internal
