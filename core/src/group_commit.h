// Group commit (SPEC §9; EngineOptions::group_commit_max): concurrent write
// calls share store transactions, and each caller still sees exactly the
// result it would have seen alone.
//
// Leader/follower: a write call queues its request; while fewer than
// `max_leaders` groups are running (StoreCapabilities::write_concurrency: 1
// for an embedded store's single writer, more for a store that runs bodies
// concurrently), it leads one: inside a single store transaction it takes the
// queued requests (up to `max_members`, oldest first) and runs them in order.
// The others wait for their request to be done. With late_join (a single
// writer that gains nothing from a body running alone) a group also takes
// late joiners: callers that queued while its members ran join the same
// transaction before it commits (no other group could run before it
// anyway), in queue order, up to max_members in all. A leader whose own
// request is done leads on, up to kLeadOnGroups more groups, while callers
// are queued: that saves every group the wake-up of a new leader thread,
// which on a single-writer store is on the critical path.
// Requests are taken only once the leader's transaction has started, so a
// caller still queued can give up on cancellation having done nothing
// (SPEC §10). Each caller waits on a wake-up of its own, and a leader wakes
// its members after releasing the queue's lock, so the woken do not queue
// for that lock on their way out.
//
// Isolation of a failing member: the members first run back to back with no
// savepoints (a savepoint costs SQLite an allocation and a page-set scan per
// member). If any member fails, that attempt is rolled back whole and the
// group runs again with each member in its own Savepoint, so a request-local
// error (RequestLocal) fails that request alone. A store error there (or a
// failed commit) sends every member to run alone in a transaction of its own;
// OutcomeUnknown on the commit is every member's answer. A caller returns
// only after the commit that holds its writes.
//
// A body that has its transaction to itself (it led a group of one without
// late_join, grouping is off, or it runs alone after its group failed) sees
// RunsAlone() true and may tell the store its final call follows
// (StoreTxn::FinalCallFollows), so a networked store can send COMMIT with
// that call. With late_join a group's body never runs alone: a late joiner
// may still follow it.
//
// Thread-safety: Write may be called from any number of threads.
#ifndef MQLITE_CORE_SRC_GROUP_COMMIT_H_
#define MQLITE_CORE_SRC_GROUP_COMMIT_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <stop_token>

#include "mqlite/status.h"
#include "mqlite/store.h"
#include "mqlite/types.h"

namespace mqlite::internal {

class GroupCommit {
 public:
  // `store` is not owned and must outlive this object. max_members ≤ 1 turns
  // grouping off (every Write is a plain Store::Run); max_leaders ≥ 1.
  // late_join: groups take late joiners, and no body runs alone in a group
  // (the engine passes it for a single writer that ignores
  // StoreTxn::FinalCallFollows: StoreCapabilities::commits_with_final_call).
  GroupCommit(Store* store, int max_members, int max_leaders, bool late_join = false);
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Runs `body` in a write transaction, possibly together with other callers'
  // bodies. `body` must be re-runnable: it may run up to three times (solo
  // attempt inside the group, isolated in a savepoint, alone) and only the
  // last run's writes commit.
  Status Write(const CallOptions& call, const std::function<Status(StoreTxn&)>& body);

  // Errors that belong to one request: its savepoint rolled back cleanly and
  // the transaction is as it was before the request.
  static bool RequestLocal(StatusCode c);

  // Requests waiting to be taken into a group (for tests and metrics).
  size_t queued() const;

  // Groups a leader runs for callers queued behind it once its own request
  // is done ("leading on"), before it hands the lead to one of them.
  static constexpr int kLeadOnGroups = 4;

  // True while the calling thread runs a body passed to Write alone in its
  // store transaction (no other member, no savepoint): only then may that
  // body tell the store its final call follows (StoreTxn::FinalCallFollows).
  // False everywhere else, a Tx's body included.
  static bool RunsAlone();

 private:
  struct Request;
  void LeadGroup(const CallOptions& call, Request* leader);
  void HandOffLocked();
  static void Signal(Request* r, bool done);

  Store* const store_;
  const int max_members_;
  const int max_leaders_;
  const bool late_join_;
  mutable std::mutex mu_;  // guards queue_, leaders_ and every request's state
  std::deque<Request*> queue_;
  int leaders_ = 0;
};

}  // namespace mqlite::internal

#endif  // MQLITE_CORE_SRC_GROUP_COMMIT_H_
