#include "group_commit.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "call.h"

namespace mqlite::internal {

struct GroupCommit::Request {
  enum class State { kQueued, kTaken, kDone };
  const std::function<Status(StoreTxn&)>* body;
  const CallOptions* call;
  // Guarded by mu_ while queued; once taken, only its own thread reads it,
  // and kDone is set only for a request its own thread led.
  State state = State::kQueued;
  Status status;
  // This caller's own wake-up, guarded by `m`: `woken` (its turn to lead, a
  // cancellation, or done) and `done` (another thread's group committed it;
  // `status` is its answer). A leader signals its members after releasing
  // mu_, and a member returns on `done` without taking mu_, so a commit's
  // wake-ups neither wait for the queue's lock nor hold it. The signaller
  // notifies with `m` held and the waiter needs `m` to see the signal, so
  // the request (on its caller's stack) outlives every access to it.
  std::mutex m;
  std::condition_variable cv;
  bool woken = false;
  bool done = false;

  Request(const std::function<Status(StoreTxn&)>* b, const CallOptions* c) : body(b), call(c) {}
};

namespace {

thread_local bool tl_alone = false;

// Runs `body` with RunsAlone() true on this thread.
Status RunAlone(const std::function<Status(StoreTxn&)>& body, StoreTxn& txn) {
  struct Scope {
    bool saved = std::exchange(tl_alone, true);
    ~Scope() { tl_alone = saved; }
  } scope;
  return body(txn);
}

}  // namespace

void GroupCommit::Signal(Request* r, bool done) {
  std::lock_guard<std::mutex> g(r->m);
  r->woken = true;
  r->done = r->done || done;
  r->cv.notify_one();
}

bool GroupCommit::RunsAlone() { return tl_alone; }

GroupCommit::GroupCommit(Store* store, int max_members, int max_leaders, bool late_join)
    : store_(store),
      max_members_(max_members),
      max_leaders_(std::max(1, max_leaders)),
      late_join_(late_join) {}

bool GroupCommit::RequestLocal(StatusCode c) {
  switch (c) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kGroupRequired:
    case StatusCode::kMessageTooLarge:
    case StatusCode::kQueueNotFound:
    case StatusCode::kNotFound:
    case StatusCode::kLockLost:
    case StatusCode::kDedupConflict:
      return true;
    default:
      return false;
  }
}

size_t GroupCommit::queued() const {
  std::lock_guard<std::mutex> l(mu_);
  return queue_.size();
}

// With mu_ held: a leader slot is free, so the oldest queued caller leads.
void GroupCommit::HandOffLocked() {
  if (leaders_ < max_leaders_ && !queue_.empty()) Signal(queue_.front(), /*done=*/false);
}

Status GroupCommit::Write(const CallOptions& call,
                          const std::function<Status(StoreTxn&)>& body) {
  if (max_members_ <= 1) {
    return store_->Run(TxnKind::kWrite, ToRunOptions(call),
                       [&](StoreTxn& txn) { return RunAlone(body, txn); });
  }
  using State = Request::State;
  Request req{&body, &call};
  std::stop_callback on_stop(call.stop_token, [&] { Signal(&req, /*done=*/false); });
  std::unique_lock<std::mutex> l(mu_);
  queue_.push_back(&req);
  for (;;) {
    if (req.state == State::kDone) return req.status;  // done in a group it led
    if (req.state == State::kQueued && leaders_ < max_leaders_) {
      ++leaders_;
      l.unlock();
      LeadGroup(call, &req);
      l.lock();
      // Leading on: callers that queued while this group ran would otherwise
      // wait for a new leader to be woken and scheduled, a delay every
      // group pays in full because groups run one after another. If this
      // caller's own request is done, it runs their groups itself, at most
      // kLeadOnGroups more, so its own return is delayed by a bounded amount.
      for (int more = 0; req.state == State::kDone && more < kLeadOnGroups && !queue_.empty();
           ++more) {
        l.unlock();
        LeadGroup(CallOptions{}, nullptr);
        l.lock();
      }
      --leaders_;
      HandOffLocked();
      continue;
    }
    // Queued behind a running group, or taken into one: wait for a signal.
    // Only a queued request gives up at its deadline; a taken one waits for
    // its commit.
    const bool queued = req.state == State::kQueued;
    l.unlock();
    {
      std::unique_lock<std::mutex> rl(req.m);
      auto woken = [&] { return req.woken; };
      if (queued && call.deadline != std::chrono::steady_clock::time_point::max()) {
        req.cv.wait_until(rl, call.deadline, woken);
      } else {
        req.cv.wait(rl, woken);
      }
      req.woken = false;
      if (req.done) return req.status;
    }
    l.lock();
    if (req.state != State::kQueued) continue;
    if (Status cancelled = CheckCancelled(call, "waiting for the writer"); !cancelled.ok()) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), &req));
      HandOffLocked();  // it may have been this caller's turn to lead
      return cancelled;
    }
  }
}

// Runs one group transaction, waiting for the store as `call` says. On
// return, every request it took is done; `leader` (the caller's own request,
// or null when leading on for others) may still be queued (not taken because
// the group was full), taken by another leader's group (several leaders), or
// done here (its transaction never started: cancelled, or BEGIN failed).
void GroupCommit::LeadGroup(const CallOptions& call, Request* leader) {
  using State = Request::State;
  std::vector<Request*> taken;
  bool started = false;
  bool member_failed = false;
  auto attempt = [&](bool isolate) {
    return store_->Run(TxnKind::kWrite, ToRunOptions(call), [&](StoreTxn& txn) {
      // Takes queued requests into the group, up to max_members_; how many.
      auto take = [&] {
        std::lock_guard<std::mutex> g(mu_);
        const size_t before = taken.size();
        while (!queue_.empty() && taken.size() < static_cast<size_t>(max_members_)) {
          queue_.front()->state = State::kTaken;
          taken.push_back(queue_.front());
          queue_.pop_front();
        }
        return taken.size() - before;
      };
      if (!started) {  // a rerun (RunOptions::rerunnable) keeps the same members
        started = true;
        take();
      }
      if (!late_join_ && taken.size() == 1) {  // alone: exactly a solo Run
        if (taken[0] != leader) {
          MQLITE_RETURN_IF_ERROR(CheckCancelled(*taken[0]->call, "waiting for the writer"));
        }
        return RunAlone(*taken[0]->body, txn);
      }
      member_failed = false;
      for (size_t i = 0;; ++i) {
        // Late joiners: callers that queued while the members ran would
        // wait for this commit anyway (no other group can run), so they
        // join it instead of paying a commit of their own after it.
        if (i == taken.size() && (isolate || !late_join_ || take() == 0)) break;
        Request* r = taken[i];
        r->status = CheckCancelled(*r->call, "waiting for the writer");
        if (!r->status.ok()) continue;  // ran nothing
        r->status = isolate ? txn.Savepoint(*r->body) : (*r->body)(txn);
        if (r->status.ok()) continue;
        if (!isolate || !RequestLocal(r->status.code())) {
          member_failed = !isolate;
          return r->status;
        }
      }
      return Status::OK();
    });
  };
  Status s = attempt(/*isolate=*/false);
  if (started && taken.size() > 1 && member_failed) s = attempt(/*isolate=*/true);
  if (!started) {
    // The transaction never began (the leader was cancelled while waiting for
    // the store, or BEGIN failed): that is the leader's answer alone; no one
    // was taken, and whoever is queued stays queued.
    if (leader == nullptr) return;
    std::lock_guard<std::mutex> g(mu_);
    // With several leaders another group may have taken the leader's own
    // request while this one waited for the store: that group answers it,
    // and it is no longer queued (erasing it would erase end()).
    if (leader->state != State::kQueued) return;
    queue_.erase(std::find(queue_.begin(), queue_.end(), leader));
    leader->status = s;
    leader->state = State::kDone;
    return;
  }
  if (taken.size() == 1) {
    taken[0]->status = s;
  } else if (!s.ok() && s.code() != StatusCode::kOutcomeUnknown) {
    // Rolled back as a whole (a member's store error, or a failed commit):
    // nothing committed, so each member runs alone and gets its own answer.
    for (Request* r : taken) {
      r->status = store_->Run(TxnKind::kWrite, ToRunOptions(*r->call),
                              [&](StoreTxn& txn) { return RunAlone(*r->body, txn); });
    }
  } else if (!s.ok()) {
    for (Request* r : taken) r->status = s;  // the commit's fate is every member's
  }
  for (Request* r : taken) {
    if (r == leader) {
      r->state = State::kDone;
    } else {
      Signal(r, /*done=*/true);
    }
  }
}

}  // namespace mqlite::internal
