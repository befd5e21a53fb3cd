// The PostgreSQL store (mqlite/postgres.h; design: docs/postgres-store.md).
//
// Built on the lower half in this directory: a pool of PgConns (pool.h),
// one transaction per Run with the SPEC §10 retry rules (txn_runner.h), the
// layout (schema.h) and every statement (queries.h). What this file adds is
// the StoreTxn contract on top, under the shared-store rules of spec.md §9:
//
// - Group membership changes (insert into a group, delete, dead-letter,
//   expiry, redrive into a group) first take the group's advisory
//   transaction lock, then read members. User calls wait for it (a Send, a
//   Complete); a Claim or a maintenance step only tries it and skips the
//   group when it is busy.
// - Locks are taken group first, then row (Settle reads the row's immutable
//   group key without a lock, locks the group, then re-reads the row FOR
//   UPDATE); a batch of sends locks its groups in key order. So the store's
//   own transactions do not deadlock on each other except when group commit
//   puts two unrelated calls in one transaction — then PostgreSQL's deadlock
//   detector breaks it and the body reruns (serialisation failure rules).
// - Every transition compares-and-sets the state, token and lease it read
//   (MQ_CAS). Maintenance and claims never wait: they lock rows with
//   FOR UPDATE SKIP LOCKED and only try group locks, skipping what is busy.
// - Dedup keys and attempt ids take an advisory transaction lock on the key
//   before they are read (FindDedup, FindAttempt), so two engines never both
//   miss one.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "mqlite/change_feed.h"
#include "mqlite/postgres.h"
#include "mqlite/store_util.h"
#include "lock_key.h"
#include "pg_conn.h"
#include "pool.h"
#include "queries.h"
#include "schema.h"
#include "txn_runner.h"

namespace mqlite {

Result<PGconn*> PostgresHandle(TxContext& tx) {
  return NativeHandleAs<PGconn>(tx, "PGconn", "PostgresHandle");
}

namespace pg_internal {
namespace {

constexpr int kActive = static_cast<int>(MessageState::kActive);
constexpr int kLocked = static_cast<int>(MessageState::kLocked);
constexpr int kDeferred = static_cast<int>(MessageState::kDeferred);
constexpr int kScheduled = static_cast<int>(MessageState::kScheduled);
constexpr int kDead = static_cast<int>(MessageState::kDeadLettered);

std::string TokenBytes(const LockToken& t) {
  return std::string(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
}

LockToken ReadToken(const PgResult& r, int row, int col) {
  LockToken t;
  if (r.null(row, col)) return t;
  const std::string b = r.bytes(row, col);
  std::memcpy(t.bytes.data(), b.data(), std::min(b.size(), t.bytes.size()));
  return t;
}

Result<Message> ReadMessage(const PgResult& r, int i, const std::string& queue_name) {
  Message m;
  m.seq = r.i64(i, 0);
  m.queue = queue_name;
  m.state = static_cast<MessageState>(r.i64(i, 1));
  m.priority = static_cast<int>(r.i64(i, 2));
  m.enqueued_at = r.i64(i, 3);
  m.visible_at = r.i64(i, 4);
  m.expires_at = r.i64(i, 5);
  m.delivery_count = static_cast<int32_t>(r.i64(i, 6));
  m.locked_until = r.i64(i, 7);
  m.lock_token = ReadToken(r, i, 8);
  m.dead_lettered_at = r.i64(i, 9);
  m.dead_letter_reason = r.opt_bytes(i, 10);
  m.dead_letter_description = r.opt_bytes(i, 11);
  m.message_id = r.opt_bytes(i, 12);
  m.group_id = r.opt_bytes(i, 13);
  m.subject = r.opt_bytes(i, 14);
  m.correlation_id = r.opt_bytes(i, 15);
  m.content_type = r.opt_bytes(i, 16);
  if (!r.null(i, 17)) MQLITE_RETURN_IF_ERROR(DecodePropertyBlob(r.bytes(i, 17), &m.properties));
  m.body = r.bytes(i, 18);
  return m;
}

QueueRecord ReadQueue(const PgResult& r, int i) {
  QueueRecord q;
  q.id = r.i64(i, 0);
  q.config.name = std::string(r.text(i, 1));
  q.config.lock_duration_ms = r.i64(i, 2);
  q.config.max_delivery_count = static_cast<int32_t>(r.i64(i, 3));
  q.config.default_ttl_ms = r.i64(i, 4);
  q.config.dead_letter_on_expire = r.boolean(i, 5);
  q.config.dedup_window_ms = r.i64(i, 6);
  q.config.ordering = static_cast<Ordering>(r.i64(i, 7));
  q.config.dlq_max_age_ms = r.i64(i, 8);
  q.config.dlq_max_count = r.i64(i, 9);
  q.config.dlq_max_bytes = r.i64(i, 10);
  q.config.max_message_bytes = r.i64(i, 11);
  return q;
}

// What settle and maintenance decisions read (MQ_REF_COLS): the facts the
// queue rules need, plus headship and what the CAS compares.
struct RowRef : RowFacts {
  int64_t seq = 0;
  bool is_head = false;
  bool has_token = false;  // lock_token is not NULL
  std::optional<std::string> group_key;
  int64_t body_size = 0;
};

const RowFacts* Facts(const std::optional<RowRef>& row) { return row ? &*row : nullptr; }

// The columns of MQ_REF_COLS, which ReadRef reads.
constexpr int kRefCols = 9;

RowRef ReadRef(const PgResult& r, int i) {
  RowRef x;
  x.seq = r.i64(i, 0);
  x.state = static_cast<MessageState>(r.i64(i, 1));
  x.is_head = r.boolean(i, 2);
  x.group_key = r.opt_bytes(i, 3);
  x.body_size = r.i64(i, 4);
  x.expires_at = r.i64(i, 5);
  x.delivery_count = static_cast<int32_t>(r.i64(i, 6));
  x.locked_until = r.i64(i, 7);
  x.has_token = !r.null(i, 8);
  x.token = ReadToken(r, i, 8);
  return x;
}

std::vector<RowRef> ReadRefs(const PgResult& r) {
  std::vector<RowRef> out;
  out.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) out.push_back(ReadRef(r, i));
  return out;
}

// Queue names are validated by the engine to a printable-ASCII alphabet; a
// name outside it cannot exist and is not sent (text parameters must be
// valid in the server's encoding, and a refused one would abort the
// transaction).
bool PlausibleQueueName(std::string_view name) {
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return c > 0x20 && static_cast<unsigned char>(c) < 0x7f; });
}

// Committed queue records by name, shared by the store's write
// transactions (PgTxn::GetQueue), so that a Send, a Receive or a settle
// need not read its queue before its first statement: one round trip each.
// A record is used at most PostgresOptions::queue_cache_ms after it was
// read, and the whole
// cache is dropped when this store changes a queue (once that transaction
// has ended) or the change feed reports another engine's change or
// reconnects (Listener); a record read before a drop is never stored after
// it. So another engine's UpdateQueue reaches this one's operations within
// the notification's delay — and queue_cache_ms at most when notifications
// are lost or the feed is off — as it would reach an operation whose
// transaction read the queue just before that UpdateQueue committed. A
// send whose cached queue is gone reruns its body with a fresh read
// (PgTxn::Enqueue), so a queue deleted and created again elsewhere is found.
class QueueCache {
 public:
  using Clock = std::chrono::steady_clock;
  explicit QueueCache(std::chrono::milliseconds ttl) : ttl_(ttl) {}

  std::optional<QueueRecord> Find(std::string_view name) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return std::nullopt;
    if (Clock::now() - it->second.read_at > ttl_) {
      by_name_.erase(it);
      return std::nullopt;
    }
    return it->second.queue;
  }
  // The drops so far; a read that began at generation g may be stored only
  // while it still is g.
  uint64_t generation() {
    std::lock_guard<std::mutex> l(mu_);
    return generation_;
  }
  void Put(const QueueRecord& q, uint64_t read_at_generation, Clock::time_point read_at) {
    std::lock_guard<std::mutex> l(mu_);
    if (read_at_generation != generation_) return;
    by_name_.insert_or_assign(q.config.name, Entry{q, read_at});
  }
  void Drop() {
    std::lock_guard<std::mutex> l(mu_);
    ++generation_;
    by_name_.clear();
  }

 private:
  struct Entry {
    QueueRecord queue;
    Clock::time_point read_at;
  };
  const std::chrono::milliseconds ttl_;
  std::mutex mu_;
  uint64_t generation_ = 0;
  std::map<std::string, Entry, std::less<>> by_name_;
};

// The statement that announces commits to queues `ids` (and, with
// `queues_changed`, to every engine's queue cache: "*"), run in a transaction
// of its own after the COMMIT. Channel and payload are [a-z0-9_,*] only, so
// no quoting. A queue's wake-up goes out only if some engine watches the
// queue (Listener::Watch: a shared session lock on its 'w' key, held by the
// watcher's listening session): the exclusive try-lock fails exactly then.
// A watch that begins after the try-lock precedes the watcher's next claim,
// which sees the commit; a watch held at the try-lock gets the wake-up.
// (Two notifiers racing for one key: the loser notifies — spurious, allowed.)
// A queue change ("*") always goes out, with every id.
std::string NotifySql(const std::string& channel, std::string_view schema,
                      const std::vector<int64_t>& ids, bool queues_changed) {
  if (queues_changed) {
    std::string list;
    for (int64_t id : ids) list += std::to_string(id) + ",";
    return "SELECT pg_notify('" + channel + "', '" + list + "*')";
  }
  std::string rows;
  for (int64_t id : ids) {
    rows += (rows.empty() ? "(" : ",(") + std::to_string(id) + "," +
            std::to_string(LockKey('w', schema, id)) + ")";
  }
  return "SELECT pg_notify('" + channel + "', string_agg(q::text, ',')) FROM (VALUES " + rows +
         ") v(q, k) WHERE NOT pg_try_advisory_xact_lock(k) HAVING count(*) > 0";
}

// Wake-ups coalesced per queue (PostgresOptions::notify_coalesce_ms). A
// notification costs more than the send it announces: the server signals
// every listening backend, which runs a transaction to read it, and each
// engine's listening thread wakes (measured: with one notification per send
// the server and client used about twice the CPU per send). A waiting engine
// needs one wake-up per burst. So a commit's round trip carries a queue's
// notification (PgConn::AfterCommit: right after the COMMIT, outside the
// transaction) only if this store sent none for that queue within the
// window; a queue a commit touched without notifying is notified by this
// object's thread at
// the window's end — always after that commit returned, so a waiter that
// claimed too early on the previous wake-up is woken again. Every change is
// thus announced within about a window of its commit. A notification the
// thread cannot send is retried; if the server stays unreachable, waiters
// fall back to their poll interval, as with notifications lost to a
// listener's reconnect.
class NotifyCoalescer {
 public:
  using Clock = std::chrono::steady_clock;
  NotifyCoalescer(std::string url, std::string schema, std::string channel,
                  std::chrono::milliseconds window)
      : url_(std::move(url)),
        schema_(std::move(schema)),
        channel_(std::move(channel)),
        window_(window) {}
  // Sends what is pending (best effort) and stops the thread.
  ~NotifyCoalescer() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::vector<int64_t> ids;
    for (const auto& [id, due] : pending_) ids.push_back(id);
    if (!ids.empty()) (void)Send(ids);
  }

  // For a transaction about to commit that touched `ids`: those whose
  // notification its COMMIT carries (none sent within the window; now
  // noted as sent); the others are appended to *later.
  std::vector<int64_t> Take(const std::vector<int64_t>& ids, std::vector<int64_t>* later) {
    std::vector<int64_t> now_ids;
    std::lock_guard<std::mutex> l(mu_);
    const auto now = Clock::now();
    for (int64_t id : ids) {
      auto [it, fresh] = last_.try_emplace(id, now);
      if (fresh || now - it->second >= window_) {
        it->second = now;
        now_ids.push_back(id);
      } else {
        later->push_back(id);
      }
    }
    return now_ids;
  }

  // After that transaction committed (or may have): `later` are notified
  // by the end of their window.
  void Later(const std::vector<int64_t>& later) {
    bool sooner = false;  // the thread must wake before it planned to
    {
      std::lock_guard<std::mutex> l(mu_);
      for (int64_t id : later) {
        const auto due = last_[id] + window_;
        auto [it, fresh] = pending_.try_emplace(id, due);
        if (!fresh) it->second = std::min(it->second, due);
        if (due < wake_at_) {
          wake_at_ = due;
          sooner = true;
        }
      }
      if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
    }
    // Most calls add to a window the thread already waits for: no wake-up
    // (one per send would cost what coalescing saves).
    if (sooner) cv_.notify_all();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      auto due = Clock::time_point::max();
      for (const auto& [id, at] : pending_) due = std::min(due, at);
      wake_at_ = due;
      if (pending_.empty()) {
        cv_.wait(l);
        continue;
      }
      const auto now = Clock::now();
      if (now < due) {
        cv_.wait_until(l, due);
        continue;
      }
      std::vector<int64_t> ids;
      for (auto it = pending_.begin(); it != pending_.end();) {
        if (it->second > now) {
          ++it;
          continue;
        }
        ids.push_back(it->first);
        last_[it->first] = now;
        it = pending_.erase(it);
      }
      l.unlock();
      const Status s = Send(ids);
      l.lock();
      if (!s.ok()) {  // again shortly, on a fresh session
        for (int64_t id : ids) pending_.try_emplace(id, Clock::now() + kRetry);
      }
    }
  }

  // On this object's own session (the pool's are read-only by default).
  // Only the thread, or the destructor after it stopped, calls it.
  Status Send(const std::vector<int64_t>& ids) {
    if (!conn_ || conn_->broken()) {
      conn_.reset();
      MQLITE_ASSIGN_OR_RETURN(conn_, PgConn::Connect(url_));
    }
    return conn_->Simple(NotifySql(channel_, schema_, ids, false), "coalesced notification");
  }

  static constexpr std::chrono::milliseconds kRetry{100};
  const std::string url_;
  const std::string schema_;
  const std::string channel_;
  const std::chrono::milliseconds window_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<int64_t, Clock::time_point> last_;     // queue → its last notification
  std::map<int64_t, Clock::time_point> pending_;  // queue → when it is due
  // When the thread will look at pending_ next (max: only when woken).
  Clock::time_point wake_at_ = Clock::time_point::max();
  std::thread thread_;
  std::unique_ptr<PgConn> conn_;
};

class PgTxn final : public StoreTxn {
 public:
  // A PrepareClaim waiting for its Claim (store.h).
  struct Prep {
    QueueRecord queue;
    int64_t now = 0;
    int64_t limit = 0;
  };
  // `cache`: the store's queue cache, for a rerunnable write (a body that
  // finds a cached record stale can be run again); null otherwise.
  // `channel`: the change feed's NOTIFY channel, "" when the feed is off;
  // `coalescer`: null when every commit notifies.
  PgTxn(PgConn& conn, const PgQueries& q, const std::string& schema, bool read_only,
        QueueCache* cache = nullptr, std::string channel = "",
        NotifyCoalescer* coalescer = nullptr)
      : c_(conn),
        q_(q),
        schema_(schema),
        read_only_(read_only),
        cache_(cache),
        channel_(std::move(channel)),
        coalescer_(coalescer) {}

  // The notification sent right after this transaction's COMMIT, in its
  // round trip (PgConn::AfterCommit; at most one per transaction; channel
  // and payload are [a-z0-9_,*] only, so no quoting):
  // the queues it woke that the coalescer lets it announce now (the others
  // go to later()), and "*" telling the other engines' listeners that queue
  // records changed (QueueCache; never delayed). "" when there is nothing to
  // say.
  std::string Notification() {
    if (channel_.empty() || woke_.empty()) return "";
    std::vector<int64_t> now = woke_;
    if (coalescer_ != nullptr && !queues_changed_) now = coalescer_->Take(woke_, &later_);
    if (now.empty()) return "";
    return NotifySql(channel_, schema_, now, queues_changed_);
  }
  // Queues this transaction woke without announcing them (NotifyCoalescer).
  const std::vector<int64_t>& later() const { return later_; }

  // The next Enqueue, Claim or Settle may send COMMIT with its statement
  // (store.h). Not inside a savepoint or after the native handle was taken
  // (the engine never asks there; this keeps it so).
  void FinalCallFollows() override {
    final_call_ = !read_only_ && savepoint_depth_ == 0 && !handle_taken_;
  }

  // Whether this transaction created, changed or deleted a queue (the
  // store then drops its queue cache and tells the other engines).
  bool queues_changed() const { return queues_changed_; }
  // The queues where this transaction may have made messages claimable
  // (a send, an abandon, a promoted group head, a due schedule, a reclaimed
  // lease, a redrive, a queue change): the ones whose long-polls the change
  // feed wakes. A Peek-Lock claim or a Complete that moves no headship
  // wakes no one, since nothing became claimable.
  const std::vector<int64_t>& woke() const { return woke_; }

  // ---- Queues ----

  Result<QueueRecord> UpsertQueue(const QueueConfig& cfg, int64_t now, bool* created) override {
    queues_read_.clear();  // it changes, and it must be read as it is now
    queues_changed_ = true;
    auto existing = LoadQueue(cfg.name);
    if (existing) {
      if (existing->config.ordering != cfg.ordering) {
        MQLITE_ASSIGN_OR_RETURN(PgResult any, X(Q::kQueueHasMessages, PgParams().I(existing->id)));
        MQLITE_RETURN_IF_ERROR(CheckOrderingChange(existing->config, cfg, any.rows() > 0));
      }
      MQLITE_RETURN_IF_ERROR(X(Q::kUpdateQueue, Config(cfg).I(existing->id)).status());
      Woke(existing->id);  // a raised max_delivery_count may free messages
      if (created) *created = false;
      return QueueRecord{existing->id, cfg};
    }
    if (existing.error().code() != StatusCode::kQueueNotFound) return existing.error();
    MQLITE_ASSIGN_OR_RETURN(PgResult ins, X(Q::kInsertQueue, Config(cfg).Text(cfg.name).I(now)));
    if (ins.rows() == 1) {
      if (created) *created = true;
      Woke(ins.i64(0, 0));  // so the other engines hear of the queue change
      return QueueRecord{ins.i64(0, 0), cfg};
    }
    // Another engine created the name since GetQueue looked: its queue
    // stands, as the engine's create-if-absent would have left it.
    if (created) *created = false;
    return GetQueue(cfg.name);
  }

  // Read once per transaction: the calls group commit gathers into one
  // transaction were all made before it began, so one read of the queue
  // serves them all. A queue deleted meanwhile is caught where it matters
  // (an insert holds the queue row FOR KEY SHARE). This transaction's own
  // queue changes, and a savepoint rolled back, forget what was read.
  Result<QueueRecord> GetQueue(std::string_view name) override {
    for (const QueueRecord& q : queues_read_) {
      if (q.config.name == name) return q;
    }
    const bool cached = cache_ && !queues_changed_;
    if (cached) {
      if (std::optional<QueueRecord> q = cache_->Find(name)) {
        queues_read_.push_back(*q);
        from_cache_.insert(q->id);
        return *q;
      }
    }
    const uint64_t generation = cached ? cache_->generation() : 0;
    const auto read_at = QueueCache::Clock::now();
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, LoadQueue(name));
    queues_read_.push_back(q);
    if (cached) cache_->Put(q, generation, read_at);
    return q;
  }

  Result<std::vector<QueueRecord>> ListQueues() override {
    MQLITE_ASSIGN_OR_RETURN(PgResult r, X(Q::kListQueues, PgParams()));
    std::vector<QueueRecord> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back(ReadQueue(r, i));
    return out;
  }

  // The queue row goes first: a send in flight elsewhere holds it FOR KEY
  // SHARE, so this waits for that send to commit and then deletes its
  // message too; a later send finds no queue.
  Status DeleteQueue(const QueueRecord& queue) override {
    queues_read_.clear();
    queues_changed_ = true;
    Woke(queue.id);  // its long-polls end with QueueNotFound
    MQLITE_RETURN_IF_ERROR(X(Q::kDeleteQueueRow, PgParams().I(queue.id)).status());
    return X(Q::kDeleteQueueMessages, PgParams().I(queue.id)).status();
  }

  // ---- Enqueue ----

  Result<std::vector<int64_t>> Enqueue(const QueueRecord& queue,
                                       std::span<const EnqueueItem> items) override {
    // Every group this batch joins, locked up front in key order.
    std::vector<int64_t> keys;
    for (const EnqueueItem& it : items) {
      if (it.group_key) keys.push_back(GroupLock(queue.id, *it.group_key));
    }
    if (keys.size() == 1) {
      MQLITE_RETURN_IF_ERROR(X(Q::kXactLock, PgParams().I(keys[0])).status());
    } else if (!keys.empty()) {
      MQLITE_RETURN_IF_ERROR(X(Q::kXactLockMany, PgParams().Text(IntArray(keys))).status());
    }
    // The body's final call: the last insert carries the COMMIT. An
    // earlier insert that found the queue held it FOR KEY SHARE, so the
    // last finds it too; if the first finds no queue, nothing was written.
    const bool final_call = std::exchange(final_call_, false);
    std::vector<int64_t> seqs;
    seqs.reserve(items.size());
    for (const EnqueueItem& it : items) {
      const OutgoingMessage& m = *it.message;
      const bool commit = final_call && &it == &items.back();
      if (commit) Woke(queue.id);  // the notification goes with the COMMIT
      bool head = true;
      if (it.group_key) {
        MQLITE_ASSIGN_OR_RETURN(bool live, GroupHasLiveMember(queue.id, *it.group_key));
        head = !live;
      }
      PgParams p;
      p.I(queue.id)
          .I(static_cast<int>(it.state))
          .Bool(head)
          .I(m.priority)
          .OptBytes(it.group_key)
          .I(it.enqueued_at)
          .I(it.visible_at)
          .I(it.expires_at)
          .OptBytes(m.message_id)
          .OptBytes(m.group_id)
          .OptBytes(m.subject)
          .OptBytes(m.correlation_id)
          .OptBytes(m.content_type);
      if (m.properties.empty()) {
        p.Null();
      } else {
        p.Bytes(EncodePropertyBlob(m.properties));
      }
      p.Bytes(m.body).I(static_cast<int64_t>(m.body.size()));
      MQLITE_ASSIGN_OR_RETURN(PgResult r, X(Q::kInsertMessage, p, commit));
      if (r.rows() != 1) {
        if (from_cache_.count(queue.id)) {
          // The cached record is stale (the queue was deleted, perhaps
          // created again under a new id): read it afresh and run again.
          cache_->Drop();
          c_.MarkStale();
          return Status::Unavailable("queue '" + queue.config.name +
                                     "' changed since this engine last read it; run again");
        }
        return Status::QueueNotFound("queue '" + queue.config.name + "' was deleted");
      }
      seqs.push_back(r.i64(0, 0));
    }
    Woke(queue.id);
    return seqs;
  }

  Status CancelScheduled(const QueueRecord& queue, int64_t seq) override {
    MQLITE_ASSIGN_OR_RETURN(std::optional<RowRef> row, LockRow(queue, seq, /*group=*/true));
    MQLITE_RETURN_IF_ERROR(CheckCancelScheduled(Facts(row), seq));
    return Must(Remove(queue, *row), "cancel");
  }

  // ---- Claim ----

  // A Receive's time-driven steps (store.h) wait for its Claim: a Peek-Lock
  // claim sends them in its own statement (kPromoteAndClaim), so a Receive
  // alone is one round trip. Any other call that comes first runs them (X).
  Status PrepareClaim(const QueueRecord& queue, int64_t now, int64_t limit) override {
    prep_ = Prep{queue, now, limit};
    return Status::OK();
  }

  Result<std::vector<Message>> Claim(const QueueRecord& queue, const ClaimRequest& req) override {
    MQLITE_RETURN_IF_ERROR(CheckClaimRequest(req));
    bool final_call = std::exchange(final_call_, false);
    std::vector<Message> out;
    const bool peek_lock = req.mode == ReceiveMode::kPeekLock;
    std::optional<Prep> prep = std::exchange(prep_, std::nullopt);
    if (prep && (!peek_lock || prep->queue.id != queue.id || prep->now != req.now)) {
      MQLITE_RETURN_IF_ERROR(RunPrep(*prep));
      prep.reset();
    }
    if (peek_lock) {
      // The common batch — the first max_messages candidates all deliverable
      // as they are — in one statement. Locking a grouped head leaves its
      // group's membership alone (no group lock, as below). Otherwise it
      // changed nothing and the chunked claim below decides each candidate
      // (the candidates it locked stay this transaction's).
      std::string tokens;
      for (int i = 0; i < req.max_messages; ++i) tokens += TokenBytes(req.tokens[i]);
      auto claim_params = [&] {  // $1–$7 of both all-or-nothing statements
        PgParams p;
        p.I(queue.id)
            .I(req.max_messages)
            .I(req.now)
            .I(queue.config.max_delivery_count)
            .Bytes(tokens)
            .I(static_cast<int64_t>(LockToken{}.bytes.size()))
            .I(req.locked_until);
        return p;
      };
      bool simple = true;  // the all-or-nothing claim may still take the batch
      if (prep) {
        MQLITE_ASSIGN_OR_RETURN(
            PgResult r, X(Q::kPromoteAndClaim, claim_params().I(prep->limit), final_call));
        const int cols = PQnfields(r.get());
        const int64_t promoted = r.i64(0, cols - 2);
        const bool ended = r.boolean(0, cols - 1);
        if (promoted == 0 && !ended) {
          if (!r.null(0, 0)) return ReadClaimed(r, queue);
          if (r.i64(0, cols - 3) == 0) return out;  // no candidate
          simple = false;  // candidates, not all deliverable as they are
        } else {
          // It claimed nothing; what it promoted stands (committed with it,
          // or in this transaction). Reclaim what ended, then claim again.
          if (promoted > 0) Woke(queue.id);
          if (final_call) MQLITE_RETURN_IF_ERROR(c_.Rebegin());
          final_call = false;
          if (ended) {
            MQLITE_RETURN_IF_ERROR(ReclaimLocks(queue, req.now, false, prep->limit).status());
          }
        }
      }
      if (simple) {
        MQLITE_ASSIGN_OR_RETURN(PgResult r, X(Q::kClaimAllOrNothing, claim_params(), final_call));
        if (r.rows() == 0) return out;  // no candidate
        if (!r.null(0, 0)) return ReadClaimed(r, queue);
      }
      // It committed having changed nothing (what the body did before it,
      // a PromoteDue, stands on its own): the chunked claim runs in a
      // transaction of its own.
      if (final_call) MQLITE_RETURN_IF_ERROR(c_.Rebegin());
    }
    MQLITE_RETURN_IF_ERROR(ClaimInChunks<RowRef>(
        req, queue.config,
        [&](int64_t limit) -> Result<std::vector<RowRef>> {
          MQLITE_ASSIGN_OR_RETURN(PgResult r,
                                  X(Q::kClaimCandidates, PgParams().I(queue.id).I(limit)));
          return ReadRefs(r);
        },
        [&](const RowRef& c, const Verdict& v) -> Result<ClaimTake> {
          const bool leaves_group = v.action != Verdict::Action::kDeliver || !peek_lock;
          if (leaves_group && c.group_key) {
            // Its group's membership changes: only if no one else is
            // changing it right now (spec.md §9: a claim skips a busy group).
            MQLITE_ASSIGN_OR_RETURN(bool got, TryGroupLock(queue.id, *c.group_key));
            if (!got) return ClaimTake::kBusy;
          }
          if (v.action != Verdict::Action::kDeliver) {
            MQLITE_RETURN_IF_ERROR(Must(Apply(queue, c, v, req.now), "claim"));
            return ClaimTake::kRetired;
          }
          if (peek_lock) {
            MQLITE_ASSIGN_OR_RETURN(
                PgResult u, X(Q::kLockMessage, PgParams()
                                                   .I(c.seq)
                                                   .I(kActive)
                                                   .Bytes(TokenBytes(req.tokens[out.size()]))
                                                   .I(req.locked_until)));
            if (u.rows() != 1) return Status::Internal("claim: a locked candidate changed");
            MQLITE_ASSIGN_OR_RETURN(Message m, ReadMessage(u, 0, queue.config.name));
            out.push_back(std::move(m));
            return ClaimTake::kDelivered;
          }
          MQLITE_ASSIGN_OR_RETURN(PgResult d, X(Q::kDeleteReturning, PgParams().I(c.seq)));
          if (d.rows() != 1) return Status::Internal("claim: a locked candidate vanished");
          MQLITE_ASSIGN_OR_RETURN(Message m, ReadMessage(d, 0, queue.config.name));
          AsReceivedAndDeleted(&m);
          out.push_back(std::move(m));
          if (c.group_key) MQLITE_RETURN_IF_ERROR(PromoteNext(queue.id, *c.group_key));
          return ClaimTake::kDelivered;
        }));
    return out;
  }

  Result<Message> ClaimDeferred(const QueueRecord& queue, int64_t seq, const LockToken& token,
                                int64_t now, int64_t locked_until) override {
    MQLITE_ASSIGN_OR_RETURN(std::optional<RowRef> row, LockRow(queue, seq, /*group=*/false));
    MQLITE_RETURN_IF_ERROR(CheckClaimDeferred(Facts(row), queue.config, seq, now));
    MQLITE_ASSIGN_OR_RETURN(
        PgResult u,
        X(Q::kLockMessage,
          PgParams().I(seq).I(kDeferred).Bytes(TokenBytes(token)).I(locked_until)));
    if (u.rows() != 1) return Status::Internal("claim deferred: the locked row changed");
    return ReadMessage(u, 0, queue.config.name);
  }

  // ---- Settle ----

  Result<SettleResult> Settle(const QueueRecord& queue, const SettleRequest& req) override {
    const bool final_call = std::exchange(final_call_, false);
    // The common Complete — an ungrouped message, locked under this token,
    // lease live — is one statement, its receipt included; anything else
    // (grouped, LockLost, any other op) takes the general path below, which
    // decides it exactly.
    if (req.op == SettleOp::kComplete) {
      Verdict deleted;
      deleted.action = Verdict::Action::kDelete;
      PgParams p;
      p.I(req.seq).I(queue.id).Bytes(TokenBytes(req.token)).I(req.now);
      if (req.receipt_key.empty()) {
        MQLITE_ASSIGN_OR_RETURN(PgResult d, X(Q::kCompleteUngrouped, p));
        if (d.affected() == 1) return SettleResultOf(deleted);
      } else {
        // As the body's final call it carries the COMMIT; when it deleted
        // nothing it wrote nothing, and the general path runs in a
        // transaction of its own.
        p.Bytes(req.receipt_key).I(req.receipt_expires_at);
        MQLITE_ASSIGN_OR_RETURN(PgResult d, X(Q::kCompleteWithReceipt, p, final_call));
        if (d.i64(0, 0) == 1) {
          changed_rows_ += 1;
          inserted_rows_ += d.i64(0, 1);
          return SettleResultOf(deleted);
        }
        if (final_call) MQLITE_RETURN_IF_ERROR(c_.Rebegin());
      }
    }
    // Complete, Reject and Abandon (which may dead-letter) can change the
    // group's membership: group lock first. Defer and Renew cannot.
    const bool membership = req.op == SettleOp::kComplete || req.op == SettleOp::kReject ||
                            req.op == SettleOp::kAbandon;
    MQLITE_ASSIGN_OR_RETURN(std::optional<RowRef> row, LockRow(queue, req.seq, membership));
    MQLITE_ASSIGN_OR_RETURN(Verdict v, DecideSettle(Facts(row), queue.config, req));
    MQLITE_RETURN_IF_ERROR(Must(Apply(queue, *row, v, req.now), "settle"));
    return Settled(*this, req, v);
  }

  // A batch's Completes (CompleteBatch) go out in one round trip, each as
  // the one-statement Complete with its receipt (kCompleteWithReceipt),
  // instead of a round trip each; the requests that statement did not settle
  // (grouped, LockLost) and any other op then take Settle, in order. That is
  // the ordered calls' outcome (StoreTxn::SettleMany): the statements run in
  // order, a settled row is an ungrouped one nothing else in the batch
  // touches, and a later request repeating its seq finds the row gone and
  // its receipt written, as it would have.
  Status SettleMany(const QueueRecord& queue, std::span<const SettleRequest> reqs,
                    std::vector<Result<SettleResult>>* out) override {
    std::vector<size_t> fast;
    std::vector<PgParams> params;
    for (size_t i = 0; i < reqs.size(); ++i) {
      const SettleRequest& r = reqs[i];
      if (r.op != SettleOp::kComplete || r.receipt_key.empty()) continue;
      fast.push_back(i);
      params.push_back(PgParams()
                           .I(r.seq)
                           .I(queue.id)
                           .Bytes(TokenBytes(r.token))
                           .I(r.now)
                           .Bytes(r.receipt_key)
                           .I(r.receipt_expires_at));
    }
    if (fast.size() < 2) return StoreTxn::SettleMany(queue, reqs, out);
    MQLITE_ASSIGN_OR_RETURN(std::vector<PgResult> rs,
                            c_.ExecMany(q_[Q::kCompleteWithReceipt], params));
    out->assign(reqs.size(), Status::LockLost("not settled"));
    std::vector<bool> done(reqs.size(), false);
    Verdict deleted;
    deleted.action = Verdict::Action::kDelete;
    for (size_t k = 0; k < fast.size(); ++k) {
      if (rs[k].i64(0, 0) != 1) continue;
      changed_rows_ += 1;
      inserted_rows_ += rs[k].i64(0, 1);
      (*out)[fast[k]] = SettleResultOf(deleted);
      done[fast[k]] = true;
    }
    return SettleTheRest(*this, queue, reqs, done, out);
  }

  // ---- Inspection and DLQ ----

  Result<std::vector<Message>> Peek(const QueueRecord& queue, const PeekOptions& o) override {
    PgParams p;
    p.I(queue.id).I(o.from_seq).I(o.max_messages);
    if (o.state) {
      p.I(static_cast<int>(*o.state));
    } else {
      p.Null();
    }
    MQLITE_ASSIGN_OR_RETURN(PgResult r, X(Q::kPeek, p));
    std::vector<Message> out;
    for (int i = 0; i < r.rows(); ++i) {
      MQLITE_ASSIGN_OR_RETURN(Message m, ReadMessage(r, i, queue.config.name));
      out.push_back(std::move(m));
    }
    return out;
  }

  Result<QueueStats> Stats(const QueueRecord& queue, int64_t now) override {
    QueueStats st;
    MQLITE_ASSIGN_OR_RETURN(
        PgResult r, X(Q::kStats, PgParams().I(queue.id).I(now).I(kStatsProbeLimit + 1)));
    // Oldest claimable (store.h Stats): active heads come in age order, so
    // the first that qualifies is that kind's answer; due schedules and
    // lapsed leases come in time order, so each takes the minimum it sees.
    std::optional<int64_t> oldest;
    bool active_found = false;
    for (int i = 0; i < r.rows(); ++i) {
      const int64_t kind = r.i64(i, 0);
      if (kind == 0) {
        const int64_t n = r.i64(i, 2);
        switch (static_cast<int>(r.i64(i, 1))) {
          case kActive: st.active = n; break;
          case kLocked: st.locked = n; break;
          case kDeferred: st.deferred = n; break;
          case kScheduled: st.scheduled = n; break;
          case kDead: st.dead_lettered = n; break;
          default: return Status::Corruption("message with unknown state");
        }
        st.total += n;
        st.body_bytes += r.i64(i, 3);
        continue;
      }
      if (kind == 1 && active_found) continue;
      RowFacts f;
      f.expires_at = r.i64(i, 5);
      f.delivery_count = static_cast<int32_t>(r.i64(i, 6));
      if (!r.boolean(i, 7) || !WouldDeliver(f, queue.config, now)) continue;
      const int64_t enq = r.i64(i, 4);
      if (!oldest || enq < *oldest) oldest = enq;
      if (kind == 1) active_found = true;
    }
    if (oldest) st.oldest_claimable_age_ms = std::max<int64_t>(0, now - *oldest);
    return st;
  }

  Result<int64_t> Redrive(const QueueRecord& queue, const QueueRecord& target,
                          const RedriveOptions& o, int64_t now) override {
    MQLITE_ASSIGN_OR_RETURN(std::vector<RowRef> rows,
                            OldestDead(queue.id, now - o.older_than_ms, o.max_messages));
    int64_t moved = 0;
    for (const RowRef& r : rows) {
      MQLITE_ASSIGN_OR_RETURN(PgResult g, X(Q::kGetGroupId, PgParams().I(r.seq)));
      if (g.rows() != 1) continue;
      const std::optional<RedrivePlan> plan = PlanRedrive(g.opt_bytes(0, 0), target.config, now);
      if (!plan) continue;
      bool head = true;
      if (plan->group_key) {
        MQLITE_RETURN_IF_ERROR(
            X(Q::kXactLock, PgParams().I(GroupLock(target.id, *plan->group_key))).status());
        MQLITE_ASSIGN_OR_RETURN(bool live, GroupHasLiveMember(target.id, *plan->group_key));
        head = !live;
      }
      MQLITE_RETURN_IF_ERROR(X(Q::kRedriveInsert, PgParams()
                                                      .I(target.id)
                                                      .Bool(head)
                                                      .OptBytes(plan->group_key)
                                                      .I(plan->visible_at)
                                                      .I(plan->expires_at)
                                                      .I(r.seq))
                                 .status());
      MQLITE_RETURN_IF_ERROR(Must(Remove(queue, r), "redrive"));
      ++moved;
    }
    if (moved > 0) Woke(target.id);
    return moved;
  }

  Result<int64_t> PurgeDeadLetters(const QueueRecord& queue, const PurgeOptions& o,
                                   int64_t now) override {
    MQLITE_ASSIGN_OR_RETURN(std::vector<RowRef> rows,
                            OldestDead(queue.id, now - o.older_than_ms, o.max_messages));
    for (const RowRef& r : rows) MQLITE_RETURN_IF_ERROR(Must(Remove(queue, r), "purge"));
    return static_cast<int64_t>(rows.size());
  }

  // ---- Operator paths ----

  Status DeadLetterMessage(const QueueRecord& queue, int64_t seq, std::string_view reason,
                           const std::optional<std::string>& description, int64_t now) override {
    MQLITE_ASSIGN_OR_RETURN(std::optional<RowRef> row, LockRow(queue, seq, /*group=*/true));
    MQLITE_RETURN_IF_ERROR(CheckDeadLetterMessage(Facts(row), seq));
    return Must(DeadLetter(queue, *row, reason, description, now), "dead-letter");
  }

  Status DeleteMessage(const QueueRecord& queue, int64_t seq) override {
    MQLITE_ASSIGN_OR_RETURN(std::optional<RowRef> row, LockRow(queue, seq, /*group=*/true));
    MQLITE_RETURN_IF_ERROR(CheckDeleteMessage(Facts(row), seq));
    return Must(Remove(queue, *row), "delete");
  }

  // ---- Maintenance ----
  // Safe to run in every engine at once, and never waits: the rows a step
  // changes are locked as they are chosen (FOR UPDATE SKIP LOCKED: a row
  // another transaction holds is left for the next pass), a step that would
  // change a group's membership only tries the group's lock, and each
  // transition is still a CAS. A row skipped is not counted.

  Result<int64_t> PromoteDue(const QueueRecord& queue, int64_t now, int64_t limit) override {
    MQLITE_ASSIGN_OR_RETURN(PgResult r,
                            X(Q::kPromoteDue, PgParams().I(queue.id).I(now).I(limit)));
    // No lease had ended by `now` as this statement ran: a ReclaimLocks at
    // the same `now` right after (what Receive and maintenance do) has
    // nothing to read. Nothing in between can end a lease at `now` (a claim
    // or renewal sets a later end), so skipping it is running it here.
    no_ended_lease_ = r.boolean(0, 1) ? std::nullopt
                                      : std::optional<std::pair<int64_t, int64_t>>({queue.id, now});
    if (r.i64(0, 0) > 0) Woke(queue.id);
    return r.i64(0, 0);
  }

  Result<int64_t> ReclaimLocks(const QueueRecord& queue, int64_t now, bool all_locked,
                               int64_t limit) override {
    const auto probed = std::exchange(no_ended_lease_, std::nullopt);
    if (!all_locked && probed == std::make_pair(queue.id, now)) return 0;
    MQLITE_ASSIGN_OR_RETURN(
        PgResult r,
        X(Q::kExpiredLeases, PgParams().I(queue.id).I(all_locked ? INT64_MAX : now).I(limit)));
    int64_t n = 0;
    for (const RowRef& row : ReadRefs(r)) {
      MQLITE_ASSIGN_OR_RETURN(bool done, MaintainRow(queue, row, DecideReclaim(row, queue.config),
                                                     now));
      n += done ? 1 : 0;
    }
    return n;
  }

  Result<int64_t> ExpireMessages(const QueueRecord& queue, int64_t now, int64_t limit) override {
    MQLITE_ASSIGN_OR_RETURN(PgResult r,
                            X(Q::kExpiredTtl, PgParams().I(queue.id).I(now).I(limit)));
    const Verdict v = DecideExpire(queue.config);
    int64_t n = 0;
    for (const RowRef& row : ReadRefs(r)) {
      MQLITE_ASSIGN_OR_RETURN(bool done, MaintainRow(queue, row, v, now));
      n += done ? 1 : 0;
    }
    return n;
  }

  Result<int64_t> EnforceRetention(const QueueRecord& queue, const RetentionBounds& b, int64_t now,
                                   int64_t limit) override {
    if (!RetentionPass::Bounded(b)) return 0;
    MQLITE_ASSIGN_OR_RETURN(PgResult t, X(Q::kDlqTotals, PgParams().I(queue.id)));
    RetentionPass pass(b, now, t.i64(0, 0), t.i64(0, 1));
    MQLITE_ASSIGN_OR_RETURN(PgResult r,
                            X(Q::kRetentionCandidates, PgParams().I(queue.id).I(limit)));
    int64_t n = 0;
    for (int i = 0; i < r.rows(); ++i) {
      const RowRef row = ReadRef(r, i);
      if (!pass.Evict(r.i64(i, 9), row.body_size)) break;  // oldest first
      MQLITE_ASSIGN_OR_RETURN(bool done, Remove(queue, row));
      n += done ? 1 : 0;
    }
    return n;
  }

  // ---- Idempotency records ----

  Result<std::optional<DedupRecord>> FindDedup(const QueueRecord& queue, std::string_view key,
                                               int64_t now) override {
    MQLITE_RETURN_IF_ERROR(
        X(Q::kXactLock, PgParams().I(LockKey('d', schema_, queue.id, key))).status());
    MQLITE_ASSIGN_OR_RETURN(PgResult r,
                            X(Q::kFindDedup, PgParams().I(queue.id).Bytes(key).I(now)));
    if (r.rows() == 0) return std::optional<DedupRecord>();
    return std::optional<DedupRecord>(DedupRecord{r.i64(0, 0), r.bytes(0, 1), r.i64(0, 2)});
  }

  Status PutDedup(const QueueRecord& queue, std::string_view key, const DedupRecord& d) override {
    return X(Q::kPutDedup,
             PgParams().I(queue.id).Bytes(key).I(d.seq).Bytes(d.body_hash).I(d.expires_at))
        .status();
  }

  Result<bool> FindReceipt(std::string_view key, int64_t now) override {
    MQLITE_ASSIGN_OR_RETURN(PgResult r, X(Q::kFindReceipt, PgParams().Bytes(key).I(now)));
    return r.rows() > 0;
  }

  // Nothing reads its result (an upsert; a failure fails the next
  // statement or the COMMIT, and with it the transaction or savepoint): it
  // goes out with the next statement.
  Status PutReceipt(std::string_view key, int64_t expires_at) override {
    c_.Defer(q_[Q::kPutReceipt], PgParams().Bytes(key).I(expires_at));
    return Status::OK();
  }

  Result<std::optional<AttemptRecord>> FindAttempt(std::string_view id, int64_t now) override {
    MQLITE_RETURN_IF_ERROR(X(Q::kXactLock, PgParams().I(LockKey('a', schema_, 0, id))).status());
    MQLITE_ASSIGN_OR_RETURN(PgResult r, X(Q::kFindAttempt, PgParams().Bytes(id).I(now)));
    if (r.rows() == 0) return std::optional<AttemptRecord>();
    return std::optional<AttemptRecord>(AttemptRecord{
        r.i64(0, 0), static_cast<ReceiveMode>(r.i64(0, 1)), r.bytes(0, 2), r.i64(0, 3)});
  }

  Status PutAttempt(std::string_view id, const AttemptRecord& a) override {
    return X(Q::kPutAttempt, PgParams()
                                 .Bytes(id)
                                 .I(a.queue_id)
                                 .I(static_cast<int>(a.mode))
                                 .Bytes(a.payload)
                                 .I(a.expires_at))
        .status();
  }

  Result<int64_t> DropExpiredRecords(int64_t now, int64_t limit) override {
    int64_t total = 0;
    for (Q q : {Q::kDropDedup, Q::kDropReceipts, Q::kDropAttempts}) {
      MQLITE_ASSIGN_OR_RETURN(PgResult r, X(q, PgParams().I(now).I(limit)));
      total += r.affected();
    }
    return total;
  }

  // ---- Savepoints, native handle ----

  Status Savepoint(const std::function<Status(StoreTxn&)>& body) override {
    // A read runs in autocommit (txn_runner.h) and changes nothing: there
    // is nothing a savepoint could undo.
    if (read_only_) return body(*this);
    // SAVEPOINT and RELEASE go out with the statements around them. Each
    // nesting level has its own name, so a ROLLBACK TO finds its own
    // savepoint even when an inner one's RELEASE was dropped unsent.
    const std::string name = "mqlite_sp" + std::to_string(++savepoint_depth_);
    struct Depth {
      int& d;
      ~Depth() { --d; }
    } depth{savepoint_depth_};
    const size_t mark = c_.deferred();
    const uint64_t sent = c_.sent();
    c_.Defer("SAVEPOINT " + name, "savepoint");
    Status s = body(*this);
    if (s.ok()) {
      if (c_.txn_status() == PQTRANS_INERROR) {
        s = Status::Internal("savepoint: a statement failed inside it and the body carried on");
      } else {
        c_.Defer("RELEASE SAVEPOINT " + name, "release savepoint");
        return Status::OK();
      }
    }
    queues_read_.clear();  // what the body read or changed may be undone
    if (c_.sent() == sent) {  // nothing of it reached the server: forget it all
      c_.DropDeferred(mark);
      return s;
    }
    // What the body deferred since its last statement is rolled back unsent
    // (inner savepoints' RELEASEs too: rolling back to this one ends them).
    c_.DropDeferred(0);
    if (Status r = c_.Simple("ROLLBACK TO SAVEPOINT " + name, "roll back to savepoint"); !r.ok()) {
      return r;
    }
    c_.Defer("RELEASE SAVEPOINT " + name, "release savepoint");
    return s;
  }

  // Application code finds the transaction begun, and its own statements
  // planned as the server is configured (the generic plans are for the
  // store's statements): SET LOCAL, so the store's setting is back after
  // the transaction; on each call, as rolling back a savepoint undoes it.
  void* NativeHandle() override {
    handle_taken_ = true;
    c_.Defer("SET LOCAL plan_cache_mode TO DEFAULT", "plan_cache_mode for application code");
    (void)c_.Flush();  // a failure shows as the transaction's (txn_status, COMMIT)
    return c_.raw();
  }

  // Rows this transaction updated or deleted, and inserted (ReclaimSpace's
  // measures).
  int64_t changed_rows() const { return changed_rows_; }
  int64_t inserted_rows() const { return inserted_rows_; }

  Status CheckNativeTxnOpen() override {
    if (handle_taken_ && c_.txn_status() == PQTRANS_IDLE) {
      return Status::InvalidArgument(
          "Tx: the transaction was committed or rolled back through the native PGconn handle; "
          "statements run after that were not part of the Tx (SPEC §8: never COMMIT or ROLLBACK "
          "inside the callback)");
    }
    return Status::OK();
  }

 private:
  // The queue as the server has it now (GetQueue remembers it).
  Result<QueueRecord> LoadQueue(std::string_view name) {
    if (PlausibleQueueName(name)) {
      MQLITE_ASSIGN_OR_RETURN(PgResult r, X(Q::kGetQueue, PgParams().Text(name)));
      if (r.rows() == 1) return ReadQueue(r, 0);
    }
    return Status::QueueNotFound("queue '" + std::string(name) + "' does not exist");
  }

  // Runs statement `q`; with `commit`, COMMITs in the same round trip
  // (PgConn::ExecAndCommit), this transaction's notification ahead of it.
  Result<PgResult> X(Q q, const PgParams& p, bool commit = false) {
    if (prep_) {  // a statement other than the claim's comes first (store.h PrepareClaim)
      const Prep pending = *std::exchange(prep_, std::nullopt);
      MQLITE_RETURN_IF_ERROR(RunPrep(pending));
    }
    if (commit) {
      if (std::string n = Notification(); !n.empty()) c_.AfterCommit(std::move(n));
    }
    MQLITE_ASSIGN_OR_RETURN(PgResult r, commit ? c_.ExecAndCommit(q_[q], p) : c_.Exec(q_[q], p));
    const std::string_view tag = r.tag();
    if (tag.starts_with("UPDATE") || tag.starts_with("DELETE")) {
      changed_rows_ += r.affected();
    } else if (tag.starts_with("INSERT")) {
      inserted_rows_ += r.affected();
    }
    return r;
  }

  static std::string IntArray(const std::vector<int64_t>& v) {
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "}";
  }

  PgParams Config(const QueueConfig& c) {
    PgParams p;
    p.I(c.lock_duration_ms)
        .I(c.max_delivery_count)
        .I(c.default_ttl_ms)
        .Bool(c.dead_letter_on_expire)
        .I(c.dedup_window_ms)
        .I(static_cast<int>(c.ordering))
        .I(c.dlq_max_age_ms)
        .I(c.dlq_max_count)
        .I(c.dlq_max_bytes)
        .I(c.max_message_bytes);
    return p;
  }

  // The CAS prefix of a transition on `r` ($1–$4 of MQ_CAS).
  static PgParams Cas(const RowRef& r) {
    PgParams p;
    p.I(r.seq).I(static_cast<int>(r.state));
    if (r.has_token) {
      p.Bytes(TokenBytes(r.token));
    } else {
      p.Null();
    }
    p.I(r.locked_until);
    return p;
  }

  int64_t GroupLock(int64_t queue_id, const std::string& key) const {
    return LockKey('g', schema_, queue_id, key);
  }

  Result<bool> TryGroupLock(int64_t queue_id, const std::string& key) {
    MQLITE_ASSIGN_OR_RETURN(PgResult r,
                            X(Q::kXactTryLock, PgParams().I(GroupLock(queue_id, key))));
    return r.boolean(0, 0);
  }

  // Message `seq` of this queue, locked FOR UPDATE; nullopt if absent. With
  // `group`, a grouped message's group lock is taken first (lock order:
  // group, then row).
  Result<std::optional<RowRef>> LockRow(const QueueRecord& queue, int64_t seq, bool group) {
    if (group) {
      // Ungrouped (most rows): locked in this one statement.
      MQLITE_ASSIGN_OR_RETURN(PgResult r, X(Q::kLockUngrouped, PgParams().I(seq).I(queue.id)));
      if (r.rows() == 0) return std::optional<RowRef>();
      const RowRef peek = ReadRef(r, 0);
      if (r.boolean(0, kRefCols)) return std::optional<RowRef>(peek);
      // Grouped: a row's group key never changes.
      MQLITE_RETURN_IF_ERROR(
          X(Q::kXactLock, PgParams().I(GroupLock(queue.id, *peek.group_key))).status());
    }
    MQLITE_ASSIGN_OR_RETURN(PgResult r, X(Q::kLoadRefForUpdate, PgParams().I(seq).I(queue.id)));
    if (r.rows() == 0) return std::optional<RowRef>();
    return std::optional<RowRef>(ReadRef(r, 0));
  }

  Result<bool> GroupHasLiveMember(int64_t queue_id, const std::string& key) {
    MQLITE_ASSIGN_OR_RETURN(PgResult r, X(Q::kGroupHasLive, PgParams().I(queue_id).Bytes(key)));
    return r.rows() > 0;
  }

  // The lowest-seq live member becomes the head (its group lock is held).
  Status PromoteNext(int64_t queue_id, const std::string& key) {
    Woke(queue_id);
    return X(Q::kPromoteNextHead, PgParams().I(queue_id).Bytes(key)).status();
  }
  // The messages an all-or-nothing claim locked (kClaimAllOrNothing,
  // kPromoteAndClaim), in claim order.
  Result<std::vector<Message>> ReadClaimed(const PgResult& r, const QueueRecord& queue) {
    std::vector<Message> out;
    changed_rows_ += r.rows();
    for (int i = 0; i < r.rows(); ++i) {
      MQLITE_ASSIGN_OR_RETURN(Message m, ReadMessage(r, i, queue.config.name));
      out.push_back(std::move(m));
    }
    return out;
  }
  // The steps a PrepareClaim put off, run as the default does.
  Status RunPrep(const Prep& p) { return StoreTxn::PrepareClaim(p.queue, p.now, p.limit); }

  void Woke(int64_t queue_id) {
    if (std::find(woke_.begin(), woke_.end(), queue_id) == woke_.end()) woke_.push_back(queue_id);
  }

  // A transition the caller holds the row (and group) lock for must apply.
  static Status Must(Result<bool> applied, std::string_view what) {
    if (!applied.ok()) return applied.status();
    if (!*applied) {
      return Status::Internal(std::string(what) + ": the row changed under this transaction's lock");
    }
    return Status::OK();
  }

  // Deletes `r` if it is still as read; hands headship on if it had it as it
// went. False: it changed.
  Result<bool> Remove(const QueueRecord& queue, const RowRef& r) {
    MQLITE_ASSIGN_OR_RETURN(PgResult d, X(Q::kCasDelete, Cas(r)));
    if (d.rows() == 0) return false;
    if (d.boolean(0, 0) && r.group_key) MQLITE_RETURN_IF_ERROR(PromoteNext(queue.id, *r.group_key));
    return true;
  }

  Result<bool> DeadLetter(const QueueRecord& queue, const RowRef& r, std::string_view reason,
                          const std::optional<std::string>& description, int64_t now) {
    MQLITE_ASSIGN_OR_RETURN(PgResult u,
                            X(Q::kCasDeadLetter, Cas(r).I(now).Bytes(reason).OptBytes(description)));
    if (u.rows() == 0) return false;
    if (u.boolean(0, 0) && r.group_key) MQLITE_RETURN_IF_ERROR(PromoteNext(queue.id, *r.group_key));
    return true;
  }

  // Applies a store_util.h verdict to `r` (kDeliver is Claim's own).
  Result<bool> Apply(const QueueRecord& queue, const RowRef& r, const Verdict& v, int64_t now) {
    switch (v.action) {
      case Verdict::Action::kUnlock: {
        PgResult u;
        if (v.to == MessageState::kScheduled) {
          MQLITE_ASSIGN_OR_RETURN(u, X(Q::kCasUnlockScheduled, Cas(r).I(v.visible_at)));
        } else {
          MQLITE_ASSIGN_OR_RETURN(u, X(Q::kCasUnlock, Cas(r).I(static_cast<int>(v.to))));
          if (v.to == MessageState::kActive) Woke(queue.id);
        }
        return u.affected() > 0;
      }
      case Verdict::Action::kRenew: {
        MQLITE_ASSIGN_OR_RETURN(PgResult u, X(Q::kCasRenew, Cas(r).I(v.locked_until)));
        return u.affected() > 0;
      }
      case Verdict::Action::kDeadLetter:
        return DeadLetter(queue, r, v.reason, v.description, now);
      case Verdict::Action::kDelete:
        return Remove(queue, r);
      case Verdict::Action::kDeliver:
        break;
    }
    return Status::Internal("Apply: a claim verdict outside Claim");
  }

  // A maintenance step on a row it has locked: one that leaves its
  // group needs the group's lock and skips the row when it is busy.
  Result<bool> MaintainRow(const QueueRecord& queue, const RowRef& r, const Verdict& v,
                           int64_t now) {
    const bool leaves = v.action == Verdict::Action::kDeadLetter ||
                        v.action == Verdict::Action::kDelete;
    if (leaves && r.group_key) {
      MQLITE_ASSIGN_OR_RETURN(bool got, TryGroupLock(queue.id, *r.group_key));
      if (!got) return false;
    }
    return Apply(queue, r, v, now);
  }

  // Dead letters dead-lettered at or before `cutoff`, oldest first, locked.
  Result<std::vector<RowRef>> OldestDead(int64_t queue_id, int64_t cutoff, int64_t max) {
    PgParams p;
    p.I(queue_id).I(cutoff);
    if (max > 0) {
      p.I(max);
    } else {
      p.Null();
    }
    MQLITE_ASSIGN_OR_RETURN(PgResult r, X(Q::kOldestDeadLocked, p));
    return ReadRefs(r);
  }

  PgConn& c_;
  const PgQueries& q_;
  const std::string& schema_;
  const bool read_only_;
  bool handle_taken_ = false;  // NativeHandle() was called
  QueueCache* const cache_;
  std::vector<QueueRecord> queues_read_;  // GetQueue's reads in this transaction
  std::set<int64_t> from_cache_;          // ... those that came from cache_
  bool queues_changed_ = false;
  std::vector<int64_t> woke_;  // woke()
  int64_t changed_rows_ = 0;   // rows updated or deleted: dead tuples once committed
  int64_t inserted_rows_ = 0;  // rows inserted (with changed_rows_: ANALYZE's measure)
  int savepoint_depth_ = 0;
  // (queue, now) for which PromoteDue found no ended lease (ReclaimLocks).
  std::optional<std::pair<int64_t, int64_t>> no_ended_lease_;
  const std::string channel_;
  NotifyCoalescer* const coalescer_;
  std::vector<int64_t> later_;  // later()
  bool final_call_ = false;     // FinalCallFollows, until the call that takes it
  // PrepareClaim's steps, until the Claim (or any other statement) takes them.
  std::optional<Prep> prep_;
};

// ---- Change feed: LISTEN/NOTIFY ----------------------------------------------

// One listening session per store, started by the first Subscribe. Every
// notification on the store's channel names the queues a commit touched;
// they go to the store's ChangeHub. When the session is lost, it reconnects
// and then wakes every queue once, since notifications sent meanwhile are
// gone (spurious wake-ups are allowed, missed ones are not).
//
// Watches (ChangeSubscription::Watch, spec.md §9): commits announce a queue
// only while some engine watches it (NotifySql), and this session holds a
// shared advisory lock on the queue's 'w' key for each queue a long-poll of
// this store watches — kept for kWatchLinger after the last watcher left,
// so a queue whose waiters come and go costs one lock, not one per wait.
// The locks die with the session; a reconnect takes them again before it
// wakes every queue.
class Listener {
 public:
  using Clock = std::chrono::steady_clock;
  // `queues_changed` is called when another engine reports a queue change
  // ("*" in a notification) and after a reconnect (what was missed is
  // unknown).
  Listener(std::string url, std::string schema, std::string channel,
           std::shared_ptr<ChangeHub> hub, std::function<void()> queues_changed)
      : url_(std::move(url)),
        schema_(std::move(schema)),
        channel_(std::move(channel)),
        hub_(std::move(hub)),
        queues_changed_(std::move(queues_changed)) {}
  ~Listener() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    Poke();  // ends the poll at once
    if (thread_.joinable()) thread_.join();
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }

  // Connects and LISTENs before returning, so no commit after Subscribe
  // returns can be missed; then watches on a thread of its own.
  Status Start() {
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) return Status::Internal("PostgreSQL change feed: eventfd failed");
    MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<PgConn> c, Connect());
    thread_ = std::thread([this, c = std::move(c)]() mutable { Loop(std::move(c)); });
    return Status::OK();
  }

  // Adds a watcher of `queue_id` and returns once this session holds the
  // queue's watch lock (or Unavailable after kWatchWait: the session is
  // down; the watcher is removed again). *held_since_before: it held the
  // lock, without a gap, since before `since`.
  Status Watch(int64_t queue_id, Clock::time_point since, bool* held_since_before) {
    std::unique_lock<std::mutex> l(mu_);
    Watched& w = watched_[queue_id];
    ++w.holders;
    *held_since_before = w.locked && w.locked_at < since;
    if (w.locked) return Status::OK();
    if (connected_) {  // `w` stays valid: an entry with a holder is never erased
      l.unlock();
      Poke();
      l.lock();
      cv_.wait_for(l, kWatchWait, [&] { return stop_ || !connected_ || w.locked; });
      if (w.locked) return Status::OK();
    }
    Unwatch(queue_id, l);
    return Status::Unavailable("PostgreSQL change feed: could not watch queue " +
                               std::to_string(queue_id) + " (listening session unavailable)");
  }
  void Unwatch(int64_t queue_id) {
    std::unique_lock<std::mutex> l(mu_);
    Unwatch(queue_id, l);
  }

 private:
  struct Watched {
    int holders = 0;
    bool locked = false;          // this session holds the queue's watch lock
    Clock::time_point locked_at;  // when it took it (after the server granted it)
    Clock::time_point idle;       // when holders last fell to 0
  };
  static constexpr std::chrono::milliseconds kWatchLinger{1'000};
  static constexpr std::chrono::milliseconds kWatchWait{1'000};

  // The last watcher gone: the thread starts timing the linger.
  void Unwatch(int64_t queue_id, std::unique_lock<std::mutex>& l) {
    auto it = watched_.find(queue_id);
    if (it == watched_.end() || --it->second.holders > 0) return;
    it->second.idle = Clock::now();
    if (!it->second.locked) {
      watched_.erase(it);
      return;
    }
    l.unlock();
    Poke();
    l.lock();
  }

  void Poke() {
    const uint64_t one = 1;
    if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
  }

  Result<std::unique_ptr<PgConn>> Connect() {
    MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<PgConn> c, PgConn::Connect(url_));
    MQLITE_RETURN_IF_ERROR(c->Simple("LISTEN " + channel_, "LISTEN for the change feed"));
    return c;
  }

  // Takes the watch locks that are wanted and not held, and lets go of
  // those idle past the linger, in one round trip. False: the statement
  // failed (the caller then drops the session, and the locks with it).
  bool SyncWatches(PgConn& conn) {
    std::vector<int64_t> take, drop;
    {
      std::lock_guard<std::mutex> l(mu_);
      const auto now = Clock::now();
      for (auto& [id, w] : watched_) {
        if (w.holders > 0 && !w.locked) take.push_back(id);
        if (w.holders == 0 && w.locked && now - w.idle >= kWatchLinger) {
          // Not held from now on: a Watch arriving during the round trip
          // waits for the next one to take the lock again.
          w.locked = false;
          drop.push_back(id);
        }
      }
    }
    if (take.empty() && drop.empty()) return true;
    std::string sql;
    for (int64_t id : take) {
      sql += "SELECT pg_advisory_lock_shared(" + std::to_string(LockKey('w', schema_, id)) + ");";
    }
    for (int64_t id : drop) {
      sql += "SELECT pg_advisory_unlock_shared(" + std::to_string(LockKey('w', schema_, id)) + ");";
    }
    if (!conn.Simple(sql, "watch queues for the change feed").ok()) return false;
    {
      std::lock_guard<std::mutex> l(mu_);
      const auto now = Clock::now();
      for (int64_t id : take) {
        watched_[id].locked = true;
        watched_[id].locked_at = now;
      }
      for (int64_t id : drop) {
        auto it = watched_.find(id);
        if (it != watched_.end() && it->second.holders == 0 && !it->second.locked) {
          watched_.erase(it);
        }
      }
    }
    cv_.notify_all();
    return true;
  }

  // How long the poll may sleep: until the next watch lock may be let go
  // (-1: none lingers).
  int PollTimeoutMs() {
    std::lock_guard<std::mutex> l(mu_);
    auto next = Clock::time_point::max();
    for (const auto& [id, w] : watched_) {
      if (w.locked && w.holders == 0) next = std::min(next, w.idle + kWatchLinger);
    }
    if (next == Clock::time_point::max()) return -1;
    const auto ms =
        std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
    return static_cast<int>(std::max<int64_t>(0, ms));
  }

  void Loop(std::unique_ptr<PgConn> conn) {
    for (;;) {
      {
        std::lock_guard<std::mutex> l(mu_);
        if (stop_) return;
      }
      if (!conn || conn->broken()) {
        {
          std::lock_guard<std::mutex> l(mu_);
          connected_ = false;
          for (auto& [id, w] : watched_) w.locked = false;  // they went with the old session
        }
        cv_.notify_all();  // waiting watchers give up
        conn.reset();
        pollfd stop{wake_fd_, POLLIN, 0};
        if (::poll(&stop, 1, 100) > 0) {
          Drain();
          continue;  // stopping, or a watcher that will find the session down
        }
        auto c = Connect();
        if (!c.has_value()) continue;
        conn = std::move(*c);
        if (!SyncWatches(*conn)) {
          conn.reset();
          continue;
        }
        {
          std::lock_guard<std::mutex> l(mu_);
          connected_ = true;
        }
        queues_changed_();
        WakeAll(*conn);
      }
      if (!SyncWatches(*conn)) {
        conn.reset();
        continue;
      }
      Dispatch(*conn);  // what arrived during the round trip
      pollfd pfd[2] = {{PQsocket(conn->raw()), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      const int n = ::poll(pfd, 2, PollTimeoutMs());
      if (n <= 0) continue;
      if (pfd[1].revents & POLLIN) Drain();
      if ((pfd[0].revents & (POLLIN | POLLERR | POLLHUP)) && PQconsumeInput(conn->raw()) == 0) {
        conn.reset();
        continue;
      }
      Dispatch(*conn);
    }
  }

  void Drain() {
    uint64_t v = 0;
    (void)!::read(wake_fd_, &v, sizeof v);
  }

  void Dispatch(PgConn& conn) {
    std::vector<int64_t> ids;
    bool queues = false;
    while (PGnotify* n = PQnotifies(conn.raw())) {
      Parse(n->extra ? n->extra : "", &ids, &queues);
      PQfreemem(n);
    }
    if (queues) queues_changed_();  // before the wake-ups, which may read them
    if (!ids.empty()) hub_->Publish(ids);
  }

  void WakeAll(PgConn& conn) {
    auto r = conn.Query(FillSchema("SELECT id FROM {s}.queues", schema_), "list queues");
    if (!r.has_value()) return;
    std::vector<int64_t> ids;
    for (int i = 0; i < r->rows(); ++i) ids.push_back(r->i64(i, 0));
    hub_->Publish(ids);
  }

  static void Parse(std::string_view s, std::vector<int64_t>* ids, bool* queues) {
    size_t pos = 0;
    while (pos < s.size()) {
      size_t end = s.find(',', pos);
      if (end == std::string_view::npos) end = s.size();
      if (s.substr(pos, end - pos) == "*") *queues = true;
      int64_t v = 0;
      bool ok = end > pos;
      for (size_t i = pos; i < end; ++i) {
        ok = ok && s[i] >= '0' && s[i] <= '9';
        v = v * 10 + (s[i] - '0');
      }
      if (ok && std::find(ids->begin(), ids->end(), v) == ids->end()) ids->push_back(v);
      pos = end + 1;
    }
  }

  const std::string url_, schema_, channel_;
  std::shared_ptr<ChangeHub> hub_;
  const std::function<void()> queues_changed_;
  std::mutex mu_;
  std::condition_variable cv_;  // a watch lock taken; stopping
  bool stop_ = false;
  bool connected_ = true;  // false from a lost session until the next one holds the locks
  std::map<int64_t, Watched> watched_;
  int wake_fd_ = -1;  // written to stop the thread or to ask for a watch lock
  std::thread thread_;
};

// A subscription of the store's hub whose Watch goes to the listener.
class PgSubscription final : public ChangeSubscription {
 public:
  PgSubscription(std::unique_ptr<ChangeSubscription> hub_sub, Listener* listener)
      : hub_sub_(std::move(hub_sub)), listener_(listener) {}

  Result<std::unique_ptr<FeedWatch>> Watch(
      int64_t queue_id, std::chrono::steady_clock::time_point claim_began) override {
    bool held = false;
    MQLITE_RETURN_IF_ERROR(listener_->Watch(queue_id, claim_began, &held));
    auto w = std::make_unique<Held>(listener_, queue_id);
    w->claim_again = !held;
    return std::unique_ptr<FeedWatch>(std::move(w));
  }

 private:
  class Held final : public FeedWatch {
   public:
    Held(Listener* l, int64_t q) : l_(l), q_(q) {}
    ~Held() override { l_->Unwatch(q_); }

   private:
    Listener* l_;
    int64_t q_;
  };
  std::unique_ptr<ChangeSubscription> hub_sub_;
  Listener* listener_;  // the store's; outlives every subscription (Store::Subscribe)
};

// ---- Session advisory locks: maintenance try-locks and the registration ----
//
// One session per store holds them all: a lock dies with its session, so a
// crashed engine leaves nothing locked (spec.md §9). If the session is lost,
// its locks went with it; the next use reconnects.

struct LockSession {
  std::mutex mu;
  std::string url;
  std::unique_ptr<PgConn> conn;
  std::set<int64_t> held;  // maintenance keys held through `conn`

  // Under mu.
  Status EnsureConnected() {
    if (conn && !conn->broken()) return Status::OK();
    held.clear();  // they went with the old session
    MQLITE_ASSIGN_OR_RETURN(conn, PgConn::Connect(url));
    return Status::OK();
  }
};

class PgMaintenanceLock final : public MaintenanceLock {
 public:
  PgMaintenanceLock(std::shared_ptr<LockSession> s, PgConn* conn, int64_t key,
                    const Statement& unlock)
      : s_(std::move(s)), conn_(conn), key_(key), unlock_(unlock) {}
  ~PgMaintenanceLock() override {
    std::lock_guard<std::mutex> l(s_->mu);
    // A replaced or broken session took the lock with it.
    if (s_->conn.get() == conn_ && !conn_->broken()) {
      s_->held.erase(key_);
      (void)conn_->Exec(unlock_, PgParams().I(key_));
    }
  }

 private:
  std::shared_ptr<LockSession> s_;
  PgConn* conn_;
  int64_t key_;
  Statement unlock_;
};

class PgRegistration final : public EngineRegistration {
 public:
  PgRegistration(std::shared_ptr<LockSession> s, PgConn* conn, std::string schema, int64_t id)
      : s_(std::move(s)), conn_(conn), schema_(std::move(schema)), id_(id) {}
  // Deleting the row and unlocking are a courtesy: the session's end drops
  // the advisory lock, which alone marks the row stale for the next opener.
  ~PgRegistration() override {
    std::lock_guard<std::mutex> l(s_->mu);
    if (s_->conn.get() != conn_ || conn_->broken()) return;
    (void)conn_->Simple(FillSchema("DELETE FROM {s}.engines WHERE id = ", schema_) +
                            std::to_string(id_) + "; SELECT pg_advisory_unlock(" +
                            std::to_string(LockKey('e', schema_, id_)) + "::bigint)",
                        "withdraw the engine registration");
  }

 private:
  std::shared_ptr<LockSession> s_;
  PgConn* conn_;
  std::string schema_;
  int64_t id_;
};

// ---- The store -------------------------------------------------------------------

class PgStore final : public Store {
 public:
  PgStore(PostgresOptions options, std::unique_ptr<PgPool> pool)
      : options_(std::move(options)),
        queries_(options_.schema),
        pool_(std::move(pool)),
        channel_("mqlite_" + options_.schema.substr(0, 56)),
        hub_(ChangeHub::Create()),
        queue_cache_(std::chrono::milliseconds(options_.queue_cache_ms)),
        locks_(std::make_shared<LockSession>()) {
    locks_->url = options_.url;
    if (options_.change_feed && options_.notify_coalesce_ms > 0) {
      coalescer_ = std::make_unique<NotifyCoalescer>(
          options_.url, options_.schema, channel_,
          std::chrono::milliseconds(options_.notify_coalesce_ms));
    }
  }
  ~PgStore() override {
    listener_.reset();
    std::lock_guard<std::mutex> l(locks_->mu);
    locks_->conn.reset();
  }

  StoreCapabilities Capabilities() const override {
    StoreCapabilities c;
    c.exclusive = false;
    c.native_handle_type = "PGconn";
    c.crash_model = "process";
    c.name = "postgres";
    c.write_concurrency = options_.pool_size;
    c.commits_with_final_call = true;
    c.change_feed = options_.change_feed;
    c.feed_watch_after_ms = options_.notify_coalesce_ms;
    c.maintenance_lock = true;
    c.engine_registry = true;
    return c;
  }

  Status Run(TxnKind kind, const RunOptions& options,
             const std::function<Status(StoreTxn&)>& body) override {
    const bool read = kind == TxnKind::kRead;
    std::vector<int64_t> touched, later;
    int64_t changed = 0, inserted = 0;
    bool queues_changed = false;
    // Whatever the outcome, a transaction that changed a queue leaves the
    // cache empty behind it (QueueCache).
    struct DropAfter {
      QueueCache& cache;
      const bool& changed;
      ~DropAfter() {
        if (changed) cache.Drop();
      }
    } drop_after{queue_cache_, queues_changed};
    const Status st = RunTransaction(
        *pool_, options, read, read ? "read transaction" : "write transaction",
        [&](PgConn& conn) -> Status {
          const bool cache = !read && options.rerunnable && options_.queue_cache_ms > 0;
          PgTxn txn(conn, queries_, options_.schema, read, cache ? &queue_cache_ : nullptr,
                    read || !options_.change_feed ? "" : channel_, coalescer_.get());
          // What the attempt did, kept however it ends (a rerun adds to
          // queues_changed: any attempt may have changed a queue).
          struct Tally {
            PgTxn& t;
            int64_t& changed;
            int64_t& inserted;
            bool& queues;
            std::vector<int64_t>& later;
            ~Tally() {
              changed = t.changed_rows();
              inserted = t.inserted_rows();
              queues = queues || t.queues_changed();
              later = t.later();
            }
          } tally{txn, changed, inserted, queues_changed, later};
          if (read || !options_.change_feed) return body(txn);
          MQLITE_RETURN_IF_ERROR(body(txn));
          touched = txn.woke();
          // Sent with the COMMIT; a final call that committed sent it already.
          if (!conn.ended()) {
            if (std::string n = txn.Notification(); !n.empty()) conn.AfterCommit(std::move(n));
          }
          return Status::OK();
        });
    // What the commit did not announce, announced after it (if it may have
    // committed at all).
    if (coalescer_ && !later.empty() && (st.ok() || st.code() == StatusCode::kOutcomeUnknown)) {
      coalescer_->Later(later);
    }
    MQLITE_RETURN_IF_ERROR(st);
    dead_since_vacuum_.fetch_add(changed, std::memory_order_relaxed);
    written_since_analyze_.fetch_add(changed + inserted, std::memory_order_relaxed);
    // This process's own subscribers need not wait for the notification.
    if (!touched.empty()) hub_->Publish(touched);
    return Status::OK();
  }

  // Space and plans (spec.md §1 "Space reclaim", §11). Updated and deleted
  // rows leave dead tuples that only VACUUM makes reusable, and a backlog
  // that grew fast leaves the planner's statistics describing a table a
  // fraction of its size (a claim then sorted a 100,000-message queue: the
  // bench's claim_backlog/100000 took 18 ms a claim). Autovacuum fixes both
  // on its own schedule (up to a minute late); this does it as soon as the
  // rows committed through this store object pass max(budget, 1,000) and
  // autovacuum's scale factors — VACUUM ANALYZE of the backlog tables once
  // the dead rows reach a fifth of the messages table, else ANALYZE of it
  // once the rows written reach a tenth. A messages table never analyzed is
  // analyzed once 50 rows were written (autovacuum's threshold): the pool's
  // sessions keep generic plans (queries.h), and one made on a fresh, empty
  // table may scan or seek the wrong index — an ANALYZE has every session
  // plan again, with statistics. Neither blocks reads or writes;
  // SKIP_LOCKED leaves a table another engine is at. It runs on a session of
  // its own: VACUUM cannot run in a transaction, and the pool's sessions are
  // read-only by default. statement_timeout follows the call's deadline.
  // Returns the dead rows a VACUUM was run for.
  Result<int64_t> ReclaimSpace(const RunOptions& options, int64_t budget) override {
    const int64_t dead = dead_since_vacuum_.load(std::memory_order_relaxed);
    const int64_t written = written_since_analyze_.load(std::memory_order_relaxed);
    const int64_t least = std::max<int64_t>(budget, 1'000);
    const bool fresh = !seen_analyzed_.load(std::memory_order_relaxed);
    if (dead < least && written < (fresh ? kFreshAnalyzeRows : least)) return int64_t{0};
    std::lock_guard<std::mutex> l(vacuum_mu_);
    if (!vacuum_conn_ || vacuum_conn_->broken()) {
      vacuum_conn_.reset();
      MQLITE_ASSIGN_OR_RETURN(vacuum_conn_, PgConn::Connect(options_.url));
    }
    PgConn& c = *vacuum_conn_;
    const std::string& s = options_.schema;
    MQLITE_ASSIGN_OR_RETURN(
        PgResult size,
        c.Query(FillSchema("SELECT reltuples::bigint FROM pg_class WHERE oid = '{s}.messages'::regclass",
                           s),
                "the messages table's size"));
    const int64_t reltuples = size.i64(0, 0);  // -1: never analyzed
    const bool never_analyzed = reltuples < 0;
    if (!never_analyzed) seen_analyzed_.store(true, std::memory_order_relaxed);
    const int64_t live = std::max<int64_t>(0, reltuples);
    const bool vacuum = dead >= least && dead >= live / 5;
    const bool analyze = (written >= least && written >= live / 10) ||
                         (never_analyzed && written >= kFreshAnalyzeRows);
    if (!vacuum && !analyze) return int64_t{0};
    int64_t timeout_ms = 0;  // none
    if (options.deadline != std::chrono::steady_clock::time_point::max()) {
      timeout_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       options.deadline - std::chrono::steady_clock::now())
                       .count();
      if (timeout_ms <= 0) {
        return Status::Cancelled("PostgreSQL store: no time left to VACUUM; nothing was done");
      }
    }
    MQLITE_RETURN_IF_ERROR(
        c.Simple("SET statement_timeout = " + std::to_string(timeout_ms), "statement_timeout"));
    if (vacuum) {
      MQLITE_RETURN_IF_ERROR(c.Simple(
          FillSchema("VACUUM (SKIP_LOCKED, ANALYZE) {s}.messages, {s}.receipts, {s}.dedup, "
                     "{s}.attempts",
                     s),
          "VACUUM ANALYZE"));
      dead_since_vacuum_.fetch_sub(dead, std::memory_order_relaxed);
    } else {
      MQLITE_RETURN_IF_ERROR(
          c.Simple(FillSchema("ANALYZE (SKIP_LOCKED) {s}.messages", s), "ANALYZE"));
    }
    written_since_analyze_.fetch_sub(written, std::memory_order_relaxed);
    return vacuum ? dead : int64_t{0};
  }

  Result<std::unique_ptr<ChangeSubscription>> Subscribe(ChangeCallback on_change) override {
    if (!options_.change_feed) return Store::Subscribe(std::move(on_change));
    {
      std::lock_guard<std::mutex> l(listener_mu_);
      if (!listener_) {
        auto listener = std::make_unique<Listener>(options_.url, options_.schema, channel_, hub_,
                                                   [this] { queue_cache_.Drop(); });
        MQLITE_RETURN_IF_ERROR(listener->Start());
        listener_ = std::move(listener);
      }
    }
    return std::unique_ptr<ChangeSubscription>(
        std::make_unique<PgSubscription>(hub_->Subscribe(std::move(on_change)), listener_.get()));
  }

  Result<std::unique_ptr<MaintenanceLock>> TryLockMaintenance(int64_t queue_id) override {
    const int64_t key = LockKey('m', options_.schema, queue_id);
    std::lock_guard<std::mutex> l(locks_->mu);
    MQLITE_RETURN_IF_ERROR(locks_->EnsureConnected());
    if (locks_->held.count(key)) return std::unique_ptr<MaintenanceLock>();
    MQLITE_ASSIGN_OR_RETURN(PgResult r,
                            locks_->conn->Exec(queries_[Q::kSessionTryLock], PgParams().I(key)));
    if (!r.boolean(0, 0)) return std::unique_ptr<MaintenanceLock>();
    locks_->held.insert(key);
    return std::unique_ptr<MaintenanceLock>(std::make_unique<PgMaintenanceLock>(
        locks_, locks_->conn.get(), key, queries_[Q::kSessionUnlock]));
  }

  // store.h RegisterEngine: one transaction on the store's lock session,
  // which then holds the row's advisory lock for the engine's life.
  Result<std::unique_ptr<EngineRegistration>> RegisterEngine(
      const EngineDefaults& defaults) override {
    std::lock_guard<std::mutex> l(locks_->mu);
    MQLITE_RETURN_IF_ERROR(locks_->EnsureConnected());
    PgConn* c = locks_->conn.get();
    const std::string& s = options_.schema;
    auto key_sql = [&](std::string_view fn, int64_t id) {
      return std::string("SELECT ") + std::string(fn) + "(" +
             std::to_string(LockKey('e', s, id)) + "::bigint)";
    };
    MQLITE_RETURN_IF_ERROR(
        c->Simple(FillSchema("BEGIN; LOCK TABLE {s}.engines IN SHARE ROW EXCLUSIVE MODE", s),
                  "begin the engine registration"));
    Result<int64_t> id = [&]() -> Result<int64_t> {
      MQLITE_ASSIGN_OR_RETURN(
          PgResult rows,
          c->Query(FillSchema("SELECT id, dlq_max_age_ms, dlq_max_count, dlq_max_bytes "
                              "FROM {s}.engines ORDER BY id",
                              s),
                   "read the engine registry"));
      for (int i = 0; i < rows.rows(); ++i) {
        const int64_t other = rows.i64(i, 0);
        MQLITE_ASSIGN_OR_RETURN(PgResult t,
                                c->Query(key_sql("pg_try_advisory_lock", other), "probe"));
        if (t.boolean(0, 0)) {  // its owner's session is gone: a stale row
          MQLITE_RETURN_IF_ERROR(c->Simple(
              key_sql("pg_advisory_unlock", other) + "; " +
                  FillSchema("DELETE FROM {s}.engines WHERE id = ", s) + std::to_string(other),
              "drop a stale registration"));
          continue;
        }
        EngineDefaults live;
        live.dlq_retention = {rows.i64(i, 1), rows.i64(i, 2), rows.i64(i, 3)};
        MQLITE_RETURN_IF_ERROR(CheckAgreedDefaults(defaults, live));
      }
      const auto& d = defaults.dlq_retention;
      const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
      MQLITE_ASSIGN_OR_RETURN(
          PgResult ins,
          c->Query(FillSchema("INSERT INTO {s}.engines (dlq_max_age_ms, dlq_max_count, "
                              "dlq_max_bytes, registered_at) VALUES (",
                              s) +
                       std::to_string(d.max_age_ms) + ", " + std::to_string(d.max_count) +
                       ", " + std::to_string(d.max_bytes) + ", " + std::to_string(now) +
                       ") RETURNING id",
                   "register the engine"));
      const int64_t mine = ins.i64(0, 0);
      // Session-level: it outlives this transaction and dies with the session.
      MQLITE_RETURN_IF_ERROR(c->Simple(key_sql("pg_advisory_lock", mine), "hold the registration"));
      return mine;
    }();
    if (!id.has_value()) {
      c->Rollback();
      return id.error();
    }
    MQLITE_RETURN_IF_ERROR(c->Commit());
    return std::unique_ptr<EngineRegistration>(
        std::make_unique<PgRegistration>(locks_, c, s, *id));
  }

 private:
  const PostgresOptions options_;
  const PgQueries queries_;
  std::unique_ptr<PgPool> pool_;
  const std::string channel_;
  std::shared_ptr<ChangeHub> hub_;
  QueueCache queue_cache_;  // before the listener, which drops it
  std::mutex listener_mu_;
  std::unique_ptr<Listener> listener_;
  std::shared_ptr<LockSession> locks_;
  std::unique_ptr<NotifyCoalescer> coalescer_;  // null: every commit notifies
  // Rows committed through this store: updated or deleted since the last
  // VACUUM; inserted, updated or deleted since the last ANALYZE.
  std::atomic<int64_t> dead_since_vacuum_{0};
  std::atomic<int64_t> written_since_analyze_{0};
  // ReclaimSpace found the messages table analyzed (by anyone) once.
  std::atomic<bool> seen_analyzed_{false};
  static constexpr int64_t kFreshAnalyzeRows = 50;
  std::mutex vacuum_mu_;
  std::unique_ptr<PgConn> vacuum_conn_;
};

}  // namespace
}  // namespace pg_internal

Result<std::unique_ptr<Store>> OpenPostgresStore(const PostgresOptions& options) {
  using namespace pg_internal;
  if (options.url.empty()) {
    return Status::InvalidArgument("PostgreSQL store: no connection URL given");
  }
  if (options.pool_size < 1) {
    return Status::InvalidArgument("PostgreSQL store: pool_size must be at least 1, got " +
                                   std::to_string(options.pool_size));
  }
  MQLITE_RETURN_IF_ERROR(CheckSchemaName(options.schema));
  if (options.notify_coalesce_ms < 0 || options.notify_coalesce_ms > 1'000) {
    return Status::InvalidArgument("PostgreSQL store: notify_coalesce_ms must be 0–1,000, got " +
                                   std::to_string(options.notify_coalesce_ms));
  }
  if (options.queue_cache_ms < 0 || options.queue_cache_ms > 3'600'000) {
    return Status::InvalidArgument("PostgreSQL store: queue_cache_ms must be 0–3,600,000, got " +
                                   std::to_string(options.queue_cache_ms));
  }
  std::string sync;
  switch (options.durability) {
    case Durability::kNormal:
    case Durability::kFull: sync = "on"; break;
    case Durability::kProcessOnly: sync = "off"; break;
    default:
      return Status::InvalidArgument("PostgreSQL store: unknown durability level " +
                                     std::to_string(static_cast<int>(options.durability)));
  }
  MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<PgConn> first, PgConn::Connect(options.url));
  MQLITE_RETURN_IF_ERROR(EnsureSchema(*first, options.schema));
  PgPoolOptions po;
  po.url = options.url;
  po.max_connections = options.pool_size;
  // Generic plans (queries.h): PostgreSQL's default (`auto`) kept planning
  // the claim afresh on every Receive — 0.3–0.5 ms against 0.1 ms to run it
  // (pg_stat_statements, claim_paired/1000000) — because the claim's generic
  // cost estimate is higher than its custom ones. A Tx's application code
  // gets the server's setting back (NativeHandle).
  po.session_setup = {"SET bytea_output TO hex", "SET synchronous_commit TO " + sync,
                      kReadOnlyByDefault, kGenericPlans};
  MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<PgPool> pool, PgPool::Create(std::move(po)));
  MQLITE_RETURN_IF_ERROR(pool->Adopt(std::move(first)));  // the pool's first connection
  return std::unique_ptr<Store>(std::make_unique<PgStore>(options, std::move(pool)));
}

}  // namespace mqlite
