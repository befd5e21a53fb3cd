#include "mqlite/types.h"

#include <string>

#include "mqlite/store.h"

namespace mqlite {

std::string_view OrderingName(Ordering o) {
  switch (o) {
    case Ordering::kStandard: return "standard";
    case Ordering::kGroupFifo: return "group_fifo";
    case Ordering::kStrictFifo: return "strict_fifo";
  }
  return "unknown";
}

std::string_view DurabilityName(Durability d) {
  switch (d) {
    case Durability::kNormal: return "normal";
    case Durability::kFull: return "full";
    case Durability::kProcessOnly: return "process_only";
  }
  return "unknown";
}

std::string_view MessageStateName(MessageState s) {
  switch (s) {
    case MessageState::kActive: return "active";
    case MessageState::kLocked: return "locked";
    case MessageState::kDeferred: return "deferred";
    case MessageState::kScheduled: return "scheduled";
    case MessageState::kDeadLettered: return "dead_lettered";
  }
  return "unknown";
}

std::string_view SettleOpName(SettleOp op) {
  switch (op) {
    case SettleOp::kComplete: return "Complete";
    case SettleOp::kAbandon: return "Abandon";
    case SettleOp::kReject: return "Reject";
    case SettleOp::kDefer: return "Defer";
    case SettleOp::kRenew: return "Renew";
  }
  return "unknown";
}

Result<Ordering> ParseOrdering(std::string_view name) {
  for (Ordering o : {Ordering::kStandard, Ordering::kGroupFifo, Ordering::kStrictFifo}) {
    if (OrderingName(o) == name) return o;
  }
  return Status::InvalidArgument("unknown ordering '" + std::string(name) +
                                 "' (expected standard, group_fifo or strict_fifo)");
}

Result<Durability> ParseDurability(std::string_view name) {
  for (Durability d : {Durability::kNormal, Durability::kFull, Durability::kProcessOnly}) {
    if (DurabilityName(d) == name) return d;
  }
  return Status::InvalidArgument("unknown durability '" + std::string(name) +
                                 "' (expected normal, full or process_only)");
}

Result<MessageState> ParseMessageState(std::string_view name) {
  for (MessageState s : {MessageState::kActive, MessageState::kLocked, MessageState::kDeferred,
                         MessageState::kScheduled, MessageState::kDeadLettered}) {
    if (MessageStateName(s) == name) return s;
  }
  return Status::InvalidArgument("unknown message state '" + std::string(name) + "'");
}

bool LockToken::empty() const {
  for (uint8_t b : bytes) {
    if (b != 0) return false;
  }
  return true;
}

std::string LockToken::ToHex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

Result<LockToken> LockToken::FromHex(std::string_view hex) {
  if (hex.size() != 32) {
    return Status::InvalidArgument("lock token must be 32 hex digits, got " +
                                   std::to_string(hex.size()) + " characters");
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  LockToken t;
  for (size_t i = 0; i < 16; ++i) {
    int hi = nibble(hex[2 * i]);
    int lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Status::InvalidArgument("lock token contains a non-hex digit");
    t.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return t;
}

}  // namespace mqlite
