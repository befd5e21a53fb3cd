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
  State state = State::kQueued;
  Status status;
  // This caller's own wake-up (done, or its turn to lead), so a commit wakes
  // exactly its members instead of every waiter. Notified only with mu_ held:
  // the request lives on its caller's stack.
  std::condition_variable_any cv;
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

bool GroupCommit::RunsAlone() { return tl_alone; }

GroupCommit::GroupCommit(Store* store, int max_members, int max_leaders)
    : store_(store), max_members_(max_members), max_leaders_(std::max(1, max_leaders)) {}

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
  if (leaders_ < max_leaders_ && !queue_.empty()) queue_.front()->cv.notify_one();
}

Status GroupCommit::Write(const CallOptions& call,
                          const std::function<Status(StoreTxn&)>& body) {
  if (max_members_ <= 1) {
    return store_->Run(TxnKind::kWrite, ToRunOptions(call),
                       [&](StoreTxn& txn) { return RunAlone(body, txn); });
  }
  using State = Request::State;
  Request req{&body, &call, State::kQueued, Status::OK(), {}};
  std::unique_lock<std::mutex> l(mu_);
  queue_.push_back(&req);
  for (;;) {
    if (req.state == State::kDone) return req.status;
    if (req.state == State::kTaken) {  // running in a group: wait for its commit
      req.cv.wait(l, [&] { return req.state == State::kDone; });
      continue;
    }
    if (leaders_ < max_leaders_) {
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
    auto ready = [&] { return req.state != State::kQueued || leaders_ < max_leaders_; };
    bool woke = call.deadline == std::chrono::steady_clock::time_point::max()
                    ? req.cv.wait(l, call.stop_token, ready)
                    : req.cv.wait_until(l, call.stop_token, call.deadline, ready);
    if (!woke && req.state == State::kQueued) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), &req));
      HandOffLocked();  // it may have been this caller's turn to lead
      return CheckCancelled(call, "waiting for the writer");
    }
  }
}

// Runs one group transaction, waiting for the store as `call` says. On
// return, every request it took is done; `leader` (the caller's own request,
// or null when leading on for others) may still be queued (not taken because
// the group was full, or the transaction never started), and if it was
// cancelled it is done too.
void GroupCommit::LeadGroup(const CallOptions& call, Request* leader) {
  using State = Request::State;
  std::vector<Request*> taken;
  bool started = false;
  bool member_failed = false;
  auto attempt = [&](bool isolate) {
    return store_->Run(TxnKind::kWrite, ToRunOptions(call), [&](StoreTxn& txn) {
      if (!started) {  // a rerun (RunOptions::rerunnable) keeps the same members
        started = true;
        std::lock_guard<std::mutex> g(mu_);
        while (!queue_.empty() && taken.size() < static_cast<size_t>(max_members_)) {
          queue_.front()->state = State::kTaken;
          taken.push_back(queue_.front());
          queue_.pop_front();
        }
      }
      if (taken.size() == 1) {  // alone: exactly a solo Run
        if (taken[0] != leader) {
          MQLITE_RETURN_IF_ERROR(CheckCancelled(*taken[0]->call, "waiting for the writer"));
        }
        return RunAlone(*taken[0]->body, txn);
      }
      member_failed = false;
      for (Request* r : taken) {
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
  std::lock_guard<std::mutex> g(mu_);
  for (Request* r : taken) {
    r->state = State::kDone;
    if (r != leader) r->cv.notify_one();
  }
}

}  // namespace mqlite::internal
