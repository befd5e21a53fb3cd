// The in-memory store. Layout: layout.h; rollback: undo_log.h; design and
// limits: stores/memory/README.md.
//
// Concurrency: Run admits one writer or many readers at a time (a reader /
// writer gate on a condition_variable_any, so waiting honours the caller's
// stop token and deadline). A read transaction refuses every mutation.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "layout.h"
#include "mqlite/change_feed.h"
#include "mqlite/engine.h"
#include "mqlite/memory.h"
#include "mqlite/store_util.h"
#include "undo_log.h"

namespace mqlite {

namespace {
constexpr char kHandleType[] = "mqlite::MemoryTxn";
}  // namespace

std::shared_ptr<MemoryDatabase> NewMemoryDatabase() { return std::make_shared<MemoryDatabase>(); }

Result<MemoryTxn*> MemoryHandle(TxContext& tx) {
  return NativeHandleAs<MemoryTxn>(tx, kHandleType, "MemoryHandle");
}

namespace memory_internal {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

int S(MessageState s) { return static_cast<int>(s); }

// Index keys of a row; nullopt = not in that index.
std::optional<Key3> ClaimKey(int64_t seq, const Row& r) {
  if (!InClaimIndex(r.state, r.is_head)) return std::nullopt;
  return Key3{r.queue_id, -static_cast<int64_t>(r.priority), seq};
}
std::optional<Key3> ClaimAgeKey(int64_t seq, const Row& r) {
  if (!InClaimIndex(r.state, r.is_head)) return std::nullopt;
  return Key3{r.queue_id, r.enqueued_at, seq};
}
std::optional<GroupEntry> GroupKeyOf(int64_t seq, const Row& r) {
  if (!InGroupIndex(r.state, r.group_key.has_value())) return std::nullopt;
  return GroupEntry{r.queue_id, *r.group_key, seq};
}
std::optional<Key3> DueKey(int64_t seq, const Row& r) {
  if (r.state != MessageState::kScheduled) return std::nullopt;
  return Key3{r.queue_id, r.visible_at, seq};
}
std::optional<Key3> LeaseKey(int64_t seq, const Row& r) {
  if (r.state != MessageState::kLocked) return std::nullopt;
  return Key3{r.queue_id, r.locked_until, seq};
}
std::optional<Key3> TtlKey(int64_t seq, const Row& r) {
  if (!InTtlIndex(r)) return std::nullopt;
  return Key3{r.queue_id, r.expires_at, seq};
}
std::optional<Key3> DlqKey(int64_t seq, const Row& r) {
  if (r.state != MessageState::kDeadLettered) return std::nullopt;
  return Key3{r.queue_id, r.dead_lettered_at, seq};
}
std::optional<Key3> StateKey(int64_t seq, const Row& r) {
  return Key3{r.queue_id, S(r.state), seq};
}

Message ToMessage(int64_t seq, const Row& r, const std::string& queue_name) {
  return mqlite::ToMessage(seq, queue_name, r, *r.payload);
}

class MemTxn;

// The native handle (SPEC §8). One per store, bound to the running write
// transaction, so a pointer the application kept past its callback is refused
// with InvalidArgument instead of dangling.
class BusinessTables final : public MemoryTxn {
 public:
  void Bind(MemTxn* txn) {
    owner_.store(std::this_thread::get_id());
    txn_.store(txn);
  }
  void Unbind() {
    txn_.store(nullptr);
    owner_.store(std::thread::id());
  }

  Status Put(std::string_view table, std::string_view key, std::string_view value) override;
  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override;
  Status Delete(std::string_view table, std::string_view key) override;

 private:
  Result<MemTxn*> Current(std::string_view op, std::string_view table);

  std::atomic<MemTxn*> txn_{nullptr};
  std::atomic<std::thread::id> owner_{};
};

class MemTxn final : public StoreTxn {
 public:
  MemTxn(Data* d, bool read_only, BusinessTables* business)
      : d_(d), read_only_(read_only), business_(business) {}

  void Commit() { log_.Commit(); }
  void Rollback() { log_.RollbackTo(0); }

  // ---- Queues (SPEC §2) ----

  Result<QueueRecord> UpsertQueue(const QueueConfig& cfg, int64_t now, bool* created) override {
    MQLITE_RETURN_IF_ERROR(Writable("UpsertQueue"));
    auto name = d_->queue_names.find(std::string_view(cfg.name));
    if (name != d_->queue_names.end()) {
      const int64_t id = name->second;
      QueueData q = d_->queues.at(id);
      MQLITE_RETURN_IF_ERROR(CheckOrderingChange(q.config, cfg, q.total() > 0));
      q.config = cfg;
      log_.Put(d_->queues, id, std::move(q));
      if (created) *created = false;
      return QueueRecord{id, cfg};
    }
    const int64_t id = ++d_->last_queue_id;  // never reused, even if this rolls back
    QueueData q;
    q.config = cfg;
    q.created_at = now;
    log_.Put(d_->queues, id, std::move(q));
    log_.Put(d_->queue_names, cfg.name, id);
    if (created) *created = true;
    return QueueRecord{id, cfg};
  }

  Result<QueueRecord> GetQueue(std::string_view name) override {
    auto it = d_->queue_names.find(name);
    if (it == d_->queue_names.end()) {
      return Status::QueueNotFound("queue '" + std::string(name) + "' does not exist");
    }
    return QueueRecord{it->second, d_->queues.at(it->second).config};
  }

  Result<std::vector<QueueRecord>> ListQueues() override {
    std::vector<QueueRecord> out;
    out.reserve(d_->queue_names.size());
    for (const auto& [name, id] : d_->queue_names) {
      out.push_back(QueueRecord{id, d_->queues.at(id).config});
    }
    return out;
  }

  Status DeleteQueue(const QueueRecord& queue) override {
    MQLITE_RETURN_IF_ERROR(Writable("DeleteQueue"));
    auto qit = d_->queues.find(queue.id);
    if (qit == d_->queues.end()) return Status::OK();
    std::vector<int64_t> seqs;
    for (auto it = d_->by_state.lower_bound(Key3{queue.id, kMin, kMin});
         it != d_->by_state.end() && std::get<0>(*it) == queue.id; ++it) {
      seqs.push_back(std::get<2>(*it));
    }
    for (int64_t seq : seqs) EraseRow(seq);  // the whole queue goes: no headship to move
    // Its dedup records go too (a deleted queue's id is never reused, so this
    // is hygiene, not correctness).
    std::vector<DedupKey> keys;
    for (auto it = d_->dedup.lower_bound(DedupKey{queue.id, std::string()});
         it != d_->dedup.end() && it->first.first == queue.id; ++it) {
      keys.push_back(it->first);
    }
    for (const DedupKey& k : keys) EraseDedup(k);
    const std::string name = qit->second.config.name;
    log_.EraseKey(d_->queues, queue.id);
    log_.EraseKey(d_->queue_names, name);
    return Status::OK();
  }

  // ---- Enqueue (SPEC §3, §4) ----

  Result<std::vector<int64_t>> Enqueue(const QueueRecord& queue,
                                       std::span<const EnqueueItem> items) override {
    MQLITE_RETURN_IF_ERROR(Writable("Enqueue"));
    MQLITE_RETURN_IF_ERROR(RequireQueue(queue));
    std::vector<int64_t> seqs;
    seqs.reserve(items.size());
    for (const EnqueueItem& it : items) {
      const OutgoingMessage& m = *it.message;
      auto payload = std::make_shared<Payload>();
      payload->body = m.body;
      payload->message_id = m.message_id;
      payload->group_id = m.group_id;
      payload->subject = m.subject;
      payload->correlation_id = m.correlation_id;
      payload->content_type = m.content_type;
      payload->properties = m.properties;
      Row r;
      r.queue_id = queue.id;
      r.state = it.state;
      r.is_head = !it.group_key || !GroupHasLive(queue.id, *it.group_key);
      r.priority = m.priority;
      r.group_key = it.group_key;
      r.enqueued_at = it.enqueued_at;
      r.visible_at = it.visible_at;
      r.expires_at = it.expires_at;
      r.payload = std::move(payload);
      const int64_t seq = ++d_->last_seq;  // never reused, even if this rolls back
      PutRow(seq, std::move(r));
      seqs.push_back(seq);
    }
    return seqs;
  }

  Status CancelScheduled(const QueueRecord& queue, int64_t seq) override {
    MQLITE_RETURN_IF_ERROR(Writable("CancelScheduled"));
    MQLITE_RETURN_IF_ERROR(CheckCancelScheduled(Find(queue.id, seq), seq));
    Remove(seq);
    return Status::OK();
  }

  // ---- Claim (SPEC §5, §7.4) ----
  //
  // Walks the claim index (active heads only) from the queue's first entry in
  // (priority DESC, seq) order. Invariant: every claim-index entry of the
  // queue below `resume` was skipped (its group was already taken in this
  // batch). A candidate that is claimed, expired or dead-lettered leaves the
  // index, so the walk resumes at its key; a head promoted meanwhile (the
  // next member of a group whose head just left) may outrank that point, so
  // the insert is watched and the walk resumes at the lowest such key. Each
  // step is one O(log n) seek: blocked members are never in the index and
  // are never visited.
  Result<std::vector<Message>> Claim(const QueueRecord& queue, const ClaimRequest& req) override {
    MQLITE_RETURN_IF_ERROR(Writable("Claim"));
    MQLITE_RETURN_IF_ERROR(RequireQueue(queue));
    MQLITE_RETURN_IF_ERROR(CheckClaimRequest(req));
    const bool peek_lock = req.mode == ReceiveMode::kPeekLock;
    std::vector<Message> out;
    std::set<int64_t> skipped;           // heads of groups already taken in this batch
    std::set<std::string> taken_groups;  // SPEC §5: one message per group per batch
    Key3 resume{queue.id, kMin, kMin};
    while (static_cast<int>(out.size()) < req.max_messages) {
      auto it = d_->claim.lower_bound(resume);
      while (it != d_->claim.end() && std::get<0>(*it) == queue.id &&
             skipped.count(std::get<2>(*it))) {
        ++d_->probe.claim_steps;
        ++it;
      }
      if (it == d_->claim.end() || std::get<0>(*it) != queue.id) break;
      ++d_->probe.claim_steps;
      const Key3 key = *it;
      const int64_t seq = std::get<2>(key);
      const Row& r = d_->messages.at(seq);
      if (r.group_key && taken_groups.count(*r.group_key)) {
        skipped.insert(seq);
        resume = Key3{queue.id, std::get<1>(key), seq + 1};
        continue;
      }
      resume = key;  // the candidate leaves the index below
      watch_ = true;
      watch_min_.reset();
      if (const Verdict v = DecideClaim(r, queue.config, req.now);
          v.action != Verdict::Action::kDeliver) {
        Apply(seq, v, req.now);
      } else {
        const std::optional<std::string> group = r.group_key;
        Row next = r;
        next.delivery_count += 1;
        if (peek_lock) {
          next.state = MessageState::kLocked;
          next.token = req.tokens[out.size()];
          next.locked_until = req.locked_until;
          out.push_back(ToMessage(seq, next, queue.config.name));
          PutRow(seq, std::move(next));
        } else {
          out.push_back(ToMessage(seq, next, queue.config.name));
          Remove(seq);  // hands headship to the group's next member
        }
        if (group) taken_groups.insert(*group);
      }
      watch_ = false;
      if (watch_min_ && *watch_min_ < resume) resume = *watch_min_;
    }
    return out;
  }

  Result<Message> ClaimDeferred(const QueueRecord& queue, int64_t seq, const LockToken& token,
                                int64_t now, int64_t locked_until) override {
    MQLITE_RETURN_IF_ERROR(Writable("ClaimDeferred"));
    const Row* r = Find(queue.id, seq);
    MQLITE_RETURN_IF_ERROR(CheckClaimDeferred(r, queue.config, seq, now));
    Row next = *r;
    next.state = MessageState::kLocked;
    next.delivery_count += 1;
    next.token = token;
    next.locked_until = locked_until;
    Message m = ToMessage(seq, next, queue.config.name);
    PutRow(seq, std::move(next));
    return m;
  }

  // ---- Settle (SPEC §3, §6) ----

  Result<SettleResult> Settle(const QueueRecord& queue, const SettleRequest& req) override {
    MQLITE_RETURN_IF_ERROR(Writable("Settle"));
    MQLITE_ASSIGN_OR_RETURN(Verdict v, DecideSettle(Find(queue.id, req.seq), queue.config, req));
    Apply(req.seq, v, req.now);
    return Settled(*this, req, v);
  }

  // ---- Inspection and DLQ (SPEC §6) ----

  // One seek of by_state per state asked for, merged by seq.
  Result<std::vector<Message>> Peek(const QueueRecord& queue, const PeekOptions& o) override {
    MQLITE_RETURN_IF_ERROR(RequireQueue(queue));
    using It = std::set<Key3>::const_iterator;
    std::vector<std::pair<It, int>> cursors;
    for (int s = 0; s < kStates; ++s) {
      if (o.state && S(*o.state) != s) continue;
      cursors.emplace_back(d_->by_state.upper_bound(Key3{queue.id, s, o.from_seq}), s);
    }
    auto valid = [&](const std::pair<It, int>& c) {
      return c.first != d_->by_state.end() && std::get<0>(*c.first) == queue.id &&
             std::get<1>(*c.first) == c.second;
    };
    std::vector<Message> out;
    while (static_cast<int>(out.size()) < o.max_messages) {
      std::pair<It, int>* best = nullptr;
      for (auto& c : cursors) {
        if (valid(c) && (!best || std::get<2>(*c.first) < std::get<2>(*best->first))) best = &c;
      }
      if (!best) break;
      const int64_t seq = std::get<2>(*best->first);
      out.push_back(ToMessage(seq, d_->messages.at(seq), queue.config.name));
      ++best->first;
    }
    return out;
  }

  Result<QueueStats> Stats(const QueueRecord& queue, int64_t now) override {
    MQLITE_RETURN_IF_ERROR(RequireQueue(queue));
    const QueueData& q = d_->queues.at(queue.id);
    QueueStats st;
    st.active = q.count[S(MessageState::kActive)];
    st.locked = q.count[S(MessageState::kLocked)];
    st.deferred = q.count[S(MessageState::kDeferred)];
    st.scheduled = q.count[S(MessageState::kScheduled)];
    st.dead_lettered = q.count[S(MessageState::kDeadLettered)];
    st.total = q.total();
    for (int64_t b : q.bytes) st.body_bytes += b;
    // Oldest claimable (StoreTxn::Stats): three bounded walks — active heads
    // by age (the first that qualifies is the answer for that kind), then due
    // schedules and lapsed leases in time order (the minimum of what each
    // visits).
    std::optional<int64_t> oldest;
    auto claimable = [&](const Row& r) { return r.is_head && WouldDeliver(r, queue.config, now); };
    auto walk = [&](const std::set<Key3>& index, int64_t until, bool first_only) {
      int64_t visited = 0;
      for (auto it = index.lower_bound(Key3{queue.id, kMin, kMin});
           it != index.end() && std::get<0>(*it) == queue.id && std::get<1>(*it) <= until &&
           visited <= kStatsProbeLimit;
           ++it, ++visited) {
        const Row& r = d_->messages.at(std::get<2>(*it));
        if (!claimable(r)) continue;
        if (!oldest || r.enqueued_at < *oldest) oldest = r.enqueued_at;
        if (first_only) return;
      }
    };
    walk(d_->claim_age, kMax, /*first_only=*/true);
    walk(d_->due, now, /*first_only=*/false);
    walk(d_->lease, now, /*first_only=*/false);
    if (oldest) st.oldest_claimable_age_ms = std::max<int64_t>(0, now - *oldest);
    return st;
  }

  Result<int64_t> Redrive(const QueueRecord& queue, const QueueRecord& target,
                          const RedriveOptions& o, int64_t now) override {
    MQLITE_RETURN_IF_ERROR(Writable("Redrive"));
    MQLITE_RETURN_IF_ERROR(RequireQueue(queue));
    MQLITE_RETURN_IF_ERROR(RequireQueue(target));
    const std::vector<int64_t> seqs = OldestDead(queue.id, now - o.older_than_ms, o.max_messages);
    int64_t moved = 0;
    for (int64_t seq : seqs) {
      const Row* old = Find(queue.id, seq);
      if (!old) continue;
      std::optional<RedrivePlan> plan = PlanRedrive(old->payload->group_id, target.config, now);
      if (!plan) continue;
      Row r;
      r.queue_id = target.id;
      r.state = MessageState::kActive;
      r.group_key = std::move(plan->group_key);
      r.is_head = !r.group_key || !GroupHasLive(target.id, *r.group_key);
      r.priority = old->priority;
      r.enqueued_at = old->enqueued_at;
      r.visible_at = plan->visible_at;
      r.expires_at = plan->expires_at;
      r.payload = old->payload;
      const int64_t fresh = ++d_->last_seq;
      PutRow(fresh, std::move(r));
      Remove(seq);
      ++moved;
    }
    return moved;
  }

  Result<int64_t> PurgeDeadLetters(const QueueRecord& queue, const PurgeOptions& o,
                                   int64_t now) override {
    MQLITE_RETURN_IF_ERROR(Writable("PurgeDeadLetters"));
    MQLITE_RETURN_IF_ERROR(RequireQueue(queue));
    const std::vector<int64_t> seqs = OldestDead(queue.id, now - o.older_than_ms, o.max_messages);
    for (int64_t seq : seqs) Remove(seq);
    return static_cast<int64_t>(seqs.size());
  }

  // ---- Operator paths ----

  Status DeadLetterMessage(const QueueRecord& queue, int64_t seq, std::string_view reason,
                           const std::optional<std::string>& description, int64_t now) override {
    MQLITE_RETURN_IF_ERROR(Writable("DeadLetterMessage"));
    MQLITE_RETURN_IF_ERROR(CheckDeadLetterMessage(Find(queue.id, seq), seq));
    DeadLetter(seq, reason, description, now);
    return Status::OK();
  }

  Status DeleteMessage(const QueueRecord& queue, int64_t seq) override {
    MQLITE_RETURN_IF_ERROR(Writable("DeleteMessage"));
    MQLITE_RETURN_IF_ERROR(CheckDeleteMessage(Find(queue.id, seq), seq));
    Remove(seq);
    return Status::OK();
  }

  // ---- Maintenance and recovery (SPEC §3, §6, §7.1) ----
  // Each collects at most `limit` seqs from one index seek, then applies them.

  Result<int64_t> PromoteDue(const QueueRecord& queue, int64_t now, int64_t limit) override {
    MQLITE_RETURN_IF_ERROR(Writable("PromoteDue"));
    const std::vector<int64_t> seqs = Walk(d_->due, queue.id, now, limit);
    for (int64_t seq : seqs) {
      Row next = d_->messages.at(seq);
      next.state = MessageState::kActive;
      PutRow(seq, std::move(next));
    }
    return static_cast<int64_t>(seqs.size());
  }

  Result<int64_t> ReclaimLocks(const QueueRecord& queue, int64_t now, bool all_locked,
                               int64_t limit) override {
    MQLITE_RETURN_IF_ERROR(Writable("ReclaimLocks"));
    const std::vector<int64_t> seqs = Walk(d_->lease, queue.id, all_locked ? kMax : now, limit);
    for (int64_t seq : seqs) Apply(seq, DecideReclaim(d_->messages.at(seq), queue.config), now);
    return static_cast<int64_t>(seqs.size());
  }

  Result<int64_t> ExpireMessages(const QueueRecord& queue, int64_t now, int64_t limit) override {
    MQLITE_RETURN_IF_ERROR(Writable("ExpireMessages"));
    const std::vector<int64_t> seqs = Walk(d_->ttl, queue.id, now, limit);
    const Verdict v = DecideExpire(queue.config);
    for (int64_t seq : seqs) Apply(seq, v, now);
    return static_cast<int64_t>(seqs.size());
  }

  Result<int64_t> EnforceRetention(const QueueRecord& queue, const RetentionBounds& b, int64_t now,
                                   int64_t limit) override {
    MQLITE_RETURN_IF_ERROR(Writable("EnforceRetention"));
    MQLITE_RETURN_IF_ERROR(RequireQueue(queue));
    if (!RetentionPass::Bounded(b)) return int64_t{0};
    const QueueData& q = d_->queues.at(queue.id);
    RetentionPass pass(b, now, q.count[S(MessageState::kDeadLettered)],
                       q.bytes[S(MessageState::kDeadLettered)]);
    std::vector<int64_t> victims;
    for (auto it = d_->dlq.lower_bound(Key3{queue.id, kMin, kMin});
         it != d_->dlq.end() && std::get<0>(*it) == queue.id &&
         static_cast<int64_t>(victims.size()) < limit;
         ++it) {
      ++d_->probe.maintenance_steps;
      const int64_t seq = std::get<2>(*it);
      if (!pass.Evict(std::get<1>(*it), d_->messages.at(seq).body_size())) break;  // oldest first
      victims.push_back(seq);
    }
    for (int64_t seq : victims) Remove(seq);
    return static_cast<int64_t>(victims.size());
  }

  // ---- Idempotency records (SPEC §4, §7.2, §7.3) ----

  Result<std::optional<DedupRecord>> FindDedup(const QueueRecord& queue, std::string_view key,
                                               int64_t now) override {
    auto it = d_->dedup.find(DedupKey{queue.id, std::string(key)});
    if (it == d_->dedup.end() || it->second.expires_at <= now) return std::optional<DedupRecord>();
    return std::optional<DedupRecord>(it->second);
  }

  Status PutDedup(const QueueRecord& queue, std::string_view key, const DedupRecord& r) override {
    MQLITE_RETURN_IF_ERROR(Writable("PutDedup"));
    DedupKey k{queue.id, std::string(key)};
    EraseDedup(k);
    log_.Put(d_->dedup, k, r);
    log_.Insert(d_->dedup_expiry, DedupExpiryEntry{r.expires_at, k.first, k.second});
    return Status::OK();
  }

  Result<bool> FindReceipt(std::string_view key, int64_t now) override {
    auto it = d_->receipts.find(key);
    return it != d_->receipts.end() && it->second > now;
  }

  Status PutReceipt(std::string_view key, int64_t expires_at) override {
    MQLITE_RETURN_IF_ERROR(Writable("PutReceipt"));
    std::string k(key);
    if (auto it = d_->receipts.find(key); it != d_->receipts.end()) {
      log_.Erase(d_->receipt_expiry, ExpiryEntry{it->second, k});
    }
    log_.Put(d_->receipts, k, expires_at);
    log_.Insert(d_->receipt_expiry, ExpiryEntry{expires_at, k});
    return Status::OK();
  }

  Result<std::optional<AttemptRecord>> FindAttempt(std::string_view id, int64_t now) override {
    auto it = d_->attempts.find(id);
    if (it == d_->attempts.end() || it->second.expires_at <= now) {
      return std::optional<AttemptRecord>();
    }
    return std::optional<AttemptRecord>(it->second);
  }

  Status PutAttempt(std::string_view id, const AttemptRecord& r) override {
    MQLITE_RETURN_IF_ERROR(Writable("PutAttempt"));
    std::string k(id);
    if (auto it = d_->attempts.find(id); it != d_->attempts.end()) {
      log_.Erase(d_->attempt_expiry, ExpiryEntry{it->second.expires_at, k});
    }
    log_.Put(d_->attempts, k, r);
    log_.Insert(d_->attempt_expiry, ExpiryEntry{r.expires_at, k});
    return Status::OK();
  }

  Result<int64_t> DropExpiredRecords(int64_t now, int64_t limit) override {
    MQLITE_RETURN_IF_ERROR(Writable("DropExpiredRecords"));
    int64_t total = 0;
    {
      std::vector<DedupKey> keys;
      for (auto it = d_->dedup_expiry.begin();
           it != d_->dedup_expiry.end() && std::get<0>(*it) <= now &&
           static_cast<int64_t>(keys.size()) < limit;
           ++it) {
        keys.emplace_back(std::get<1>(*it), std::get<2>(*it));
      }
      for (const DedupKey& k : keys) EraseDedup(k);
      total += static_cast<int64_t>(keys.size());
    }
    total += DropExpired(d_->receipts, d_->receipt_expiry, now, limit);
    total += DropExpired(d_->attempts, d_->attempt_expiry, now, limit);
    return total;
  }

  // ---- Savepoints and the native handle ----

  Status Savepoint(const std::function<Status(StoreTxn&)>& body) override {
    const size_t mark = log_.Mark();
    Status s = body(*this);
    if (!s.ok()) log_.RollbackTo(mark);
    return s;
  }

  // Only write transactions carry the application's tables (Tx is one).
  void* NativeHandle() override {
    return read_only_ ? nullptr : static_cast<void*>(static_cast<MemoryTxn*>(business_));
  }

  // The application cannot commit or roll back through MemoryTxn.
  Status CheckNativeTxnOpen() override { return Status::OK(); }

  // ---- The application's tables, for BusinessTables ----

  Status BusinessPut(std::string_view table, std::string_view key, std::string_view value) {
    MQLITE_RETURN_IF_ERROR(Writable("MemoryTxn::Put"));
    log_.Put(d_->business, std::pair<std::string, std::string>(table, key), std::string(value));
    return Status::OK();
  }
  Result<std::optional<std::string>> BusinessGet(std::string_view table, std::string_view key) {
    auto it = d_->business.find(std::pair<std::string, std::string>(table, key));
    if (it == d_->business.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  Status BusinessDelete(std::string_view table, std::string_view key) {
    MQLITE_RETURN_IF_ERROR(Writable("MemoryTxn::Delete"));
    log_.EraseKey(d_->business, std::pair<std::string, std::string>(table, key));
    return Status::OK();
  }

 private:
  Status Writable(const char* op) const {
    if (!read_only_) return Status::OK();
    return Status::Internal(std::string(op) +
                            ": a write inside a read transaction (TxnKind::kRead)");
  }

  Status RequireQueue(const QueueRecord& queue) const {
    if (d_->queues.count(queue.id)) return Status::OK();
    return Status::QueueNotFound("queue '" + queue.config.name + "' (id " +
                                 std::to_string(queue.id) + ") does not exist");
  }

  // The row `seq` if it belongs to queue `queue_id` (SPEC §2: another queue's
  // seq is unknown here).
  const Row* Find(int64_t queue_id, int64_t seq) const {
    auto it = d_->messages.find(seq);
    if (it == d_->messages.end() || it->second.queue_id != queue_id) return nullptr;
    return &it->second;
  }

  bool GroupHasLive(int64_t queue_id, const std::string& key) const {
    auto it = d_->group.lower_bound(GroupEntry{queue_id, key, kMin});
    return it != d_->group.end() && std::get<0>(*it) == queue_id && std::get<1>(*it) == key;
  }

  // ---- Row writes: every index follows the row ----

  template <class Set, class Key>
  void Reindex(Set& set, const std::optional<Key>& before, const std::optional<Key>& after) {
    if (before == after) return;
    if (before) log_.Erase(set, *before);
    if (after) log_.Insert(set, *after);
  }

  void AddCounts(int64_t queue_id, int state, int64_t count, int64_t bytes) {
    if (count == 0 && bytes == 0) return;
    QueueData& q = d_->queues.at(queue_id);
    q.count[state] += count;
    q.bytes[state] += bytes;
    Data* d = d_;
    log_.Record([d, queue_id, state, count, bytes] {
      QueueData& q = d->queues.at(queue_id);
      q.count[state] -= count;
      q.bytes[state] -= bytes;
    });
  }

  // Moves every index entry and counter of row `seq` from `before` to
  // `after` (nullptr = absent).
  void IndexRow(int64_t seq, const Row* before, const Row* after) {
    auto of = [&](auto key_fn, const Row* r) { return r ? key_fn(seq, *r) : std::nullopt; };
    const auto claim_after = of(ClaimKey, after);
    Reindex(d_->claim, of(ClaimKey, before), claim_after);
    if (watch_ && claim_after && !(before && ClaimKey(seq, *before) == claim_after) &&
        (!watch_min_ || *claim_after < *watch_min_)) {
      watch_min_ = claim_after;
    }
    Reindex(d_->claim_age, of(ClaimAgeKey, before), of(ClaimAgeKey, after));
    Reindex(d_->group, of(GroupKeyOf, before), of(GroupKeyOf, after));
    Reindex(d_->due, of(DueKey, before), of(DueKey, after));
    Reindex(d_->lease, of(LeaseKey, before), of(LeaseKey, after));
    Reindex(d_->ttl, of(TtlKey, before), of(TtlKey, after));
    Reindex(d_->dlq, of(DlqKey, before), of(DlqKey, after));
    Reindex(d_->by_state, of(StateKey, before), of(StateKey, after));
    if (before && after && before->queue_id == after->queue_id && before->state == after->state) {
      return;  // payloads never change, so neither do the byte totals
    }
    if (before) AddCounts(before->queue_id, S(before->state), -1, -before->body_size());
    if (after) AddCounts(after->queue_id, S(after->state), 1, after->body_size());
  }

  void PutRow(int64_t seq, Row row) {
    auto it = d_->messages.find(seq);
    IndexRow(seq, it == d_->messages.end() ? nullptr : &it->second, &row);
    log_.Put(d_->messages, seq, std::move(row));
  }

  void EraseRow(int64_t seq) {
    auto it = d_->messages.find(seq);
    if (it == d_->messages.end()) return;
    IndexRow(seq, &it->second, nullptr);
    log_.EraseKey(d_->messages, seq);
  }

  // ---- Transitions that keep headship right ----

  // Makes the lowest-seq live member of the group its head, after the old
  // head left (one seek of the group index).
  void PromoteNext(int64_t queue_id, const std::string& key) {
    auto it = d_->group.lower_bound(GroupEntry{queue_id, key, kMin});
    if (it == d_->group.end() || std::get<0>(*it) != queue_id || std::get<1>(*it) != key) return;
    const int64_t seq = std::get<2>(*it);
    Row next = d_->messages.at(seq);
    if (next.is_head) return;
    next.is_head = true;
    PutRow(seq, std::move(next));
  }

  // Deletes a row and hands headship on. Headship is read from the live row
  // as it goes, never from a copy taken earlier in the transaction.
  void Remove(int64_t seq) {
    auto it = d_->messages.find(seq);
    if (it == d_->messages.end()) return;  // already gone
    const bool was_head = it->second.is_head;
    const int64_t queue_id = it->second.queue_id;
    const std::optional<std::string> group = it->second.group_key;
    EraseRow(seq);
    if (was_head && group) PromoteNext(queue_id, *group);
  }

  void DeadLetter(int64_t seq, std::string_view reason,
                  const std::optional<std::string>& description, int64_t now) {
    Row next = d_->messages.at(seq);  // the live row
    const bool was_head = next.is_head;
    DeadLetterRow(reason, description, now, &next);
    const int64_t queue_id = next.queue_id;
    const std::optional<std::string> group = next.group_key;
    PutRow(seq, std::move(next));
    if (was_head && group) PromoteNext(queue_id, *group);
  }

  // Applies a store_util.h verdict to row `seq`. kDeliver is Claim's own and
  // changes nothing here.
  void Apply(int64_t seq, const Verdict& v, int64_t now) {
    switch (v.action) {
      case Verdict::Action::kUnlock:  // the lease and token go
      case Verdict::Action::kRenew: {
        Row next = d_->messages.at(seq);
        ApplyToRow(v, &next);
        PutRow(seq, std::move(next));
        return;
      }
      case Verdict::Action::kDeadLetter:
        DeadLetter(seq, v.reason, v.description, now);
        return;
      case Verdict::Action::kDelete:
        Remove(seq);
        return;
      case Verdict::Action::kDeliver:
        return;
    }
  }

  // Up to `limit` seqs of `queue_id` from an index keyed (queue, time, seq)
  // whose time ≤ `until`, in index order.
  std::vector<int64_t> Walk(const std::set<Key3>& index, int64_t queue_id, int64_t until,
                            int64_t limit) {
    std::vector<int64_t> seqs;
    for (auto it = index.lower_bound(Key3{queue_id, kMin, kMin});
         it != index.end() && std::get<0>(*it) == queue_id && std::get<1>(*it) <= until &&
         static_cast<int64_t>(seqs.size()) < limit;
         ++it) {
      ++d_->probe.maintenance_steps;
      seqs.push_back(std::get<2>(*it));
    }
    return seqs;
  }

  // Dead letters dead-lettered at or before `cutoff`, oldest first, at most
  // `max` (0 = all).
  std::vector<int64_t> OldestDead(int64_t queue_id, int64_t cutoff, int64_t max) {
    return Walk(d_->dlq, queue_id, cutoff, max > 0 ? max : kMax);
  }

  void EraseDedup(const DedupKey& k) {
    auto it = d_->dedup.find(k);
    if (it == d_->dedup.end()) return;
    log_.Erase(d_->dedup_expiry, DedupExpiryEntry{it->second.expires_at, k.first, k.second});
    log_.EraseKey(d_->dedup, k);
  }

  template <class Map>
  int64_t DropExpired(Map& map, std::set<ExpiryEntry>& expiry, int64_t now, int64_t limit) {
    std::vector<ExpiryEntry> victims;
    for (auto it = expiry.begin();
         it != expiry.end() && it->first <= now && static_cast<int64_t>(victims.size()) < limit;
         ++it) {
      victims.push_back(*it);
    }
    for (const ExpiryEntry& e : victims) {
      log_.Erase(expiry, e);
      log_.EraseKey(map, e.second);
    }
    return static_cast<int64_t>(victims.size());
  }

  Data* d_;
  const bool read_only_;
  BusinessTables* business_;
  UndoLog log_;
  // Claim's watch on claim-index inserts (see Claim).
  bool watch_ = false;
  std::optional<Key3> watch_min_;
};

Result<MemTxn*> BusinessTables::Current(std::string_view op, std::string_view table) {
  MemTxn* txn = txn_.load();
  if (!txn || owner_.load() != std::this_thread::get_id()) {
    return Status::InvalidArgument(std::string(op) +
                                   ": used outside its Tx callback (SPEC §8: the handle is valid "
                                   "only during the callback, on its thread)");
  }
  if (table.empty()) return Status::InvalidArgument(std::string(op) + ": empty table name");
  return txn;
}

Status BusinessTables::Put(std::string_view table, std::string_view key, std::string_view value) {
  MQLITE_ASSIGN_OR_RETURN(MemTxn * txn, Current("MemoryTxn::Put", table));
  return txn->BusinessPut(table, key, value);
}

Result<std::optional<std::string>> BusinessTables::Get(std::string_view table,
                                                       std::string_view key) {
  MQLITE_ASSIGN_OR_RETURN(MemTxn * txn, Current("MemoryTxn::Get", table));
  return txn->BusinessGet(table, key);
}

Status BusinessTables::Delete(std::string_view table, std::string_view key) {
  MQLITE_ASSIGN_OR_RETURN(MemTxn * txn, Current("MemoryTxn::Delete", table));
  return txn->BusinessDelete(table, key);
}

// An entry of the database's shared-mode bookkeeping (`member`: its
// maintenance locks or its engine registry), held by the handle the engine
// keeps and erased under the database mutex when that handle is destroyed.
// It keeps the database alive, so it may outlive the store.
template <typename Handle, typename Container>
class HeldEntry final : public Handle {
 public:
  HeldEntry(std::shared_ptr<MemoryDatabase> db, Container MemoryDatabase::*member,
            typename Container::key_type key)
      : db_(std::move(db)), member_(member), key_(key) {}
  ~HeldEntry() override {
    std::lock_guard<std::mutex> l(db_->mu);
    ((*db_).*member_).erase(key_);
  }

 private:
  std::shared_ptr<MemoryDatabase> db_;
  Container MemoryDatabase::*member_;
  typename Container::key_type key_;
};

class MemoryStore final : public Store {
 public:
  MemoryStore(std::shared_ptr<MemoryDatabase> db, bool shared)
      : db_(std::move(db)), shared_(shared) {}
  ~MemoryStore() override {
    std::lock_guard<std::mutex> l(db_->mu);
    if (shared_) {
      --db_->shared_open;
    } else {
      db_->exclusive_open = false;
    }
  }

  StoreCapabilities Capabilities() const override {
    StoreCapabilities c;
    c.exclusive = !shared_;
    c.native_handle_type = kHandleType;
    c.crash_model = "none";
    c.name = "memory";
    c.change_feed = shared_;  // alone, an engine already wakes its own waiters
    // One engine at a time in exclusive mode: nobody to take turns or agree with.
    c.maintenance_lock = shared_;
    c.engine_registry = shared_;
    return c;
  }

  Result<std::unique_ptr<MaintenanceLock>> TryLockMaintenance(int64_t queue_id) override {
    if (!shared_) return Store::TryLockMaintenance(queue_id);
    std::lock_guard<std::mutex> l(db_->mu);
    if (!db_->maintenance_locks.insert(queue_id).second) {
      return std::unique_ptr<MaintenanceLock>();  // another engine is maintaining it
    }
    return std::unique_ptr<MaintenanceLock>(new HeldEntry<MaintenanceLock, std::set<int64_t>>(
        db_, &MemoryDatabase::maintenance_locks, queue_id));
  }

  Result<std::unique_ptr<EngineRegistration>> RegisterEngine(
      const EngineDefaults& defaults) override {
    if (!shared_) return Store::RegisterEngine(defaults);
    using Registry = std::map<uint64_t, EngineDefaults>;
    std::lock_guard<std::mutex> l(db_->mu);
    for (const auto& [id, live] : db_->engines) {
      MQLITE_RETURN_IF_ERROR(CheckAgreedDefaults(defaults, live));
    }
    const uint64_t id = ++db_->last_engine;
    db_->engines.emplace(id, defaults);
    return std::unique_ptr<EngineRegistration>(
        new HeldEntry<EngineRegistration, Registry>(db_, &MemoryDatabase::engines, id));
  }

  Status Run(TxnKind kind, const RunOptions& options,
             const std::function<Status(StoreTxn&)>& body) override {
    const bool write = kind == TxnKind::kWrite;
    std::vector<int64_t> changed;
    Status s;
    {
      MQLITE_RETURN_IF_ERROR(db_->gate.Acquire(ModeOf(write), options, "the memory store"));
      MemTxn txn(&db_->data, !write, &business_);
      if (write) business_.Bind(&txn);
      // Rolls back and releases on every exit, an exception included.
      struct Finish {
        MemoryStore* store;
        MemTxn* txn;
        bool write;
        bool commit = false;
        ~Finish() {
          if (commit) {
            txn->Commit();
          } else {
            txn->Rollback();
          }
          if (write) store->business_.Unbind();
          store->db_->gate.Release(ModeOf(write));
        }
      } finish{this, &txn, write};
      if (write && !db_->feed->empty()) {  // the change feed wants the touched queues
        ChangeTrackingTxn tracked(&txn);
        s = body(tracked);
        if (s.ok()) changed = tracked.touched();
      } else {
        s = body(txn);
      }
      finish.commit = s.ok();
    }
    // After the commit and the release (spec.md §9 change feed).
    if (!changed.empty()) db_->feed->Publish(changed);
    return s;
  }

  Result<std::unique_ptr<ChangeSubscription>> Subscribe(ChangeCallback on_change) override {
    return db_->feed->Subscribe(std::move(on_change));
  }

 private:
  static RunGate::Mode ModeOf(bool write) {
    return write ? RunGate::Mode::kExclusive : RunGate::Mode::kShared;
  }

  std::shared_ptr<MemoryDatabase> db_;
  const bool shared_;
  BusinessTables business_;
};

}  // namespace
}  // namespace memory_internal

Result<std::unique_ptr<Store>> OpenMemoryStore(std::shared_ptr<MemoryDatabase> db,
                                               MemoryStoreOptions options) {
  if (!db) return Status::InvalidArgument("OpenMemoryStore: the database is null");
  {
    std::lock_guard<std::mutex> l(db->mu);
    if (db->exclusive_open) {
      return Status::DbLocked(
          "OpenMemoryStore: the memory database is already open in an exclusive store (SPEC "
          "§9: one store at a time)");
    }
    if (!options.shared && db->shared_open > 0) {
      return Status::DbLocked(
          "OpenMemoryStore: the memory database is open in shared mode; an exclusive open must "
          "wait until every shared store is closed");
    }
    if (options.shared) {
      ++db->shared_open;
    } else {
      db->exclusive_open = true;
    }
  }
  return std::unique_ptr<Store>(new memory_internal::MemoryStore(std::move(db), options.shared));
}

}  // namespace mqlite
