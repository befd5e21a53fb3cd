// mqlite::Clock: the only source of "now" (SPEC §1).
//
// The engine never reads the wall clock directly; it asks a Clock. Every time a
// store compares against "now" it uses the value the engine passed in. All times
// are integer milliseconds since the Unix epoch, UTC.
//
// Thread-safety: NowMs() may be called from any thread concurrently.
#ifndef MQLITE_CLOCK_H_
#define MQLITE_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace mqlite {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch, UTC.
  virtual int64_t NowMs() = 0;
};

// The process-wide system clock (std::chrono::system_clock). Never null; not
// owned by the caller.
Clock* SystemClock();

// A clock that moves only when told to, for deterministic tests: leases,
// schedules and TTLs are driven by Set/Advance instead of sleeps. Note that
// Receive's long-poll `wait` is still measured in real time.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}
  int64_t NowMs() override { return now_.load(std::memory_order_acquire); }
  void Set(int64_t ms) { now_.store(ms, std::memory_order_release); }
  void Advance(int64_t delta_ms) { now_.fetch_add(delta_ms, std::memory_order_acq_rel); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace mqlite

#endif  // MQLITE_CLOCK_H_
