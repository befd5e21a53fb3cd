// mqlite::Status and mqlite::Result<T>: errors as values (SPEC §10).
//
// Nothing in mqlite throws across the public API. Every fallible call returns a
// Status (no payload) or a Result<T> (a T or a non-OK Status). A Status costs one
// null pointer on the OK path, in the manner of LevelDB's status.h.
//
// Thread-safety: a const Status/Result may be read from many threads; mutation
// needs external synchronisation, as for any value type.
#ifndef MQLITE_STATUS_H_
#define MQLITE_STATUS_H_

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace mqlite {

// The codes of SPEC §10. Each comment says what the *caller* should do.
enum class StatusCode : int {
  kOk = 0,
  // The request itself is malformed (name, size, range, mode). Fix the call;
  // retrying it unchanged fails the same way. Nothing was written.
  kInvalidArgument = 1,
  // A group_fifo queue received a message without group_id (SPEC §4).
  kGroupRequired = 2,
  // A body exceeds the queue's max_message_bytes (SPEC §2).
  kMessageTooLarge = 3,
  // The named queue does not exist (SPEC §2).
  kQueueNotFound = 4,
  // The named message (seq) does not exist in the state the call needs.
  kNotFound = 5,
  // The lease behind a settle is gone: wrong or stale token, lease expired, or
  // the message was redelivered (SPEC §6). Do NOT retry: another consumer may
  // own the message now. Treat the work as not acknowledged; it will be
  // redelivered (at-least-once).
  kLockLost = 6,
  // Same dedup key, different body (SPEC §4). Nothing was written.
  kDedupConflict = 7,
  // An embedded store is already open elsewhere (SPEC §9). Nothing was touched.
  kDbLocked = 8,
  // The data was written by a different schema version (SPEC §10). Nothing was
  // changed.
  kSchemaVersionMismatch = 9,
  // Disk full or the store's size cap reached. Free space or raise the cap.
  kStoreFull = 10,
  // Transient: the operation did not happen. Retrying the same call is safe.
  kUnavailable = 11,
  // The commit may or may not have happened (e.g. the connection died after
  // COMMIT was sent). Do not blindly retry a non-idempotent call: reconcile
  // first (dedup ids, receipts and attempt ids make a retry safe).
  kOutcomeUnknown = 12,
  // The engine is closed or closing (SPEC §9).
  kClosed = 13,
  // The caller's deadline passed or its stop token fired (SPEC §10); nothing
  // was committed by this call.
  kCancelled = 14,
  // Stored data is unreadable or violates an invariant. Stop and investigate.
  kCorruption = 15,
  // A bug in mqlite or in a store. Report it.
  kInternal = 16,
  // The store does not implement this optional operation (see
  // StoreCapabilities in store.h).
  kUnimplemented = 17,
};

// "InvalidArgument", "LockLost", ... (the SPEC §10 spelling).
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;  // OK
  Status(StatusCode code, std::string_view message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&& other) noexcept = default;
  Status& operator=(Status&& other) noexcept = default;
  ~Status() = default;

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string_view m) { return {StatusCode::kInvalidArgument, m}; }
  static Status GroupRequired(std::string_view m) { return {StatusCode::kGroupRequired, m}; }
  static Status MessageTooLarge(std::string_view m) { return {StatusCode::kMessageTooLarge, m}; }
  static Status QueueNotFound(std::string_view m) { return {StatusCode::kQueueNotFound, m}; }
  static Status NotFound(std::string_view m) { return {StatusCode::kNotFound, m}; }
  static Status LockLost(std::string_view m) { return {StatusCode::kLockLost, m}; }
  static Status DedupConflict(std::string_view m) { return {StatusCode::kDedupConflict, m}; }
  static Status DbLocked(std::string_view m) { return {StatusCode::kDbLocked, m}; }
  static Status SchemaVersionMismatch(std::string_view m) {
    return {StatusCode::kSchemaVersionMismatch, m};
  }
  static Status StoreFull(std::string_view m) { return {StatusCode::kStoreFull, m}; }
  static Status Unavailable(std::string_view m) { return {StatusCode::kUnavailable, m}; }
  static Status OutcomeUnknown(std::string_view m) { return {StatusCode::kOutcomeUnknown, m}; }
  static Status Closed(std::string_view m) { return {StatusCode::kClosed, m}; }
  static Status Cancelled(std::string_view m) { return {StatusCode::kCancelled, m}; }
  static Status Corruption(std::string_view m) { return {StatusCode::kCorruption, m}; }
  static Status Internal(std::string_view m) { return {StatusCode::kInternal, m}; }
  static Status Unimplemented(std::string_view m) { return {StatusCode::kUnimplemented, m}; }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // Empty for OK.
  std::string_view message() const {
    return rep_ ? std::string_view(rep_->message) : std::string_view();
  }
  // "OK" or "LockLost: queue 'jobs': seq 42 ...".
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>"; OK stays OK.
  Status WithContext(std::string_view prefix) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;
};

// Result<T>: a T or a non-OK Status. A subset of std::expected<T, Status>'s
// surface (has_value, value, operator*, operator->, error) so it can become an
// alias later. Constructing a Result from an OK Status is a programming error
// and yields an Internal error instead of a value-less "success".
template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::decay_t<T>, Status>, "Result<Status> is meaningless");

 public:
  Result(const T& value) : v_(value) {}             // NOLINT(runtime/explicit)
  Result(T&& value) : v_(std::move(value)) {}       // NOLINT(runtime/explicit)
  Result(const Status& status) : v_(Checked(status)) {}  // NOLINT(runtime/explicit)
  Result(Status&& status) : v_(Checked(std::move(status))) {}  // NOLINT
  template <typename U,
            typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                        !std::is_same_v<std::decay_t<U>, T> &&
                                        !std::is_same_v<std::decay_t<U>, Status> &&
                                        !std::is_same_v<std::decay_t<U>, Result>>>
  Result(U&& value) : v_(T(std::forward<U>(value))) {}  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  bool ok() const { return has_value(); }
  explicit operator bool() const { return has_value(); }

  // REQUIRES: has_value().
  //
  // On an rvalue Result (a call's return value used directly) value() and
  // operator* return the T itself, moved out, never a reference into the
  // dying Result: `for (const Message& m : *engine.Receive("q"))` then
  // iterates a vector whose lifetime the range-for extends, instead of one
  // destroyed at the end of the full expression. (std::expected returns T&&
  // here; this is where we deliberately differ.)
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return has_value() ? value() : T(std::forward<U>(fallback));
  }

  // REQUIRES: !has_value().
  const Status& error() const& { return std::get<1>(v_); }
  Status&& error() && { return std::get<1>(std::move(v_)); }

  // OK when a value is held, the error otherwise.
  Status status() const { return has_value() ? Status::OK() : std::get<1>(v_); }

 private:
  static Status Checked(Status s) {
    if (s.ok()) return Status::Internal("Result constructed from an OK Status without a value");
    return s;
  }
  std::variant<T, Status> v_;
};

}  // namespace mqlite

#define MQLITE_CONCAT_INNER_(a, b) a##b
#define MQLITE_CONCAT_(a, b) MQLITE_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function if it is not OK.
#define MQLITE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::mqlite::Status mqlite_status_ = (expr);        \
    if (!mqlite_status_.ok()) return mqlite_status_; \
  } while (0)

// `lhs = *expr;` or returns expr's error from the enclosing function.
#define MQLITE_ASSIGN_OR_RETURN(lhs, expr) \
  MQLITE_ASSIGN_OR_RETURN_IMPL_(MQLITE_CONCAT_(mqlite_result_, __LINE__), lhs, expr)
#define MQLITE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.has_value()) return std::move(tmp).error(); \
  lhs = std::move(tmp).value()

#endif  // MQLITE_STATUS_H_
