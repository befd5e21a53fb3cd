// Value types of the public API: queues, messages, options (SPEC §2–§6).
//
// Plain structs with documented defaults. Times are epoch milliseconds (UTC);
// durations are milliseconds. Strings are byte strings: binary-safe, NUL bytes
// allowed, and std::nullopt (absent) is distinct from "" (present, empty).
#ifndef MQLITE_TYPES_H_
#define MQLITE_TYPES_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "mqlite/status.h"

namespace mqlite {

// SPEC §5.
enum class Ordering : int {
  kStandard = 0,    // unordered, except messages that carry a group_id
  kGroupFifo = 1,   // every message must carry a group_id (else GroupRequired)
  kStrictFifo = 2,  // the whole queue is one group: at most one message in flight
};

// SPEC §3. A completed message is deleted, so there is no "completed" state.
enum class MessageState : int {
  kActive = 0,
  kLocked = 1,
  kDeferred = 2,
  kScheduled = 3,
  kDeadLettered = 4,
};

// SPEC §5.
enum class ReceiveMode : int {
  kPeekLock = 0,          // lock with a lease and a token; settle later
  kReceiveAndDelete = 1,  // delete in the claim's commit; no token, no lease
};

// SPEC §10. Each store documents its mapping.
enum class Durability : int {
  kNormal = 0,  // survives process death; may lose the last commits on power loss
  kFull = 1,    // survives power loss
  // Survives process death ONLY: an OS crash or power loss may lose commits
  // and may corrupt the store beyond repair (SQLite synchronous=OFF, LMDB
  // MDB_NOSYNC). For data you can rebuild; never the default.
  kProcessOnly = 2,
};

std::string_view OrderingName(Ordering o);          // "standard", ...
std::string_view DurabilityName(Durability d);      // "normal", "full", "process_only"
std::string_view MessageStateName(MessageState s);  // "active", ...
Result<Ordering> ParseOrdering(std::string_view name);
Result<Durability> ParseDurability(std::string_view name);
Result<MessageState> ParseMessageState(std::string_view name);

// Dead-letter reasons written by mqlite itself (SPEC §3).
inline constexpr std::string_view kReasonMaxDelivery = "MaxDeliveryCountExceeded";
inline constexpr std::string_view kReasonTtlExpired = "TTLExpired";

// A queue's configuration (SPEC §2). Engine::CreateQueue creates a queue if
// absent (an existing queue's config is returned, never changed);
// Engine::UpdateQueue replaces it. Zero means "the default" where the
// comment says so.
struct QueueConfig {
  std::string name{};  // 1–128 bytes of [A-Za-z0-9._:/-]
  int64_t lock_duration_ms = 30'000;  // 1 s – 12 h
  int32_t max_delivery_count = 10;    // 1 – 1000
  int64_t default_ttl_ms = 0;         // 0 = none; caps longer per-message TTLs
  bool dead_letter_on_expire = true;  // false: expired messages are deleted
  int64_t dedup_window_ms = 0;        // 0 = off (SPEC §4)
  Ordering ordering = Ordering::kStandard;
  // DLQ retention (SPEC §6): 0 = inherit the engine default, < 0 = unbounded.
  int64_t dlq_max_age_ms = 0;
  int64_t dlq_max_count = 0;
  int64_t dlq_max_bytes = 0;
  // 0 = the engine-wide default (EngineOptions::max_message_bytes, 1 MiB).
  int64_t max_message_bytes = 0;

  friend bool operator==(const QueueConfig&, const QueueConfig&) = default;
};

// A 128-bit lock token from the OS CSPRNG (SPEC §1, §6). All-zero = no token
// (Receive-and-Delete, or a message that is not locked).
struct LockToken {
  std::array<uint8_t, 16> bytes{};

  bool empty() const;
  std::string ToHex() const;  // 32 lowercase hex digits
  static Result<LockToken> FromHex(std::string_view hex);
  friend bool operator==(const LockToken&, const LockToken&) = default;
};

// What a producer sends (SPEC §4).
struct OutgoingMessage {
  std::string body{};                         // ≤ max_message_bytes
  std::optional<std::string> message_id{};      // ≤ 128 bytes; dedup key
  std::optional<std::string> group_id{};        // ≤ 128 bytes; present = grouped
  std::optional<std::string> subject{};         // ≤ 1024 bytes
  std::optional<std::string> correlation_id{};  // ≤ 128 bytes
  std::optional<std::string> content_type{};    // ≤ 1024 bytes
  std::map<std::string, std::string> properties{};  // ≤ 64; key 1–128 B, value ≤ 4096 B
  int priority = 0;          // 0–9, higher first (not within a group)
  int64_t schedule_at_ms = 0;  // > now: scheduled until then (0 = not set)
  int64_t delay_ms = 0;        // > 0: scheduled until now + delay
  int64_t ttl_ms = 0;          // 0 = queue default; anchored at visible_at
};

// A stored message as returned by Receive, Peek, ReceiveDeferred (SPEC §3).
struct Message {
  int64_t seq = 0;
  std::string queue{};
  std::string body{};
  std::optional<std::string> message_id{};
  std::optional<std::string> group_id{};
  std::optional<std::string> subject{};
  std::optional<std::string> correlation_id{};
  std::optional<std::string> content_type{};
  std::map<std::string, std::string> properties{};
  int priority = 0;
  int64_t enqueued_at = 0;
  int64_t visible_at = 0;
  int64_t expires_at = 0;  // 0 = never
  int32_t delivery_count = 0;
  MessageState state = MessageState::kActive;
  int64_t locked_until = 0;  // 0 when not locked (and for Receive-and-Delete)
  LockToken lock_token{};    // empty when not locked
  std::optional<std::string> dead_letter_reason{};
  std::optional<std::string> dead_letter_description{};
  int64_t dead_lettered_at = 0;  // 0 unless dead-lettered
};

struct ReceiveOptions {
  int max_messages = 1;  // 1–256
  ReceiveMode mode = ReceiveMode::kPeekLock;
  int64_t wait_ms = 0;   // long-poll, 0–20'000 (SPEC §5)
  // SPEC §7.3: a retry with the same id within attempt retention (5 min)
  // returns the same seqs and tokens and claims nothing new. 1–128 bytes.
  std::optional<std::string> attempt_id{};
};

// Cancellation for any engine call (SPEC §10). Both are real time (steady
// clock), independent of the engine's Clock.
//  - If `stop_token` is already stopped or `deadline` has passed when the call
//    starts, it does nothing and returns Cancelled.
//  - A call waiting (for the store's writer, or in a long-poll) returns
//    Cancelled promptly and has changed nothing.
//  - A statement already running on an embedded store finishes (interrupting
//    one can wedge the connection); inside Tx the next queue operation does
//    not start, and the transaction rolls back.
struct CallOptions {
  std::stop_token stop_token{};
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();

  // Convenience: a deadline `ms` from now.
  // Saturating: a negative `ms` is already past; one too large to represent
  // (beyond ~292 years of steady-clock nanoseconds) means no deadline.
  static CallOptions Timeout(int64_t ms) {
    CallOptions o;
    using Clock = std::chrono::steady_clock;
    const Clock::time_point now = Clock::now();
    const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(
        Clock::time_point::max() - now);
    o.deadline = ms >= room.count() ? Clock::time_point::max()
                                    : now + std::chrono::milliseconds(ms);
    return o;
  }
};

// One item of CompleteBatch / RenewBatch (≤ 512 items, SPEC §6).
struct SettleItem {
  int64_t seq = 0;
  LockToken token{};
};

// Per-slot outcome of SendBatch (SPEC §4).
struct SendOutcome {
  // The slot's seq: a new one, or with `duplicate` the original send's. 0 when
  // `status` is not OK.
  int64_t seq = 0;
  // OK, or DedupConflict (the key was sent within the dedup window with a
  // different body; the message names the key and the original seq). A
  // conflicting slot fails alone: the batch's other slots commit.
  Status status{};
  // True when the slot was a resend of the same key and body within the dedup
  // window: nothing was written and `seq` is the original message's.
  bool duplicate = false;
};

// Per-item outcome of RenewBatch: the committed locked_until, or the error.
struct RenewOutcome {
  Status status{};
  int64_t locked_until = 0;
};

struct PeekOptions {
  std::optional<MessageState> state{};  // nullopt = every state
  int64_t from_seq = 0;               // return seqs > from_seq (paging)
  int max_messages = 100;             // 1–1000
};

struct RedriveOptions {
  std::string target_queue{};  // empty = the same queue
  int64_t max_messages = 0;  // 0 = all
  int64_t older_than_ms = 0; // only dead letters dead-lettered ≥ this long ago
};

struct PurgeOptions {
  int64_t max_messages = 0;  // 0 = all
  int64_t older_than_ms = 0;
};

// SPEC §6.
struct QueueStats {
  int64_t active = 0;
  int64_t locked = 0;
  int64_t deferred = 0;
  int64_t scheduled = 0;
  int64_t dead_lettered = 0;
  int64_t total = 0;
  int64_t body_bytes = 0;
  // now − enqueued_at of the oldest message a Receive could claim at `now`
  // (0 if none): the number to alert on. It counts what a Receive would
  // return — group heads (and ungrouped messages) that are active, scheduled
  // and already due, or locked under an expired lease with deliveries left —
  // and leaves out TTL-expired messages, live leases, future schedules,
  // deferred messages and group members blocked behind their head. Age is
  // measured from enqueued_at, which a Redrive keeps, so a redriven message
  // counts as old as it is. Bounded cost: each store seeks an index per kind
  // (docs/concepts.md § Stats).
  int64_t oldest_claimable_age_ms = 0;
};

// What one maintenance pass did.
struct MaintenanceReport {
  int64_t promoted = 0;        // scheduled → active
  int64_t reclaimed = 0;       // expired leases → active or DLQ
  int64_t expired = 0;         // TTL → DLQ or deleted
  int64_t retention_dropped = 0;
  int64_t records_dropped = 0;  // expired receipts, attempts, dedup records
  int64_t space_reclaimed = 0;  // store units returned to the filesystem (SQLite: pages)
  // Queues left alone because another engine sharing the store held their
  // maintenance lock (spec.md §9, StoreCapabilities::maintenance_lock): that
  // engine maintains them. Always 0 on a store without the lock.
  int64_t queues_skipped = 0;
  bool more = false;           // a step hit its per-pass limit; run again
};

}  // namespace mqlite

#endif  // MQLITE_TYPES_H_
