// mqlite::Engine — the public API of the queue (SPEC §2–§10).
//
// Usage:
//   auto store = mqlite::OpenSqliteStore({.path = "app.db"});   // mqlite/sqlite.h
//   auto engine = mqlite::Engine::Open(std::move(*store));
//   (*engine)->CreateQueue({.name = "jobs"});
//   (*engine)->Send("jobs", {.body = "hello"});
//   auto got = (*engine)->Receive("jobs", {.max_messages = 16});
//   for (auto& m : *got) (void)(*engine)->Complete("jobs", m.seq, m.lock_token);
//
// (`for (auto& m : *(*engine)->Receive("jobs"))` is safe too: an rvalue
// Result hands out its value, not a reference into itself.)
//
// Thread-safety: every method may be called from any thread concurrently
// (SPEC §9). Close() fences the engine: later calls return Closed, calls in
// flight finish, long-poll waiters wake with Closed, then the store (and an
// embedded store's file lock) is released.
//
// Errors: every method returns Status / Result (SPEC §10); nothing throws.
// Bad input is refused before anything is written, with a message naming the
// queue, seq or field at fault.
//
// fork(): Close() every engine before fork() and open new ones in the child
// (and, if it goes on, in the parent). A child inherits the parent's open
// file descriptors — an embedded store's exclusive lock and its database
// connection — but not the maintenance thread or any thread in a call, so
// using an inherited engine in the child can corrupt the store, and its
// destructor would release the parent's lock. Neither SQLite nor LMDB
// supports using a connection/environment across fork().
#ifndef MQLITE_ENGINE_H_
#define MQLITE_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mqlite/clock.h"
#include "mqlite/status.h"
#include "mqlite/store.h"
#include "mqlite/types.h"

namespace mqlite {

struct EngineOptions {
  // Source of "now". nullptr = SystemClock(). Not owned; must outlive the
  // engine. The engine reads it saturated to [0, 2^62] ms (a clock before the
  // epoch reads as 0; one beyond year ~146 million as 2^62), so every time
  // it derives (now + lease, + delay, + TTL, + retention) stays in range.
  Clock* clock = nullptr;
  // Run maintenance (schedules, lease expiry, TTL, retention, expired
  // idempotency records) on a background thread every
  // maintenance_interval_ms. Off: call RunMaintenance() yourself.
  bool background_maintenance = true;
  int64_t maintenance_interval_ms = 1'000;
  // Messages one maintenance step may touch per queue per pass.
  int64_t maintenance_batch = 1'000;
  // A long-poll Receive re-checks its queue at this interval, so messages
  // that become claimable by time alone (a due schedule, a lapsed lease) are
  // seen. Commits wake it at once: this engine's own always; other engines'
  // and processes' when the store has a change feed
  // (StoreCapabilities::change_feed); without one they are seen at the next
  // re-check (spec.md §5, §9).
  int64_t poll_interval_ms = 250;
  // Engine-wide default for QueueConfig::max_message_bytes (SPEC §2).
  int64_t max_message_bytes = 1 << 20;
  // Largest batch accepted by SendBatch.
  int max_send_batch = 1'000;
  // Ranges (Open refuses anything else with InvalidArgument naming the
  // field): maintenance_interval_ms and poll_interval_ms 1 ms – 1 day;
  // maintenance_batch 1 – 10^6;
  // max_send_batch 1 – 100,000; dlq_max_age_ms ≤ 100 years;
  // receipt_retention_ms and attempt_retention_ms 1 ms – 365 days;
  // group_commit_max 1 – 4,096.
  //
  // Engine defaults for DLQ retention (SPEC §6); a queue's 0 inherits these;
  // ≤ 0 here means unbounded. Every engine sharing a store must use the same
  // three values (spec.md §9; checked at Open where the store can).
  int64_t dlq_max_age_ms = 14LL * 24 * 3600 * 1000;
  int64_t dlq_max_count = 1'000'000;
  int64_t dlq_max_bytes = 1LL << 30;
  // How long a settlement receipt can replay (SPEC §7.2) and a receive
  // attempt id is remembered (SPEC §7.3).
  int64_t receipt_retention_ms = 30LL * 60 * 1000;
  int64_t attempt_retention_ms = 5LL * 60 * 1000;
  // Group commit (SPEC §9). Write calls (Send, SendBatch, Receive, the
  // settles, Cancel, Redrive, Purge, queue changes, maintenance) that arrive
  // while another write is running queue up, and the next one to run takes
  // up to group_commit_max of them into one store transaction, each request
  // in its own savepoint, in arrival order. A caller sees exactly what it
  // would have seen alone: its own result and error (a request that fails
  // rolls back only its savepoint; if a request hits a store error such as
  // StoreFull, the group is rolled back and every member is re-run in a
  // transaction of its own), and it returns only after the commit that holds
  // its writes (same durability). A caller still waiting to be taken can be
  // cancelled (SPEC §10). A lone caller runs at once, as without grouping.
  // Tx never joins a group. group_commit_max = 1 turns grouping off.
  int group_commit_max = 64;
};

class Engine;

// The queue operations available inside Engine::Tx (SPEC §8). They join the
// transaction: nothing they do is visible or durable until the callback
// returns OK and the commit succeeds. A TxContext is valid only during its
// callback, on the callback's thread; calls after that return InvalidArgument.
class TxContext {
 public:
  TxContext(const TxContext&) = delete;
  TxContext& operator=(const TxContext&) = delete;
  ~TxContext();

  // The store's native transaction handle for the application's own data
  // (sqlite3* on SQLite: see mqlite/sqlite.h's SqliteHandle()). Valid only
  // during the callback, on its thread. Do not COMMIT, ROLLBACK or BEGIN on
  // it; do not keep it. nullptr outside the callback.
  void* native_handle() const;
  // StoreCapabilities::native_handle_type ("sqlite3", ...).
  const std::string& native_handle_type() const;

  Result<int64_t> Send(std::string_view queue, const OutgoingMessage& message);
  Result<std::vector<SendOutcome>> SendBatch(std::string_view queue,
                                             std::span<const OutgoingMessage> messages);
  Status Complete(std::string_view queue, int64_t seq, const LockToken& token);
  Status Abandon(std::string_view queue, int64_t seq, const LockToken& token,
                 int64_t delay_ms = 0);
  Status Reject(std::string_view queue, int64_t seq, const LockToken& token,
                std::string_view reason, std::string_view description = {});
  Status Defer(std::string_view queue, int64_t seq, const LockToken& token);

 private:
  friend class Engine;
  struct State;
  // Contexts are owned and reused by their engine, so a reference kept past
  // the callback is refused (InvalidArgument) rather than dangling — for as
  // long as the engine object lives.
  explicit TxContext(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class Engine {
 public:
  // Takes ownership of `store`. For an exclusive store, reclaims every locked
  // message left by a previous process (SPEC §7.1) before returning. On a
  // shared store that keeps a registry of engines
  // (StoreCapabilities::engine_registry, spec.md §9), InvalidArgument —
  // with nothing written — if an engine still using the store has other DLQ
  // retention defaults (dlq_max_age_ms, dlq_max_count, dlq_max_bytes).
  static Result<std::unique_ptr<Engine>> Open(std::unique_ptr<Store> store,
                                              EngineOptions options = {});
  ~Engine();  // Close()s if still open.
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Every method takes an optional CallOptions (deadline, stop token; SPEC
  // §10). A method called from inside a Tx callback on the same engine
  // returns InvalidArgument: use the TxContext.

  // ---- Queues (SPEC §2) ----------------------------------------------------
  // Creates the queue if no queue of that name exists; returns the stored
  // config. If it exists, nothing changes and its stored config is returned
  // (compare it with yours to notice drift) — so startup code can call
  // CreateQueue on every start without resetting a tuned queue.
  // `config` is validated either way.
  Result<QueueConfig> CreateQueue(const QueueConfig& config, const CallOptions& call = {});
  // Replaces the config of an existing queue (QueueNotFound if absent),
  // keeping its messages; returns the stored config. Changing `ordering`
  // while the queue holds messages is InvalidArgument (group keys were fixed
  // at send time). New values apply from the next operation: an existing
  // lease keeps its locked_until, a sent message keeps its expires_at.
  Result<QueueConfig> UpdateQueue(const QueueConfig& config, const CallOptions& call = {});
  Result<QueueConfig> GetQueue(std::string_view name, const CallOptions& call = {});
  Result<std::vector<QueueConfig>> ListQueues(const CallOptions& call = {});
  // Deletes the queue and all its messages, in any state.
  Status DeleteQueue(std::string_view name, const CallOptions& call = {});

  // ---- Send (SPEC §4) ------------------------------------------------------
  // With dedup on, a resend of the same key and body within the window
  // returns the original seq and writes nothing; same key, other body →
  // DedupConflict.
  Result<int64_t> Send(std::string_view queue, const OutgoingMessage& message,
                       const CallOptions& call = {});
  // One commit for the whole batch; one outcome per slot (SendOutcome: the
  // seq, whether it was a dedup duplicate, or the slot's DedupConflict).
  // Every message is validated before anything is written: an invalid
  // message fails the whole call and writes nothing. A dedup conflict fails
  // only its slot while the other slots commit.
  Result<std::vector<SendOutcome>> SendBatch(std::string_view queue,
                                             std::span<const OutgoingMessage> messages,
                                             const CallOptions& call = {});
  // Deletes a scheduled message that was never delivered; NotFound otherwise.
  Status Cancel(std::string_view queue, int64_t seq, const CallOptions& call = {});

  // ---- Receive (SPEC §5, §7.3) ---------------------------------------------
  // Claims up to options.max_messages in one commit. With wait_ms > 0 and
  // nothing eligible, blocks until a send or settle in this engine makes
  // something eligible (woken at once), the wait ends (→ empty vector), or
  // Close (→ Closed).
  Result<std::vector<Message>> Receive(std::string_view queue, const ReceiveOptions& options = {},
                                       const CallOptions& call = {});
  // Locks the given deferred messages, all or nothing: NotFound names the
  // first seq that is not a deferred message of the queue, and then nothing
  // is locked. A deferred message that can no longer be delivered is retired
  // exactly as a claim would retire it (SPEC §7.4, §3): one that has used
  // all max_delivery_count deliveries is dead-lettered
  // (MaxDeliveryCountExceeded), one whose TTL passed is expired (dead-letter
  // TTLExpired, or deleted). That retirement commits — promoting the next
  // member of its group — while nothing else is locked, and the call
  // returns NotFound saying what happened to which seq.
  Result<std::vector<Message>> ReceiveDeferred(std::string_view queue,
                                               std::span<const int64_t> seqs,
                                               const CallOptions& call = {});

  // ---- Settle (SPEC §6, §7.2) ----------------------------------------------
  // Each succeeds only for the current token of a live lease (locked_until >
  // now), or as the replay of an identical, already successful request whose
  // receipt is live; LockLost otherwise.
  Status Complete(std::string_view queue, int64_t seq, const LockToken& token,
                  const CallOptions& call = {});
  Status Abandon(std::string_view queue, int64_t seq, const LockToken& token,
                 int64_t delay_ms = 0, const CallOptions& call = {});
  Status Reject(std::string_view queue, int64_t seq, const LockToken& token,
                std::string_view reason, std::string_view description = {},
                const CallOptions& call = {});
  Status Defer(std::string_view queue, int64_t seq, const LockToken& token,
               const CallOptions& call = {});
  // Returns the new locked_until (never shorter than before). Renew has no
  // receipt: it never revives an expired lease.
  Result<int64_t> Renew(std::string_view queue, int64_t seq, const LockToken& token,
                        const CallOptions& call = {});
  // ≤ 512 items, one commit, one Status per item; a stale item fails alone.
  Result<std::vector<Status>> CompleteBatch(std::string_view queue,
                                            std::span<const SettleItem> items,
                                            const CallOptions& call = {});
  Result<std::vector<RenewOutcome>> RenewBatch(std::string_view queue,
                                               std::span<const SettleItem> items,
                                               const CallOptions& call = {});

  // ---- Transactions (SPEC §8) ----------------------------------------------
  // Runs `fn` inside one store transaction: its native-handle writes and its
  // TxContext queue operations commit together iff it returns OK. An error
  // from `fn`, or an exception (rethrown after the rollback), rolls back
  // everything. Nested Tx → InvalidArgument. `fn` is never re-run.
  Status Tx(const std::function<Status(TxContext&)>& fn, const CallOptions& call = {});

  // ---- Inspection and DLQ (SPEC §6) ----------------------------------------
  // Messages in seq order, optionally of one state. Takes no lock and never
  // returns a lock token (lock_token is empty; locked_until is shown), so an
  // inspector cannot settle a lease it does not own.
  Result<std::vector<Message>> Peek(std::string_view queue, const PeekOptions& options = {},
                                    const CallOptions& call = {});
  Result<QueueStats> Stats(std::string_view queue, const CallOptions& call = {});
  // Returns how many dead letters moved / were deleted.
  Result<int64_t> Redrive(std::string_view queue, const RedriveOptions& options = {},
                          const CallOptions& call = {});
  Result<int64_t> Purge(std::string_view queue, const PurgeOptions& options = {},
                        const CallOptions& call = {});

  // ---- Operator paths for one stuck message --------------------------------
  // Dead-letters message `seq` in any live state (active, scheduled,
  // deferred, or locked — the lease is revoked and its holder's settles get
  // LockLost) with `reason` (1–128 bytes) and `description` (≤ 1024 bytes);
  // the next member of its group becomes the head. From the DLQ it can be
  // redriven or purged as usual. NotFound if `seq` is not a message of the
  // queue or is already dead-lettered.
  Status DeadLetterMessage(std::string_view queue, int64_t seq, std::string_view reason,
                           std::string_view description = {}, const CallOptions& call = {});
  // Deletes message `seq` in any state, dead letters included; the next
  // member of its group becomes the head. NotFound if absent.
  Status DeleteMessage(std::string_view queue, int64_t seq, const CallOptions& call = {});

  // ---- Maintenance (SPEC §1) -----------------------------------------------
  // One pass over every queue: due schedules, expired leases, TTL, DLQ
  // retention, then expired receipts / attempts / dedup records.
  // Deterministic under a ManualClock. On a store shared with other engines
  // that has a maintenance lock (StoreCapabilities::maintenance_lock,
  // spec.md §9), a queue another engine is maintaining at that moment is
  // skipped and counted in MaintenanceReport::queues_skipped.
  Result<MaintenanceReport> RunMaintenance(const CallOptions& call = {});

  // ---- Lifecycle (SPEC §9) -------------------------------------------------
  // Idempotent. Returns once no call is in flight and the store is released.
  Status Close();

  StoreCapabilities capabilities() const;

  struct Impl;  // public only so the implementation's helpers can name it

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mqlite

#endif  // MQLITE_ENGINE_H_
