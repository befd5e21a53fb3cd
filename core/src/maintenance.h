// Background maintenance (SPEC §1, §3, §6, §7.2–§7.4): one pass over every
// queue — due schedules, lapsed leases, TTL, DLQ retention — then expired
// idempotency records and space reclaim. Callable directly
// (Engine::RunMaintenance) so tests are deterministic, and run by its own
// thread every EngineOptions::maintenance_interval_ms when the application
// wants it.
//
// Owns: the maintenance thread and its sleep. Every write goes through the
// engine's GroupCommit, one short transaction per queue, so the writer stays
// available and a failed pass loses only its own uncommitted queue. On a
// store with a maintenance lock (spec.md §9) each queue's transaction runs
// under that queue's try-lock, and a queue another engine holds is skipped
// (MaintenanceReport::queues_skipped).
#ifndef MQLITE_CORE_SRC_MAINTENANCE_H_
#define MQLITE_CORE_SRC_MAINTENANCE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "group_commit.h"
#include "mqlite/engine.h"
#include "mqlite/status.h"
#include "mqlite/store.h"
#include "mqlite/types.h"

namespace mqlite::internal {

class Maintainer {
 public:
  // None of the pointers is owned; all must outlive this object.
  // `lock_queues`: take Store::TryLockMaintenance per queue
  // (StoreCapabilities::maintenance_lock). `now` reads the engine's
  // (saturated) clock; `wake` tells long-poll waiters that messages may have
  // become eligible.
  Maintainer(Store* store, GroupCommit* writer, const EngineOptions* options, bool lock_queues,
             std::function<int64_t()> now, std::function<void()> wake);
  ~Maintainer();  // Stop()s
  Maintainer(const Maintainer&) = delete;
  Maintainer& operator=(const Maintainer&) = delete;

  // One pass; each step touches at most `limit` messages per queue
  // (MaintenanceReport::more says a step hit it).
  Result<MaintenanceReport> RunPass(int64_t limit, const CallOptions& call);

  // Starts the background thread (once). Stop() wakes it, waits for a pass in
  // progress to finish, and joins it; idempotent.
  void Start();
  void Stop();

 private:
  void Loop();

  Store* const store_;
  GroupCommit* const writer_;
  const EngineOptions* const options_;
  const bool lock_queues_;
  const std::function<int64_t()> now_;
  const std::function<void()> wake_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace mqlite::internal

#endif  // MQLITE_CORE_SRC_MAINTENANCE_H_
