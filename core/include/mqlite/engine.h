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
// Thread-safety: every method may be called from any thread concurrently
// (SPEC §9). Close() fences the engine: later calls return Closed, calls in
// flight finish, long-poll waiters wake with Closed, then the store (and an
// embedded store's file lock) is released.
//
// Errors: every method returns Status / Result (SPEC §10); nothing throws.
// Bad input is refused before anything is written, with a message naming the
// queue, seq or field at fault.
#ifndef MQLITE_ENGINE_H_
#define MQLITE_ENGINE_H_

#include <cstdint>
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
  // engine.
  Clock* clock = nullptr;
  // Run maintenance (schedules, lease expiry, TTL, retention) on a background
  // thread every maintenance_interval_ms. Off: call RunMaintenance() yourself.
  bool background_maintenance = true;
  int64_t maintenance_interval_ms = 1'000;
  // Messages one maintenance step may touch per queue per pass.
  int64_t maintenance_batch = 1'000;
  // Engine-wide default for QueueConfig::max_message_bytes (SPEC §2).
  int64_t max_message_bytes = 1 << 20;
  // Largest batch accepted by SendBatch.
  int max_send_batch = 1'000;
  // Engine defaults for DLQ retention (SPEC §6); a queue's 0 inherits these;
  // ≤ 0 here means unbounded.
  int64_t dlq_max_age_ms = 14LL * 24 * 3600 * 1000;
  int64_t dlq_max_count = 1'000'000;
  int64_t dlq_max_bytes = 1LL << 30;
};

class Engine {
 public:
  // Takes ownership of `store`. For an exclusive store, reclaims every locked
  // message left by a previous process (SPEC §7.1) before returning.
  static Result<std::unique_ptr<Engine>> Open(std::unique_ptr<Store> store,
                                              EngineOptions options = {});
  ~Engine();  // Close()s if still open.
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // ---- Queues (SPEC §2) ----------------------------------------------------
  // Idempotent upsert of name + config; returns the stored config with
  // defaults resolved.
  Result<QueueConfig> CreateQueue(const QueueConfig& config);
  Result<QueueConfig> GetQueue(std::string_view name);
  Result<std::vector<QueueConfig>> ListQueues();
  // Deletes the queue and all its messages, in any state.
  Status DeleteQueue(std::string_view name);

  // ---- Send (SPEC §4) ------------------------------------------------------
  Result<int64_t> Send(std::string_view queue, const OutgoingMessage& message);
  // One commit for the whole batch; one seq per slot. Every message is
  // validated before anything is written.
  Result<std::vector<int64_t>> SendBatch(std::string_view queue,
                                         std::span<const OutgoingMessage> messages);
  // Deletes a scheduled message that was never delivered; NotFound otherwise.
  Status Cancel(std::string_view queue, int64_t seq);

  // ---- Receive (SPEC §5) ---------------------------------------------------
  // Claims up to options.max_messages in one commit. With wait_ms > 0 and
  // nothing eligible, blocks until a send in this engine (or the wait's end,
  // or Close → Closed). An empty vector means nothing was eligible.
  Result<std::vector<Message>> Receive(std::string_view queue, const ReceiveOptions& options = {});
  // Locks the given deferred messages (all or nothing: NotFound names the
  // first seq that is not a deferred message of the queue).
  Result<std::vector<Message>> ReceiveDeferred(std::string_view queue,
                                               std::span<const int64_t> seqs);

  // ---- Settle (SPEC §6) ----------------------------------------------------
  // Each succeeds only for the current token of a live lease (locked_until >
  // now); LockLost otherwise.
  Status Complete(std::string_view queue, int64_t seq, const LockToken& token);
  Status Abandon(std::string_view queue, int64_t seq, const LockToken& token,
                 int64_t delay_ms = 0);
  Status Reject(std::string_view queue, int64_t seq, const LockToken& token,
                std::string_view reason, std::string_view description = {});
  Status Defer(std::string_view queue, int64_t seq, const LockToken& token);
  // Returns the new locked_until (never shorter than before).
  Result<int64_t> Renew(std::string_view queue, int64_t seq, const LockToken& token);
  // ≤ 512 items, one commit, one Status per item; a stale item fails alone.
  Result<std::vector<Status>> CompleteBatch(std::string_view queue,
                                            std::span<const SettleItem> items);
  Result<std::vector<RenewOutcome>> RenewBatch(std::string_view queue,
                                               std::span<const SettleItem> items);

  // ---- Inspection and DLQ (SPEC §6) ----------------------------------------
  Result<std::vector<Message>> Peek(std::string_view queue, const PeekOptions& options = {});
  Result<QueueStats> Stats(std::string_view queue);
  // Returns how many dead letters moved / were deleted.
  Result<int64_t> Redrive(std::string_view queue, const RedriveOptions& options = {});
  Result<int64_t> Purge(std::string_view queue, const PurgeOptions& options = {});

  // ---- Maintenance (SPEC §1) -----------------------------------------------
  // One pass over every queue: due schedules, expired leases, TTL, DLQ
  // retention. Deterministic under a ManualClock.
  Result<MaintenanceReport> RunMaintenance();

  // ---- Lifecycle (SPEC §9) -------------------------------------------------
  // Idempotent. Returns once no call is in flight and the store is released.
  Status Close();

  StoreCapabilities capabilities() const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mqlite

#endif  // MQLITE_ENGINE_H_
