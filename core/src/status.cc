#include "mqlite/status.h"

namespace mqlite {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kGroupRequired: return "GroupRequired";
    case StatusCode::kMessageTooLarge: return "MessageTooLarge";
    case StatusCode::kQueueNotFound: return "QueueNotFound";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kLockLost: return "LockLost";
    case StatusCode::kDedupConflict: return "DedupConflict";
    case StatusCode::kDbLocked: return "DbLocked";
    case StatusCode::kSchemaVersionMismatch: return "SchemaVersionMismatch";
    case StatusCode::kStoreFull: return "StoreFull";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kOutcomeUnknown: return "OutcomeUnknown";
    case StatusCode::kClosed: return "Closed";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kUnimplemented: return "Unimplemented";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string_view message) {
  // An OK code never carries a Rep, so ok() stays a null check.
  if (code != StatusCode::kOk) rep_.reset(new Rep{code, std::string(message)});
}

Status::Status(const Status& other)
    : rep_(other.rep_ ? new Rep(*other.rep_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) rep_.reset(other.rep_ ? new Rep(*other.rep_) : nullptr);
  return *this;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(rep_->code));
  if (!rep_->message.empty()) {
    out += ": ";
    out += rep_->message;
  }
  return out;
}

Status Status::WithContext(std::string_view prefix) const {
  if (ok()) return *this;
  std::string m(prefix);
  m += ": ";
  m += rep_->message;
  return Status(rep_->code, m);
}

}  // namespace mqlite
