// The memory store's layout: one row per message in a seq-ordered map, plus
// hand-built ordered indexes that mirror the SQLite store's partial indexes
// (stores/sqlite/src/schema.h), so every claim, settle and maintenance step is
// a seek plus a walk of the entries it returns (SPEC §11).
//
// Index keys are tuples ordered lexicographically; the queue id always comes
// first, so a queue's entries are one contiguous range.
//
//   claim        (queue, -priority, seq)   state active AND is_head
//   claim_age    (queue, enqueued_at, seq) same rows, by age (Stats' oldest claimable)
//   group        (queue, group_key, seq)   group_key present AND state ≠ dead-lettered
//   due          (queue, visible_at, seq)  state scheduled
//   lease        (queue, locked_until, seq) state locked
//   ttl          (queue, expires_at, seq)  expires_at > 0 AND state active/deferred/scheduled
//   dlq          (queue, dead_lettered_at, seq) state dead-lettered
//   by_state     (queue, state, seq)       every row
//
// `is_head` is true for an ungrouped live message and for the lowest-seq live
// member of each group (docs/sqlite-store.md, "claimable heads"); blocked
// members are never in the claim index, so a claim never visits them.
//
// Per queue, QueueData keeps a count and body-byte total per state (the DLQ
// totals of retention are its dead-lettered slot), so Stats and retention
// never count rows.
#ifndef MQLITE_STORES_MEMORY_SRC_LAYOUT_H_
#define MQLITE_STORES_MEMORY_SRC_LAYOUT_H_

#include <array>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "mqlite/change_feed.h"
#include "mqlite/store.h"
#include "mqlite/store_util.h"
#include "mqlite/types.h"

namespace mqlite::memory_internal {

inline constexpr int kStates = 5;  // MessageState values 0..4

// What a message was sent with (mqlite/store_util.h): shared between a row,
// its undo images and a redriven copy, so none of them copies a body.
using Payload = RowPayload;

// A message: its bookkeeping (mqlite/store_util.h RowState: the facts the
// queue rules read and the rest) and its shared payload.
struct Row : RowState {
  std::shared_ptr<const Payload> payload;

  int64_t body_size() const { return static_cast<int64_t>(payload->body.size()); }
};

struct QueueData {
  QueueConfig config;
  int64_t created_at = 0;
  std::array<int64_t, kStates> count{};
  std::array<int64_t, kStates> bytes{};

  int64_t total() const {
    int64_t n = 0;
    for (int64_t c : count) n += c;
    return n;
  }
};

using Key3 = std::tuple<int64_t, int64_t, int64_t>;
using QueueSeq = std::pair<int64_t, int64_t>;
using GroupEntry = std::tuple<int64_t, std::string, int64_t>;
using DedupKey = std::pair<int64_t, std::string>;
using ExpiryEntry = std::pair<int64_t, std::string>;                 // (expires_at, key)
using DedupExpiryEntry = std::tuple<int64_t, int64_t, std::string>;  // (expires_at, queue, key)

// Counted index steps (entries visited by a walk), for the §11 pins in the
// store's tests: they prove a claim never visits a blocked member.
struct Probe {
  int64_t claim_steps = 0;        // claim index entries Claim looked at
  int64_t maintenance_steps = 0;  // due/lease/ttl/dlq entries maintenance looked at
};

struct Data {
  // Never rolled back: a seq or queue id handed out by a transaction that
  // failed is simply skipped (gaps are allowed; reuse is not, SPEC §3).
  int64_t last_seq = 0;
  int64_t last_queue_id = 0;

  std::map<int64_t, QueueData> queues;
  std::map<std::string, int64_t, std::less<>> queue_names;

  std::map<int64_t, Row> messages;  // by seq
  std::set<Key3> claim;
  std::set<Key3> claim_age;
  std::set<GroupEntry> group;
  std::set<Key3> due;
  std::set<Key3> lease;
  std::set<Key3> ttl;
  std::set<Key3> dlq;
  std::set<Key3> by_state;

  std::map<DedupKey, DedupRecord> dedup;
  std::set<DedupExpiryEntry> dedup_expiry;
  std::map<std::string, int64_t, std::less<>> receipts;  // key → expires_at
  std::set<ExpiryEntry> receipt_expiry;
  std::map<std::string, AttemptRecord, std::less<>> attempts;
  std::set<ExpiryEntry> attempt_expiry;

  // The application's tables (SPEC §8): (table, key) → value.
  std::map<std::pair<std::string, std::string>, std::string> business;

  Probe probe;
};

}  // namespace mqlite::memory_internal

namespace mqlite {

class MemoryDatabase {
 public:
  // Who has the database open: one exclusive store, or any number of shared
  // ones (MemoryStoreOptions::shared). Guarded by mu.
  std::mutex mu;
  bool exclusive_open = false;
  int shared_open = 0;
  // One writer or many readers across every store open on the database
  // (spec.md §10: the wait gives up promptly when the caller cancels).
  RunGate gate;
  // Accessed only under the gate above.
  memory_internal::Data data;
  // Every store open on the database publishes its commits here (spec.md §9
  // change feed), so an engine's long-poll wakes on another engine's send.
  std::shared_ptr<ChangeHub> feed = ChangeHub::Create();
  // Shared mode (spec.md §9), guarded by mu: the queues whose maintenance
  // lock a store holds (Store::TryLockMaintenance), and the defaults of the
  // live engines by registration (Store::RegisterEngine). An entry goes when
  // the handle that holds it is destroyed.
  std::set<int64_t> maintenance_locks;
  std::map<uint64_t, EngineDefaults> engines;
  uint64_t last_engine = 0;
};

}  // namespace mqlite

#endif  // MQLITE_STORES_MEMORY_SRC_LAYOUT_H_
