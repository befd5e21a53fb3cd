// The engine's public methods (mqlite/engine.h) and the operations they share
// with TxContext (engine_impl.h). Group commit, maintenance, Tx and the
// idempotency keys live in their own files; argument rules in validate.cc.
#include "mqlite/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "codec.h"
#include "engine_impl.h"
#include "keys.h"
#include "sha256.h"
#include "token.h"
#include "validate.h"

namespace mqlite {

using internal::CheckCancelled;
using internal::QueueLabel;
using internal::ToRunOptions;
using SteadyClock = std::chrono::steady_clock;

namespace internal {
thread_local const Engine::Impl* tl_tx_engine = nullptr;
}  // namespace internal

namespace {
std::string Seq(int64_t seq) { return internal::SeqLabel(seq); }

// Ends a woken waiter's claim round (Engine::Impl::ClaimRound) however the
// claim ended: records the wake-up counters it began with and whether it
// drained the queue (false unless set: a failed claim proves nothing), and
// wakes the waiters queued behind it.
struct ClaimRoundEnd {
  ClaimRoundEnd(Engine::Impl* impl, int64_t queue_id, uint64_t gen, uint64_t feed)
      : impl(impl), queue_id(queue_id), gen(gen), feed(feed) {}
  ClaimRoundEnd(const ClaimRoundEnd&) = delete;
  ClaimRoundEnd& operator=(const ClaimRoundEnd&) = delete;
  ~ClaimRoundEnd() {
    std::lock_guard<std::mutex> l(impl->mu);
    Engine::Impl::ClaimRound& r = impl->claim_rounds[queue_id];
    r.running = false;
    r.drained = drained;
    r.gen = gen;
    r.feed = feed;
    impl->cv.notify_all();
  }
  Engine::Impl* const impl;
  const int64_t queue_id;
  const uint64_t gen, feed;
  bool drained = false;
};
}  // namespace

// ---- Operations shared by the engine's methods and TxContext ----------------------------

Status Engine::Impl::DoSend(StoreTxn& txn, std::string_view queue, std::span<const OutgoingMessage> messages,
              bool single, std::vector<SendOutcome>* out, bool* wrote) {
  *wrote = false;
  MQLITE_RETURN_IF_ERROR(internal::ValidateSendBatch(queue, messages.size(), options));
  MQLITE_ASSIGN_OR_RETURN(QueueRecord q, LookupQueue(txn, queue));
  const int64_t now = Now();
  std::vector<EnqueueItem> items(messages.size());
  // Every message is validated before anything is written.
  for (size_t i = 0; i < messages.size(); ++i) {
    MQLITE_RETURN_IF_ERROR(
        internal::BuildEnqueueItem(q, options, messages[i], i, now, &items[i]));
  }
  out->assign(messages.size(), SendOutcome{});
  if (q.config.dedup_window_ms <= 0) {
    // The body's only write: the store may commit with it.
    if (internal::GroupCommit::RunsAlone()) txn.FinalCallFollows();
    MQLITE_ASSIGN_OR_RETURN(std::vector<int64_t> seqs, txn.Enqueue(q, items));
    for (size_t i = 0; i < seqs.size(); ++i) (*out)[i].seq = seqs[i];
    *wrote = true;
    return Status::OK();
  }
  // Dedup: classify each slot, insert the new ones in one Enqueue, then
  // record their keys in the same commit.
  struct NewKey {
    size_t slot;
    std::string hash;
  };
  std::map<std::string, NewKey> batch;        // key → first slot with it
  std::vector<std::pair<size_t, size_t>> refs;  // slot → earlier slot
  std::vector<size_t> fresh;
  std::vector<std::string> keys(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    keys[i] = internal::DedupKey(messages[i]);
    std::string hash = internal::Sha256::HashBytes(messages[i].body);
    int64_t original = 0;
    bool same = false, known = false;
    if (auto it = batch.find(keys[i]); it != batch.end()) {
      known = true;
      same = it->second.hash == hash;
      if (same) refs.emplace_back(i, it->second.slot);
    } else {
      MQLITE_ASSIGN_OR_RETURN(std::optional<DedupRecord> rec, txn.FindDedup(q, keys[i], now));
      if (rec) {
        known = true;
        same = rec->body_hash == hash;
        original = rec->seq;
      }
    }
    if (!known) {
      batch.emplace(keys[i], NewKey{i, std::move(hash)});
      fresh.push_back(i);
      continue;
    }
    if (same) {
      (*out)[i].seq = original;  // 0 for a ref, resolved below
      (*out)[i].duplicate = true;
      continue;
    }
    std::string what = messages[i].message_id && !messages[i].message_id->empty()
                           ? "message_id '" + *messages[i].message_id + "'"
                           : std::string("body hash");
    Status conflict = Status::DedupConflict(
        QueueLabel(queue) + ": message " + std::to_string(i) + ": " + what +
        " was already sent within the dedup window with a different body" +
        (original ? " (original " + Seq(original) + ")"
                  : " (earlier in this batch, message " +
                        std::to_string(batch.at(keys[i]).slot) + ")"));
    if (single) return conflict;
    (*out)[i].status = std::move(conflict);  // SPEC §4: the slot fails alone
  }
  if (!fresh.empty()) {
    std::vector<EnqueueItem> to_insert;
    to_insert.reserve(fresh.size());
    for (size_t i : fresh) to_insert.push_back(items[i]);
    MQLITE_ASSIGN_OR_RETURN(std::vector<int64_t> inserted, txn.Enqueue(q, to_insert));
    for (size_t k = 0; k < fresh.size(); ++k) {
      size_t i = fresh[k];
      (*out)[i].seq = inserted[k];
      DedupRecord rec{inserted[k], batch.at(keys[i]).hash, now + q.config.dedup_window_ms};
      MQLITE_RETURN_IF_ERROR(txn.PutDedup(q, keys[i], rec));
    }
    *wrote = true;
  }
  for (auto [slot, earlier] : refs) (*out)[slot].seq = (*out)[earlier].seq;
  return Status::OK();
}

void Engine::Impl::PrepareSettle(const QueueRecord& q, SettleRequest* req) const {
  req->renew_until = req->now + q.config.lock_duration_ms;
  if (req->op != SettleOp::kRenew) {  // Renew never replays; the store records it (store.h)
    req->receipt_key = internal::ReceiptKey(q.id, *req);
    req->receipt_expires_at = req->now + options.receipt_retention_ms;
  }
}

Result<SettleResult> Engine::Impl::FinishSettle(StoreTxn& txn, const QueueRecord& q,
                                                const SettleRequest& req,
                                                Result<SettleResult> stored) {
  if (stored) return stored;
  if (stored.error().code() != StatusCode::kLockLost) return stored.error();
  if (!req.receipt_key.empty()) {
    MQLITE_ASSIGN_OR_RETURN(bool live, txn.FindReceipt(req.receipt_key, req.now));
    if (live) return SettleResult{};  // replayed: the original effect stands
  }
  return LockLostError(q.config.name, req.seq, req.op);
}

Result<SettleResult> Engine::Impl::DoSettle(StoreTxn& txn, const QueueRecord& q, SettleRequest req,
                                            bool final_call) {
  PrepareSettle(q, &req);
  // The settle is the body's last write (a LockLost only reads the
  // receipt after it): the store may commit with it.
  if (final_call) txn.FinalCallFollows();
  return FinishSettle(txn, q, req, txn.Settle(q, req));
}

Result<SettleResult> Engine::Impl::SettleInTxn(StoreTxn& txn, std::string_view queue, SettleRequest req,
                                               bool final_call) {
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  MQLITE_RETURN_IF_ERROR(internal::ValidateToken(queue, req.seq, req.token));
  MQLITE_ASSIGN_OR_RETURN(QueueRecord q, LookupQueue(txn, queue));
  req.now = Now();
  return DoSettle(txn, q, std::move(req), final_call);
}

Result<SettleResult> Engine::Impl::SettleOne(std::string_view queue, SettleRequest req,
                               const CallOptions& call) {
  SettleResult result;
  MQLITE_RETURN_IF_ERROR(Write(call, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(result,
                            SettleInTxn(txn, queue, req, internal::GroupCommit::RunsAlone()));
    return Status::OK();
  }));
  if (req.op != SettleOp::kRenew && req.op != SettleOp::kDefer) Wake();
  return result;
}

Status Engine::Impl::SettleBatch(std::string_view queue, std::span<const SettleItem> items, SettleOp op,
                   const CallOptions& call, std::vector<Status>* statuses,
                   std::vector<int64_t>* locked_until) {
  MQLITE_RETURN_IF_ERROR(internal::ValidateSettleBatch(queue, items.size()));
  return Write(call, [&](StoreTxn& txn) -> Status {
    statuses->assign(items.size(), Status::OK());
    locked_until->assign(items.size(), 0);
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, LookupQueue(txn, queue));
    const int64_t now = Now();
    // The valid items, settled in one store call (StoreTxn::SettleMany).
    std::vector<SettleRequest> reqs;
    std::vector<size_t> slot;
    reqs.reserve(items.size());
    slot.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      Status v = internal::ValidateToken(queue, items[i].seq, items[i].token);
      if (!v.ok()) {
        (*statuses)[i] = v;
        continue;
      }
      SettleRequest r = internal::MakeSettle(op, items[i].seq, items[i].token);
      r.now = now;
      PrepareSettle(q, &r);
      reqs.push_back(std::move(r));
      slot.push_back(i);
    }
    std::vector<Result<SettleResult>> stored;
    MQLITE_RETURN_IF_ERROR(txn.SettleMany(q, reqs, &stored));
    if (stored.size() != reqs.size()) {
      return Status::Internal("SettleMany answered " + std::to_string(stored.size()) + " of " +
                              std::to_string(reqs.size()) + " requests");
    }
    for (size_t k = 0; k < reqs.size(); ++k) {
      auto res = FinishSettle(txn, q, reqs[k], std::move(stored[k]));
      if (!res && res.error().code() != StatusCode::kLockLost) return res.error();
      (*statuses)[slot[k]] = res.status();
      if (res) (*locked_until)[slot[k]] = res->locked_until;
    }
    return Status::OK();
  });
}

// ---- Engine -------------------------------------------------------------------------

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() { (void)Close(); }

Result<std::unique_ptr<Engine>> Engine::Open(std::unique_ptr<Store> store,
                                             EngineOptions options) {
  if (!store) return Status::InvalidArgument("Engine::Open: store is null");
  MQLITE_RETURN_IF_ERROR(internal::ValidateEngineOptions(options));
  auto impl = std::make_unique<Impl>();
  impl->store = std::move(store);
  impl->options = options;
  impl->clock = options.clock ? options.clock : SystemClock();
  impl->caps = impl->store->Capabilities();
  Impl* i = impl.get();
  // spec.md §9: engines sharing a store agree on the retention defaults.
  // First, so that a refused engine has written nothing.
  if (i->caps.engine_registry && !i->caps.read_only) {
    auto reg = i->store->RegisterEngine(internal::EngineDefaultsOf(options));
    if (reg) {
      i->registration = std::move(*reg);
    } else if (reg.error().code() != StatusCode::kUnimplemented) {
      return reg.error().WithContext("Engine::Open");
    }
  }
  i->writer = std::make_unique<internal::GroupCommit>(
      i->store.get(), options.group_commit_max, i->caps.write_concurrency,
      /*late_join=*/i->caps.write_concurrency == 1 && !i->caps.commits_with_final_call);
  i->maintainer = std::make_unique<internal::Maintainer>(
      i->store.get(), i->writer.get(), &i->options, i->caps.maintenance_lock,
      [i] { return i->Now(); }, [i] { i->Wake(); });

  // SPEC §7.1: an exclusive store has no other live engine, so every locked
  // row is an orphan of a dead process. A shared store reclaims only expired
  // leases, which ordinary maintenance does. In chunks of maintenance_batch,
  // one transaction each, so no body grows with the backlog.
  // A read-only open (StoreCapabilities::read_only) inspects data another
  // process may own: its locks are live leases, not orphans.
  if (i->caps.exclusive && !i->caps.read_only) {
    std::vector<QueueRecord> queues;
    Status s = i->Read(CallOptions{}, [&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(queues, txn.ListQueues());
      return Status::OK();
    });
    const int64_t chunk = options.maintenance_batch;
    for (size_t k = 0; s.ok() && k < queues.size();) {
      int64_t reclaimed = 0;
      s = i->Write(CallOptions{}, [&](StoreTxn& txn) -> Status {
        MQLITE_ASSIGN_OR_RETURN(reclaimed,
                                txn.ReclaimLocks(queues[k], i->Now(), /*all_locked=*/true, chunk));
        return Status::OK();
      });
      if (reclaimed < chunk) ++k;  // this queue is done
    }
    if (!s.ok()) return s.WithContext("recovery at open");
  }
  if (i->caps.change_feed) {  // spec.md §9: wake long-polls on any engine's commit
    MQLITE_ASSIGN_OR_RETURN(i->feed,
                            i->store->Subscribe([i](int64_t queue_id) { i->WakeQueue(queue_id); }));
  }
  if (options.background_maintenance && !i->caps.read_only) i->maintainer->Start();
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Status Engine::Close() {
  Impl* i = impl_.get();
  if (internal::tl_tx_engine == i) {
    return Status::InvalidArgument("Close called inside Tx on the same engine");
  }
  {
    std::unique_lock<std::mutex> l(i->mu);
    if (i->closed.load()) {
      i->cv.wait(l, [&] { return i->close_done; });
      return Status::OK();
    }
    i->closed.store(true);
    i->cv.notify_all();  // long-poll waiters
  }
  i->maintainer->Stop();  // waits for a pass in progress
  {
    std::unique_lock<std::mutex> l(i->mu);
    i->cv.wait(l, [&] { return i->inflight.load() == 0; });
  }
  i->feed.reset();          // no more wake-ups from the store
  i->registration.reset();  // other engines may now use other defaults (spec.md §9)
  i->store.reset();         // releases an embedded store's file lock
  std::lock_guard<std::mutex> l(i->mu);
  i->close_done = true;
  i->cv.notify_all();
  return Status::OK();
}

StoreCapabilities Engine::capabilities() const { return impl_->caps; }

// ---- Queues -------------------------------------------------------------------------

Result<QueueConfig> Engine::CreateQueue(const QueueConfig& config, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "CreateQueue");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueConfig(config));
  QueueConfig out;
  MQLITE_RETURN_IF_ERROR(impl_->Write(call, [&](StoreTxn& txn) -> Status {
    auto existing = txn.GetQueue(config.name);
    if (existing) {  // create-if-absent: a stored config is never changed here
      out = existing->config;
      return Status::OK();
    }
    if (existing.error().code() != StatusCode::kQueueNotFound) return existing.error();
    bool created = false;
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, txn.UpsertQueue(config, impl_->Now(), &created));
    out = q.config;
    return Status::OK();
  }));
  return out;
}

Result<QueueConfig> Engine::UpdateQueue(const QueueConfig& config, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "UpdateQueue");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueConfig(config));
  QueueConfig out;
  MQLITE_RETURN_IF_ERROR(impl_->OnQueue(
      TxnKind::kWrite, call, config.name, [&](StoreTxn& txn, const QueueRecord&) -> Status {
        bool created = false;
        MQLITE_ASSIGN_OR_RETURN(QueueRecord q, txn.UpsertQueue(config, impl_->Now(), &created));
        out = q.config;
        return Status::OK();
      }));
  impl_->Wake();  // a longer max_delivery_count or a changed ordering may free messages
  return out;
}

Result<QueueConfig> Engine::GetQueue(std::string_view name, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "GetQueue");
  MQLITE_RETURN_IF_ERROR(guard.status());
  QueueConfig out;
  MQLITE_RETURN_IF_ERROR(
      impl_->OnQueue(TxnKind::kRead, call, name, [&](StoreTxn&, const QueueRecord& q) {
        out = q.config;
        return Status::OK();
      }));
  return out;
}

Result<std::vector<QueueConfig>> Engine::ListQueues(const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "ListQueues");
  MQLITE_RETURN_IF_ERROR(guard.status());
  std::vector<QueueConfig> out;
  MQLITE_RETURN_IF_ERROR(impl_->Read(call, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(std::vector<QueueRecord> qs, txn.ListQueues());
    out.clear();
    for (auto& q : qs) out.push_back(std::move(q.config));
    return Status::OK();
  }));
  return out;
}

Status Engine::DeleteQueue(std::string_view name, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "DeleteQueue");
  MQLITE_RETURN_IF_ERROR(guard.status());
  return impl_->OnQueue(TxnKind::kWrite, call, name,
                        [&](StoreTxn& txn, const QueueRecord& q) { return txn.DeleteQueue(q); });
}

// ---- Send -----------------------------------------------------------------------------

Result<int64_t> Engine::Send(std::string_view queue, const OutgoingMessage& message,
                             const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Send");
  MQLITE_RETURN_IF_ERROR(guard.status());
  std::vector<SendOutcome> seqs;
  bool wrote = false;
  MQLITE_RETURN_IF_ERROR(impl_->Write(call, [&](StoreTxn& txn) -> Status {
    return impl_->DoSend(txn, queue, std::span<const OutgoingMessage>(&message, 1),
                         /*single=*/true, &seqs, &wrote);
  }));
  if (wrote) impl_->Wake();
  return seqs.at(0).seq;
}

Result<std::vector<SendOutcome>> Engine::SendBatch(std::string_view queue,
                                                   std::span<const OutgoingMessage> messages,
                                                   const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "SendBatch");
  MQLITE_RETURN_IF_ERROR(guard.status());
  std::vector<SendOutcome> seqs;
  bool wrote = false;
  MQLITE_RETURN_IF_ERROR(impl_->Write(call, [&](StoreTxn& txn) -> Status {
    return impl_->DoSend(txn, queue, messages, /*single=*/false, &seqs, &wrote);
  }));
  if (wrote) impl_->Wake();
  return seqs;
}

Status Engine::Cancel(std::string_view queue, int64_t seq, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Cancel");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));  // name before seq, as elsewhere
  MQLITE_RETURN_IF_ERROR(internal::ValidateSeq(queue, seq));
  Status s = impl_->OnQueue(TxnKind::kWrite, call, queue, [&](StoreTxn& txn, const QueueRecord& q) {
    return txn.CancelScheduled(q, seq);
  });
  if (s.code() == StatusCode::kNotFound) {
    return Status::NotFound(QueueLabel(queue) + ": " + Seq(seq) +
                            " is not a scheduled, never-delivered message");
  }
  if (s.ok()) impl_->Wake();  // a cancelled group head unblocks its group
  return s;
}

// ---- Receive ----------------------------------------------------------------------------

Result<std::vector<Message>> Engine::Receive(std::string_view queue,
                                             const ReceiveOptions& options,
                                             const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Receive");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateReceive(queue, options));
  std::vector<LockToken> tokens;
  if (options.mode == ReceiveMode::kPeekLock) {
    MQLITE_RETURN_IF_ERROR(
        internal::NewTokens(static_cast<size_t>(options.max_messages), &tokens));
  }
  const auto wait_end = SteadyClock::now() + std::chrono::milliseconds(options.wait_ms);
  // A waiter also re-checks every poll_interval_ms, so messages that become
  // eligible by time alone (a due schedule, an expired lease) are seen
  // without a send. Sends and settles wake it at once: this engine's own
  // through Wake(); with a change feed, any engine's, per queue.
  const auto recheck = std::chrono::milliseconds(impl_->options.poll_interval_ms);
  // The time-driven transitions a Receive applies before claiming are bounded
  // by what it may return, not by the maintenance batch: a Receive is a
  // latency path; background maintenance does the bulk (spec.md §6).
  const int64_t step = std::max<int64_t>(16, options.max_messages);
  int64_t queue_id = 0;
  bool woken = false;                      // this claim follows a wait
  uint64_t woken_gen = 0, woken_feed = 0;  // the wake-up counters when it ended
  // A feed that reports only watched queues (spec.md §9): after sleeping
  // feed_watch_after_ms without a wake-up, the waiter watches its queue for
  // the rest of the call and claims again before it sleeps on the feed.
  const int64_t watch_after = impl_->feed ? impl_->caps.feed_watch_after_ms : -1;
  std::unique_ptr<FeedWatch> watch;
  bool watched = false;   // Watch was called (it may have failed)
  bool fresh = false;     // the next claim must begin after the watch
  bool sleep_on = false;  // the watch covers the last claim: wait again, no claim
  auto claim_began = SteadyClock::now();
  uint64_t last_gen = 0, last_feed = 0;  // the counters the last claim began at
  for (;;) {
    // The wake-up counters this claim began at (a wait after it ends on any
    // change since).
    uint64_t gen = 0, feed_seq = 0;
    // After a wake-up, one claim per queue at a time (Impl::ClaimRound):
    // wait for a woken neighbour's claim, then claim only if it did not
    // already show that nothing came since the wake-up.
    bool skip = false;
    std::optional<ClaimRoundEnd> round;
    if (sleep_on) {
      sleep_on = false;
      skip = true;
      gen = last_gen;
      feed_seq = last_feed;
    } else if (!woken || options.attempt_id || fresh) {
      fresh = false;
      gen = impl_->WakeGen();
      feed_seq = impl_->FeedSeq();
    } else {
      std::unique_lock<std::mutex> l(impl_->mu);
      Impl::ClaimRound& r = impl_->claim_rounds[queue_id];
      impl_->cv.wait_until(l, call.stop_token, std::min(wait_end, call.deadline),
                           [&] { return impl_->closed.load() || !r.running; });
      if (impl_->closed.load()) {
        return Status::Closed(QueueLabel(queue) + ": engine closed during Receive");
      }
      if (r.running) {  // the wait, the deadline or the stop token ended first
        l.unlock();
        MQLITE_RETURN_IF_ERROR(CheckCancelled(call, "Receive"));
        return std::vector<Message>{};
      }
      if (r.drained && r.gen >= woken_gen && r.feed >= woken_feed) {
        skip = true;  // wait again for what came after that claim began
        gen = r.gen;
        feed_seq = r.feed;
      } else {
        r.running = true;
        gen = impl_->wake_gen.load();
        feed_seq = impl_->feed_seq;
        round.emplace(impl_.get(), queue_id, gen, feed_seq);
      }
    }
    std::vector<Message> got;
    bool replayed = false;
    if (!skip) {
      claim_began = SteadyClock::now();
      last_gen = gen;
      last_feed = feed_seq;
      MQLITE_RETURN_IF_ERROR(impl_->Write(call, [&](StoreTxn& txn) -> Status {
        MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
        queue_id = q.id;
        const int64_t now = impl_->Now();
        if (options.attempt_id) {  // SPEC §7.3
          MQLITE_ASSIGN_OR_RETURN(std::optional<AttemptRecord> rec,
                                  txn.FindAttempt(*options.attempt_id, now));
          if (rec) {
            if (rec->queue_id != q.id || rec->mode != options.mode) {
              return Status::InvalidArgument(
                  QueueLabel(queue) + ": attempt_id '" + *options.attempt_id +
                  "' was used earlier with another queue or receive mode");
            }
            MQLITE_ASSIGN_OR_RETURN(got, internal::DecodeMessages(rec->payload));
            replayed = true;
            return Status::OK();
          }
        }
        // Apply this queue's time-driven transitions first, so a Receive sees
        // what maintenance would have made eligible at `now`.
        MQLITE_RETURN_IF_ERROR(txn.PrepareClaim(q, now, step));
        ClaimRequest req;
        req.now = now;
        req.max_messages = options.max_messages;
        req.mode = options.mode;
        req.locked_until = now + q.config.lock_duration_ms;
        req.tokens = tokens;
        // Without an attempt record to write, the claim is the body's last
        // write: the store may commit with it.
        if (!options.attempt_id && internal::GroupCommit::RunsAlone()) txn.FinalCallFollows();
        MQLITE_ASSIGN_OR_RETURN(got, txn.Claim(q, req));
        if (options.attempt_id && !got.empty()) {
          AttemptRecord rec{q.id, options.mode, internal::EncodeMessages(got),
                            now + impl_->options.attempt_retention_ms};
          MQLITE_RETURN_IF_ERROR(txn.PutAttempt(*options.attempt_id, rec));
        }
        return Status::OK();
      }));
      if (round) round->drained = !replayed && got.size() < static_cast<size_t>(options.max_messages);
      round.reset();
      if (!got.empty() || replayed || options.wait_ms == 0) return got;
    }
    std::unique_lock<std::mutex> l(impl_->mu);
    if (SteadyClock::now() >= wait_end) return got;
    impl_->waiters.fetch_add(1);
    auto until = std::min({wait_end, SteadyClock::now() + recheck, call.deadline});
    const bool may_watch = watch_after >= 0 && !watched && queue_id != 0;
    if (may_watch) {
      until = std::min(until, SteadyClock::now() + std::chrono::milliseconds(watch_after));
    }
    const bool changed = impl_->cv.wait_until(l, call.stop_token, until, [&] {
      return impl_->closed.load() || impl_->wake_gen.load() != gen ||
             impl_->QueueChangedSince(queue_id, feed_seq);
    });
    impl_->waiters.fetch_sub(1);
    if (impl_->closed.load()) {
      return Status::Closed(QueueLabel(queue) + ": engine closed during Receive");
    }
    if (may_watch && !changed && SteadyClock::now() < wait_end) {
      l.unlock();
      MQLITE_RETURN_IF_ERROR(CheckCancelled(call, "Receive"));
      watched = true;
      // A failed watch leaves the poll interval in charge, as a lost
      // listening session does.
      if (auto w = impl_->feed->Watch(queue_id, claim_began); w.ok()) watch = std::move(*w);
      if (watch && !watch->claim_again) {
        sleep_on = true;
      } else {
        fresh = true;
      }
      continue;
    }
    woken = true;
    woken_gen = impl_->wake_gen.load();
    woken_feed = impl_->feed_seq;
    l.unlock();
    MQLITE_RETURN_IF_ERROR(CheckCancelled(call, "Receive"));
  }
}

Result<std::vector<Message>> Engine::ReceiveDeferred(std::string_view queue,
                                                     std::span<const int64_t> seqs,
                                                     const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "ReceiveDeferred");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateDeferredSeqs(queue, seqs));
  std::vector<LockToken> tokens;
  MQLITE_RETURN_IF_ERROR(internal::NewTokens(seqs.size(), &tokens));
  std::vector<Message> out;
  std::string retired;  // what happened to deferred messages that could not be delivered
  MQLITE_RETURN_IF_ERROR(impl_->Write(call, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
    const int64_t now = impl_->Now();
    out.clear();
    retired.clear();
    // SPEC §7.4, §3: a deferred message past its TTL or out of deliveries is
    // retired as a claim would retire it, and the caller is told; the
    // retirement commits, and nothing else is locked (all or nothing).
    for (int64_t seq : seqs) {
      PeekOptions at;
      at.state = MessageState::kDeferred;
      at.from_seq = seq - 1;
      at.max_messages = 1;
      MQLITE_ASSIGN_OR_RETURN(std::vector<Message> found, txn.Peek(q, at));
      if (found.empty() || found[0].seq != seq) {
        return Status::NotFound(QueueLabel(queue) + ": " + Seq(seq) +
                                " is not a deferred message");
      }
      const Message& m = found[0];
      std::string what;
      if (m.expires_at > 0 && m.expires_at <= now) {
        if (q.config.dead_letter_on_expire) {
          MQLITE_RETURN_IF_ERROR(
              txn.DeadLetterMessage(q, seq, kReasonTtlExpired, std::nullopt, now));
          what = "its TTL passed: dead-lettered (" + std::string(kReasonTtlExpired) + ")";
        } else {
          MQLITE_RETURN_IF_ERROR(txn.DeleteMessage(q, seq));
          what = "its TTL passed: deleted (dead_letter_on_expire is off)";
        }
      } else if (m.delivery_count >= q.config.max_delivery_count) {
        MQLITE_RETURN_IF_ERROR(
            txn.DeadLetterMessage(q, seq, kReasonMaxDelivery, std::nullopt, now));
        what = "it has used all " + std::to_string(q.config.max_delivery_count) +
               " deliveries: dead-lettered (" + std::string(kReasonMaxDelivery) + ")";
      }
      if (!what.empty()) retired += (retired.empty() ? "" : "; ") + Seq(seq) + ": " + what;
    }
    if (!retired.empty()) return Status::OK();  // commit the retirements only
    for (size_t i = 0; i < seqs.size(); ++i) {
      auto m = txn.ClaimDeferred(q, seqs[i], tokens[i], now, now + q.config.lock_duration_ms);
      if (!m) {
        if (m.error().code() == StatusCode::kNotFound) {
          return Status::NotFound(QueueLabel(queue) + ": " + std::string(m.error().message()));
        }
        return m.error();
      }
      out.push_back(std::move(*m));
    }
    return Status::OK();
  }));
  if (!retired.empty()) {
    impl_->Wake();  // a retired group head promotes the next member
    return Status::NotFound(QueueLabel(queue) + ": ReceiveDeferred locked nothing; " + retired);
  }
  return out;
}

// ---- Settle -------------------------------------------------------------------------------

Status Engine::Complete(std::string_view queue, int64_t seq, const LockToken& token,
                        const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Complete");
  MQLITE_RETURN_IF_ERROR(guard.status());
  SettleRequest r = internal::MakeSettle(SettleOp::kComplete, seq, token);
  return impl_->SettleOne(queue, std::move(r), call).status();
}

Status Engine::Abandon(std::string_view queue, int64_t seq, const LockToken& token,
                       int64_t delay_ms, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Abandon");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateAbandonDelay(queue, seq, delay_ms));
  SettleRequest r = internal::MakeSettle(SettleOp::kAbandon, seq, token);
  r.delay_ms = delay_ms;
  return impl_->SettleOne(queue, std::move(r), call).status();
}

Status Engine::Reject(std::string_view queue, int64_t seq, const LockToken& token,
                      std::string_view reason, std::string_view description,
                      const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Reject");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateDeadLetterReason(queue, seq, reason, description));
  SettleRequest r = internal::MakeSettle(SettleOp::kReject, seq, token);
  r.reason = std::string(reason);
  r.description = std::string(description);
  return impl_->SettleOne(queue, std::move(r), call).status();
}

Status Engine::Defer(std::string_view queue, int64_t seq, const LockToken& token,
                     const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Defer");
  MQLITE_RETURN_IF_ERROR(guard.status());
  SettleRequest r = internal::MakeSettle(SettleOp::kDefer, seq, token);
  return impl_->SettleOne(queue, std::move(r), call).status();
}

Result<int64_t> Engine::Renew(std::string_view queue, int64_t seq, const LockToken& token,
                              const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Renew");
  MQLITE_RETURN_IF_ERROR(guard.status());
  SettleRequest r = internal::MakeSettle(SettleOp::kRenew, seq, token);
  MQLITE_ASSIGN_OR_RETURN(SettleResult res, impl_->SettleOne(queue, std::move(r), call));
  return res.locked_until;
}

Result<std::vector<Status>> Engine::CompleteBatch(std::string_view queue,
                                                  std::span<const SettleItem> items,
                                                  const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "CompleteBatch");
  MQLITE_RETURN_IF_ERROR(guard.status());
  std::vector<Status> statuses;
  std::vector<int64_t> unused;
  MQLITE_RETURN_IF_ERROR(
      impl_->SettleBatch(queue, items, SettleOp::kComplete, call, &statuses, &unused));
  impl_->Wake();
  return statuses;
}

Result<std::vector<RenewOutcome>> Engine::RenewBatch(std::string_view queue,
                                                     std::span<const SettleItem> items,
                                                     const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "RenewBatch");
  MQLITE_RETURN_IF_ERROR(guard.status());
  std::vector<Status> statuses;
  std::vector<int64_t> until;
  MQLITE_RETURN_IF_ERROR(
      impl_->SettleBatch(queue, items, SettleOp::kRenew, call, &statuses, &until));
  std::vector<RenewOutcome> out(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    out[i].status = statuses[i];
    out[i].locked_until = statuses[i].ok() ? until[i] : 0;
  }
  return out;
}

// ---- Inspection and DLQ -------------------------------------------------------------------------

Result<std::vector<Message>> Engine::Peek(std::string_view queue, const PeekOptions& options,
                                          const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Peek");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidatePeek(queue, options));
  std::vector<Message> out;
  MQLITE_RETURN_IF_ERROR(impl_->OnQueue(TxnKind::kRead, call, queue,
                                        [&](StoreTxn& txn, const QueueRecord& q) -> Status {
                                          MQLITE_ASSIGN_OR_RETURN(out, txn.Peek(q, options));
                                          return Status::OK();
                                        }));
  // A lock token is a capability to settle: only the claimer gets it.
  for (Message& m : out) m.lock_token = LockToken{};
  return out;
}

Result<QueueStats> Engine::Stats(std::string_view queue, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Stats");
  MQLITE_RETURN_IF_ERROR(guard.status());
  QueueStats out;
  MQLITE_RETURN_IF_ERROR(impl_->OnQueue(TxnKind::kRead, call, queue,
                                        [&](StoreTxn& txn, const QueueRecord& q) -> Status {
                                          MQLITE_ASSIGN_OR_RETURN(out, txn.Stats(q, impl_->Now()));
                                          return Status::OK();
                                        }));
  return out;
}

Result<int64_t> Engine::Redrive(std::string_view queue, const RedriveOptions& options,
                                const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Redrive");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  std::string_view target = options.target_queue.empty() ? queue : options.target_queue;
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(target));
  MQLITE_RETURN_IF_ERROR(
      internal::ValidateDlqSelection(queue, "redrive", options.max_messages, options.older_than_ms));
  int64_t moved = 0;
  MQLITE_RETURN_IF_ERROR(impl_->Write(call, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, Impl::LookupQueue(txn, queue));
    auto t = Impl::LookupQueue(txn, target);
    if (!t) return t.error().WithContext("redrive target");
    MQLITE_ASSIGN_OR_RETURN(moved, txn.Redrive(q, *t, options, impl_->Now()));
    return Status::OK();
  }));
  if (moved > 0) impl_->Wake();
  return moved;
}

Result<int64_t> Engine::Purge(std::string_view queue, const PurgeOptions& options,
                              const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Purge");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  MQLITE_RETURN_IF_ERROR(
      internal::ValidateDlqSelection(queue, "purge", options.max_messages, options.older_than_ms));
  int64_t purged = 0;
  MQLITE_RETURN_IF_ERROR(impl_->OnQueue(
      TxnKind::kWrite, call, queue, [&](StoreTxn& txn, const QueueRecord& q) -> Status {
        MQLITE_ASSIGN_OR_RETURN(purged, txn.PurgeDeadLetters(q, options, impl_->Now()));
        return Status::OK();
      }));
  return purged;
}

// ---- Operator paths ---------------------------------------------------------------------------------

Status Engine::DeadLetterMessage(std::string_view queue, int64_t seq, std::string_view reason,
                                 std::string_view description, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "DeadLetterMessage");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  MQLITE_RETURN_IF_ERROR(internal::ValidateSeq(queue, seq));
  MQLITE_RETURN_IF_ERROR(internal::ValidateDeadLetterReason(queue, seq, reason, description));
  const std::optional<std::string> desc =
      description.empty() ? std::nullopt : std::optional<std::string>(description);
  Status s = impl_->OnQueue(TxnKind::kWrite, call, queue, [&](StoreTxn& txn, const QueueRecord& q) {
    return txn.DeadLetterMessage(q, seq, reason, desc, impl_->Now());
  });
  if (s.code() == StatusCode::kNotFound) {
    return Status::NotFound(QueueLabel(queue) + ": " + Seq(seq) +
                            " is not a live message of the queue (absent or already "
                            "dead-lettered)");
  }
  if (s.ok()) impl_->Wake();  // the next member of its group may now be claimable
  return s;
}

Status Engine::DeleteMessage(std::string_view queue, int64_t seq, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "DeleteMessage");
  MQLITE_RETURN_IF_ERROR(guard.status());
  MQLITE_RETURN_IF_ERROR(internal::ValidateQueueName(queue));
  MQLITE_RETURN_IF_ERROR(internal::ValidateSeq(queue, seq));
  Status s = impl_->OnQueue(TxnKind::kWrite, call, queue, [&](StoreTxn& txn, const QueueRecord& q) {
    return txn.DeleteMessage(q, seq);
  });
  if (s.code() == StatusCode::kNotFound) {
    return Status::NotFound(QueueLabel(queue) + ": " + Seq(seq) + " is not a message of the queue");
  }
  if (s.ok()) impl_->Wake();
  return s;
}

// ---- Maintenance ----------------------------------------------------------------------------------

Result<MaintenanceReport> Engine::RunMaintenance(const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "RunMaintenance");
  MQLITE_RETURN_IF_ERROR(guard.status());
  return impl_->maintainer->RunPass(impl_->options.maintenance_batch, call);
}

}  // namespace mqlite
