#include "txn_runner.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <thread>

namespace mqlite::pg_internal {

namespace {

using Clock = std::chrono::steady_clock;

// Waits about 2 ms × attempt plus jitter before the next run, or less if
// the deadline comes first; false if the call was stopped or its deadline
// passed meanwhile.
bool PauseBeforeRetry(const RunOptions& options, int attempt) {
  thread_local std::minstd_rand rng{std::random_device{}()};
  const auto pause = std::chrono::microseconds(2000 * attempt + static_cast<int>(rng() % 2000));
  const auto until = std::min(options.deadline, Clock::now() + pause);
  while (Clock::now() < until) {
    if (options.stop.stop_requested()) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(),
                                                          std::chrono::milliseconds(1)));
  }
  return !options.stop.stop_requested() && Clock::now() < options.deadline;
}

}  // namespace

Status RunTransaction(PgPool& pool, const RunOptions& options, bool read_only,
                      std::string_view what, const std::function<Status(PgConn&)>& body,
                      TxnCounters* counters) {
  const std::string name(what);
  for (int attempt = 1;; ++attempt) {
    if (counters) counters->attempts = attempt;
    MQLITE_ASSIGN_OR_RETURN(PgPool::Lease lease, pool.Acquire(options, what));
    PgConn& c = *lease;
    c.MarkAttempt();
    const Status s = [&]() -> Status {
      if (read_only) return body(c);  // autocommit statements on a read-only session
      // BEGIN (and the lock timeout) go out with the body's first statement.
      MQLITE_RETURN_IF_ERROR(c.BeginWrite(options.deadline, name));
      MQLITE_RETURN_IF_ERROR(body(c));
      // The body's final call committed (StoreTxn::FinalCallFollows). A
      // write deferred after it could never commit: a bug, said so.
      if (c.ended()) {
        if (c.deferred() == 0) return Status::OK();
        return Status::Internal(name + ": the body deferred a write after its final call had "
                                       "committed; that write was not made");
      }
      if (c.txn_status() == PQTRANS_INERROR) {
        return Status::Internal(
            name + ": a statement in the transaction failed and the body carried on; the "
                   "transaction was rolled back and nothing committed");
      }
      return c.Commit();
    }();
    if (s.ok()) return s;
    // The failure's kind, if it was the connection's own (a body may also
    // fail on its own terms, which is never retried).
    // A body that saw a deadlock or serialization failure (perhaps inside a
    // savepoint, perhaps wrapped in context by the engine) and then failed
    // failed because of it: rerunning is what would have succeeded.
    Failure failure = s == c.last_error().status ? c.last_error().failure : Failure::kOther;
    if (failure == Failure::kOther && c.attempt_failure() != Failure::kNone) {
      failure = c.attempt_failure();
    }
    c.Rollback();  // drops what is deferred; ROLLBACK if a transaction is open
    if (c.broken() || failure == Failure::kLostAfter) lease.Discard();
    const bool again = options.rerunnable && attempt < kMaxAttempts &&
                       (failure == Failure::kRetryable || failure == Failure::kLostBefore);
    if (!again) return s;
    lease = PgPool::Lease();  // back to the pool (or closed) before pausing
    if (!PauseBeforeRetry(options, attempt)) {
      return Status::Cancelled(name + ": stopped or out of time before a retry, after: " +
                               std::string(s.message()) + "; nothing committed");
    }
  }
}

}  // namespace mqlite::pg_internal
