// The LMDB store. Layout: layout.h; design, durability and map sizing:
// docs/lmdb-store.md.
//
// Concurrency: LMDB admits one write transaction at a time and any number of
// readers beside it (MVCC). mdb_txn_begin blocks on LMDB's writer mutex and
// cannot be cancelled, so writers first pass a RunGate (cancellable, spec.md
// §10); readers go straight to LMDB. Growing the map (mdb_env_set_mapsize)
// needs no transaction open in the process: every transaction holds
// resize_mu_ shared, a resize holds it exclusively.
//
// Rollback: a Run's body works in one write transaction; a Savepoint is a
// nested write transaction (so never MDB_WRITEMAP). MDB_MAP_FULL anywhere in
// a body grows the map (doubling, up to LmdbOptions::max_map_bytes) and
// reruns the body when it is rerunnable.
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "layout.h"
#include "mqlite/engine.h"
#include "mqlite/file_lock.h"
#include "mqlite/lmdb.h"
#include "mqlite/store_util.h"
#include "probe.h"

namespace mqlite {

const char* const kLmdbSchemaToken = "mqlite-lmdb-2";

namespace lmdb_internal {
namespace {

constexpr char kHandleType[] = "MDB_txn";
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr char kSchemaKey[] = "schema";
constexpr char kLastSeqKey[] = "last_seq";
constexpr char kLastQueueKey[] = "last_queue_id";
// Named databases an environment may hold: ours and the application's (§8).
constexpr unsigned kMaxDbs = 128;
// At the map cap, sends stop while this share of the map is still free, so
// settles and purges (which need fresh pages too: LMDB copies on write) can
// drain the backlog.
constexpr int64_t kHeadroomDivisor = 16;
constexpr int64_t kMinHeadroomPages = 64;

int S(MessageState s) { return static_cast<int>(s); }

MDB_val V(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
std::string_view SV(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

// SPEC §10: an LMDB return code as a Status naming what was being done.
Status LmdbStatus(int rc, const std::string& what) {
  const std::string msg = what + ": " + mdb_strerror(rc);
  switch (rc) {
    case MDB_MAP_FULL:
      return Status::StoreFull(msg);
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID:
      return Status::Corruption(msg);
    case MDB_VERSION_MISMATCH:
      return Status::SchemaVersionMismatch(msg);
    case MDB_READERS_FULL:
    case MDB_MAP_RESIZED:
    case MDB_TXN_FULL:
    case MDB_CURSOR_FULL:
    case MDB_PAGE_FULL:
      return Status::Unavailable(msg);
    default:
      if (rc > 0) return OsErrorStatus(rc, what);
      return Status::Internal(msg);
  }
}

std::string Mib(int64_t bytes) {
  if (bytes < (int64_t{1} << 20)) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes >> 20) + " MiB";
}

// Index keys of a row; nullopt = not in that index (layout.h).
std::optional<Key> ClaimKeyOf(int64_t seq, const Row& r) {
  if (!InClaimIndex(r.state, r.is_head)) return std::nullopt;
  return IndexKey(kClaim, r.queue_id, -static_cast<int64_t>(r.priority), seq);
}
std::optional<Key> RedrivenKeyOf(int64_t seq, const Row& r) {
  if (!r.redriven || !InClaimIndex(r.state, r.is_head)) return std::nullopt;
  return IndexKey(kRedriven, r.queue_id, r.enqueued_at, seq);
}
std::optional<Key> GroupKeyOf(int64_t seq, const Row& r) {
  if (!InGroupIndex(r.state, r.group_key.has_value())) return std::nullopt;
  return GroupKey(r.queue_id, *r.group_key, seq);
}
std::optional<Key> DueKeyOf(int64_t seq, const Row& r) {
  if (r.state != MessageState::kScheduled) return std::nullopt;
  return IndexKey(kDue, r.queue_id, r.visible_at, seq);
}
std::optional<Key> LeaseKeyOf(int64_t seq, const Row& r) {
  if (r.state != MessageState::kLocked) return std::nullopt;
  return IndexKey(kLease, r.queue_id, r.locked_until, seq);
}
std::optional<Key> TtlKeyOf(int64_t seq, const Row& r) {
  if (!InTtlIndex(r)) return std::nullopt;
  return IndexKey(kTtl, r.queue_id, r.expires_at, seq);
}
std::optional<Key> DlqKeyOf(int64_t seq, const Row& r) {
  if (r.state != MessageState::kDeadLettered) return std::nullopt;
  return IndexKey(kDlq, r.queue_id, r.dead_lettered_at, seq);
}
std::optional<Key> StateKeyOf(int64_t seq, const Row& r) {
  return IndexKey(kByState, r.queue_id, StateClass(r.state), seq);
}

// The Message of row `seq` (header `r`, payload bytes `payload`).
Result<Message> ToMessage(int64_t seq, const Row& r, std::string_view payload,
                          const std::string& queue_name) {
  MQLITE_ASSIGN_OR_RETURN(RowPayload p, DecodePayload(payload));
  return mqlite::ToMessage(seq, queue_name, r, std::move(p));
}

class LmdbStore;

// The committed queue records of the store (config, counters, last seq), by
// id and by name, so that a write transaction neither looks its queue up in
// two sub-databases nor decodes its record: the store is exclusive (SPEC §9),
// so only its own transactions change them. Only write transactions use it,
// and they run one at a time. A transaction fills it with what it reads
// before changing it, and publishes its queue records after its commit; one
// that creates, changes or deletes a queue clears it instead when it ends,
// whether it committed or not (LmdbStore::Run).
class QueueCache {
 public:
  std::optional<int64_t> IdOf(std::string_view name) const {
    auto it = ids_.find(name);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }
  const QueueData* Find(int64_t id) const {
    auto it = data_.find(id);
    return it == data_.end() ? nullptr : &it->second;
  }
  void Put(int64_t id, const QueueData& q) {
    ids_.insert_or_assign(q.config.name, id);
    data_.insert_or_assign(id, q);
  }
  void Clear() {
    ids_.clear();
    data_.clear();
  }

 private:
  std::map<std::string, int64_t, std::less<>> ids_;
  std::map<int64_t, QueueData> data_;
};

class LmdbTxn final : public StoreTxn {
 public:
  LmdbTxn(LmdbStore* store, MDB_txn* txn, bool read_only);
  ~LmdbTxn() override { CloseCursors(); }

  bool map_full() const { return map_full_; }
  bool poisoned() const { return poisoned_; }
  // Whether this transaction created, changed or deleted a queue: the
  // store's queue cache is then dropped when it ends (LmdbStore::Run).
  bool queues_changed() const { return queues_changed_; }
  // After the commit: this transaction's queue records are the committed ones.
  void PublishQueues() {
    for (const auto& [id, slot] : queues_) {
      if (!slot.erased) store_queue_cache_->Put(id, slot.data);
    }
  }
  // One read through the transaction: 0, or the error every call now gets
  // (MDB_BAD_TXN once an LMDB call failed inside it; then poisoned()).
  int ProbeTxn() {
    if (read_only_) return 0;
    MDB_val k = V(kSchemaKey), v{};
    const int rc = mdb_get(T(), dbi(kMeta), &k, &v);
    if (rc != 0) poisoned_ = true;
    return rc;
  }
  // Cursors must be closed before their transaction ends.
  void CloseCursors() {
    for (auto* set : {&cursors_, &write_cursors_}) {
      for (auto& c : *set) {
        if (c) mdb_cursor_close(c);
        c = nullptr;
      }
    }
  }
  // Writes the queue records this transaction changed (their counters move
  // with almost every operation, so they are written once, here, rather
  // than once per message). The store calls it after a body succeeded and
  // before the commit.
  Status FlushQueues() {
    for (auto& [id, slot] : queues_) {
      if (!slot.dirty || slot.erased) continue;
      MQLITE_RETURN_IF_ERROR(Put(kQueues, QueueKey(id).view(), EncodeQueue(slot.data)));
      slot.dirty = false;
    }
    return Status::OK();
  }

  // ---- Queues (SPEC §2) ----

  Result<QueueRecord> UpsertQueue(const QueueConfig& cfg, int64_t now, bool* created) override {
    MQLITE_RETURN_IF_ERROR(Writable("UpsertQueue"));
    queues_changed_ = true;
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> id_bytes, Get(kQueueNames, cfg.name));
    if (id_bytes) {
      const int64_t id = ReadI64(id_bytes->data());
      MQLITE_ASSIGN_OR_RETURN(QueueData * q, LoadQueue(id));
      MQLITE_RETURN_IF_ERROR(CheckOrderingChange(q->config, cfg, q->total() > 0));
      q->config = cfg;
      Touch(id);
      if (created) *created = false;
      return QueueRecord{id, cfg};
    }
    MQLITE_ASSIGN_OR_RETURN(int64_t id, Bump(kLastQueueKey, 1));
    QueueSlot& slot = queues_[id];
    slot = QueueSlot{};
    slot.data.config = cfg;
    slot.data.created_at = now;
    slot.dirty = true;
    MQLITE_RETURN_IF_ERROR(Put(kQueueNames, cfg.name, SeqKey(id).view()));
    if (created) *created = true;
    return QueueRecord{id, cfg};
  }

  Result<QueueRecord> GetQueue(std::string_view name) override {
    std::optional<int64_t> id;
    if (Cached()) id = store_queue_cache_->IdOf(name);
    if (!id) {
      MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> id_bytes, Get(kQueueNames, name));
      if (!id_bytes || id_bytes->size() != 8) {
        return Status::QueueNotFound("queue '" + std::string(name) + "' does not exist");
      }
      id = ReadI64(id_bytes->data());
    }
    MQLITE_ASSIGN_OR_RETURN(QueueData * q, LoadQueue(*id));
    return QueueRecord{*id, q->config};
  }

  Result<std::vector<QueueRecord>> ListQueues() override {
    std::vector<int64_t> ids;
    MQLITE_RETURN_IF_ERROR(Scan(kQueueNames, "", [&](std::string_view, std::string_view v) {
      if (v.size() == 8) ids.push_back(ReadI64(v.data()));
      return true;
    }));
    std::vector<QueueRecord> out;
    out.reserve(ids.size());
    for (int64_t id : ids) {
      MQLITE_ASSIGN_OR_RETURN(QueueData * q, LoadQueue(id));
      out.push_back(QueueRecord{id, q->config});
    }
    return out;
  }

  Status DeleteQueue(const QueueRecord& queue) override {
    MQLITE_RETURN_IF_ERROR(Writable("DeleteQueue"));
    queues_changed_ = true;
    MQLITE_ASSIGN_OR_RETURN(QueueSlot * slot, FindSlot(queue.id));
    if (!slot) return Status::OK();
    const QueueData q = slot->data;
    std::vector<int64_t> seqs;
    MQLITE_RETURN_IF_ERROR(Scan(kByState, IndexPrefix(kByState, queue.id).view(),
                                [&](std::string_view k, std::string_view) {
                                  seqs.push_back(ReadI64(k.data() + kIndexSeqAt));
                                  return true;
                                }));
    for (int64_t seq : seqs) {  // the whole queue goes: no headship to move
      MQLITE_ASSIGN_OR_RETURN(Row r, Load(seq));
      MQLITE_RETURN_IF_ERROR(EraseRow(seq, r, /*count=*/false));
    }
    // Its dedup records too (a deleted queue's id is never reused: hygiene).
    std::vector<std::string> keys;
    MQLITE_RETURN_IF_ERROR(
        Scan(kDedup, SeqKey(queue.id).view(), [&](std::string_view k, std::string_view) {
          keys.emplace_back(k.substr(8));
          return true;
        }));
    for (const std::string& k : keys) MQLITE_RETURN_IF_ERROR(EraseDedup(queue.id, k));
    // Its highest seq outlives it (never reused, SPEC §3).
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> last, Get(kMeta, kLastSeqKey));
    if (!last || last->size() != 8 || ReadI64(last->data()) < q.last_seq) {
      MQLITE_RETURN_IF_ERROR(Put(kMeta, kLastSeqKey, SeqKey(q.last_seq).view()));
    }
    MQLITE_RETURN_IF_ERROR(Del(kQueues, QueueKey(queue.id).view()));
    slot->erased = true;
    return Del(kQueueNames, q.config.name);
  }

  // ---- Enqueue (SPEC §3, §4) ----

  Result<std::vector<int64_t>> Enqueue(const QueueRecord& queue,
                                       std::span<const EnqueueItem> items) override {
    MQLITE_RETURN_IF_ERROR(Writable("Enqueue"));
    MQLITE_ASSIGN_OR_RETURN(QueueData * qd, RequireQueueData(queue));
    MQLITE_RETURN_IF_ERROR(CheckRoom());
    int64_t seq = 0;
    std::vector<int64_t> seqs;
    seqs.reserve(items.size());
    for (const EnqueueItem& it : items) {
      const OutgoingMessage& m = *it.message;
      Row r;
      r.queue_id = queue.id;
      r.state = it.state;
      if (it.group_key) {
        MQLITE_ASSIGN_OR_RETURN(bool live, GroupHasLive(queue.id, *it.group_key));
        r.is_head = !live;
      } else {
        r.is_head = true;
      }
      r.priority = m.priority;
      r.group_key = it.group_key;
      r.enqueued_at = it.enqueued_at;
      r.visible_at = it.visible_at;
      r.expires_at = it.expires_at;
      r.body_size = static_cast<int64_t>(m.body.size());
      EncodeRow(r, {}, &value_);
      EncodePayload(m, &value_);
      seq = NextSeq();
      // One counter update for the batch (all active or scheduled, one queue).
      MQLITE_RETURN_IF_ERROR(InsertRow(seq, r, value_, /*count=*/false, MDB_APPEND));
      qd->count[S(r.state)] += 1;
      qd->bytes[S(r.state)] += r.body_size;
      seqs.push_back(seq);
    }
    qd->last_seq = std::max(qd->last_seq, seq);
    Touch(queue.id);
    return seqs;
  }

  Status CancelScheduled(const QueueRecord& queue, int64_t seq) override {
    MQLITE_RETURN_IF_ERROR(Writable("CancelScheduled"));
    MQLITE_ASSIGN_OR_RETURN(std::optional<Row> r, Find(queue.id, seq));
    MQLITE_RETURN_IF_ERROR(CheckCancelScheduled(r ? &*r : nullptr, seq));
    return RemoveRow(seq, *r);
  }

  // ---- Claim (SPEC §5, §7.4) ----
  //
  // The in-memory store's walk (stores/memory/src/memory_store.cc, Claim)
  // over the claim sub-database: one cursor seek per candidate from `resume`;
  // every claim-index entry below `resume` was skipped (its group was taken in
  // this batch); a head promoted meanwhile that outranks `resume` pulls it
  // back (the watch in IndexRow). Blocked members are never in the index.
  Result<std::vector<Message>> Claim(const QueueRecord& queue, const ClaimRequest& req) override {
    MQLITE_RETURN_IF_ERROR(Writable("Claim"));
    MQLITE_RETURN_IF_ERROR(RequireQueue(queue));
    MQLITE_RETURN_IF_ERROR(CheckClaimRequest(req));
    const bool peek_lock = req.mode == ReceiveMode::kPeekLock;
    std::vector<Message> out;
    std::set<int64_t> skipped;
    std::set<std::string> taken_groups;
    const Key prefix = IndexPrefix(kClaim, queue.id);
    Key resume = IndexKey(kClaim, queue.id, kMin, kMin);
    MQLITE_ASSIGN_OR_RETURN(MDB_cursor * c, CursorOn(kClaim));
    Probe& probe = ProbeRef();
    while (static_cast<int>(out.size()) < req.max_messages) {
      MDB_val k = V(resume.view()), v{};
      int rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
      int64_t seq = 0;
      for (;;) {
        probe.claim_steps.fetch_add(1, std::memory_order_relaxed);  // every cursor call
        if (rc == MDB_NOTFOUND) break;
        if (rc != 0) return Fail(rc, "Claim: seek the claim index");
        if (!SV(k).starts_with(prefix.view())) {
          rc = MDB_NOTFOUND;
          break;
        }
        seq = ReadI64(static_cast<const char*>(k.mv_data) + kIndexSeqAt);
        if (!skipped.count(seq)) break;
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
      }
      if (rc == MDB_NOTFOUND) break;
      const Key key(SV(k));
      std::string_view payload;
      MQLITE_ASSIGN_OR_RETURN(Row r, Load(seq, &payload));
      if (r.group_key && taken_groups.count(*r.group_key)) {
        skipped.insert(seq);
        resume = key;
        resume.Byte('\0');  // just past this entry
        continue;
      }
      resume = key;  // the candidate leaves the index below
      watch_ = true;
      watch_min_.reset();
      if (const Verdict verdict = DecideClaim(r, queue.config, req.now);
          verdict.action != Verdict::Action::kDeliver) {
        MQLITE_RETURN_IF_ERROR(ApplyTo(seq, r, verdict, req.now));
      } else {
        const std::optional<std::string> group = r.group_key;
        Row next = r;
        next.delivery_count += 1;
        if (peek_lock) {
          next.state = MessageState::kLocked;
          next.token = req.tokens[out.size()];
          next.locked_until = req.locked_until;
        }
        // The payload is read before the writes below move the map's pages.
        MQLITE_ASSIGN_OR_RETURN(Message m, ToMessage(seq, next, payload, queue.config.name));
        out.push_back(std::move(m));
        if (peek_lock) {
          MQLITE_RETURN_IF_ERROR(WriteRow(seq, r, next));
        } else {
          MQLITE_RETURN_IF_ERROR(RemoveRow(seq, r));  // hands headship on
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
    std::string_view payload;
    MQLITE_ASSIGN_OR_RETURN(std::optional<Row> r, Find(queue.id, seq, &payload));
    MQLITE_RETURN_IF_ERROR(CheckClaimDeferred(r ? &*r : nullptr, queue.config, seq, now));
    Row next = *r;
    next.state = MessageState::kLocked;
    next.delivery_count += 1;
    next.token = token;
    next.locked_until = locked_until;
    MQLITE_ASSIGN_OR_RETURN(Message m, ToMessage(seq, next, payload, queue.config.name));
    MQLITE_RETURN_IF_ERROR(WriteRow(seq, *r, next));
    return m;
  }

  // ---- Settle (SPEC §3, §6) ----

  Result<SettleResult> Settle(const QueueRecord& queue, const SettleRequest& req) override {
    MQLITE_RETURN_IF_ERROR(Writable("Settle"));
    MQLITE_ASSIGN_OR_RETURN(std::optional<Row> r, Find(queue.id, req.seq));
    MQLITE_ASSIGN_OR_RETURN(Verdict v, DecideSettle(r ? &*r : nullptr, queue.config, req));
    MQLITE_RETURN_IF_ERROR(ApplyTo(req.seq, *r, v, req.now));
    return Settled(*this, req, v);
  }

  // ---- Inspection and DLQ (SPEC §6) ----

  // By seq from the by_state index, one cursor per state class asked for,
  // merged by seq; locked rows share class 0 with active ones, so a Peek of
  // active messages skips the locked ones it meets there, and a Peek of
  // locked messages sorts the queue's lease entries instead (both bounded by
  // the leases in flight, not by the backlog).
  Result<std::vector<Message>> Peek(const QueueRecord& queue, const PeekOptions& o) override {
    MQLITE_RETURN_IF_ERROR(RequireQueue(queue));
    const int64_t from = o.from_seq == kMax ? kMax : o.from_seq + 1;
    std::vector<Message> out;
    auto emit = [&](int64_t seq) -> Status {
      std::string_view payload;
      MQLITE_ASSIGN_OR_RETURN(Row r, Load(seq, &payload));
      if (o.state && r.state != *o.state) return Status::OK();
      MQLITE_ASSIGN_OR_RETURN(Message m, ToMessage(seq, r, payload, queue.config.name));
      out.push_back(std::move(m));
      return Status::OK();
    };
    if (o.state == MessageState::kLocked) {
      std::vector<int64_t> seqs;
      MQLITE_RETURN_IF_ERROR(Scan(kLease, IndexPrefix(kLease, queue.id).view(),
                                  [&](std::string_view k, std::string_view) {
                                    const int64_t seq = ReadI64(k.data() + kIndexSeqAt);
                                    if (seq >= from) seqs.push_back(seq);
                                    return true;
                                  }));
      std::sort(seqs.begin(), seqs.end());
      if (seqs.size() > static_cast<size_t>(o.max_messages)) seqs.resize(o.max_messages);
      for (int64_t seq : seqs) MQLITE_RETURN_IF_ERROR(emit(seq));
      return out;
    }
    struct Head {
      MDB_cursor* c = nullptr;
      int64_t klass = 0;
      int64_t seq = 0;
      bool valid = false;
    };
    std::vector<Head> heads;
    struct Closer {
      std::vector<Head>* h;
      ~Closer() {
        for (Head& x : *h) mdb_cursor_close(x.c);
      }
    } closer{&heads};
    auto settle = [&](Head& h, int rc, const MDB_val& k) -> Status {
      if (rc == MDB_NOTFOUND) {
        h.valid = false;
        return Status::OK();
      }
      if (rc != 0) return Fail(rc, "Peek: walk by_state");
      const std::string_view key = SV(k);
      h.valid = key.size() == kIndexKeySize && key[0] == IndexTag(kByState) &&
                ReadI64(key.data() + 1) == queue.id &&
                ReadI64(key.data() + kIndexTimeAt) == h.klass;
      if (h.valid) h.seq = ReadI64(key.data() + kIndexSeqAt);
      return Status::OK();
    };
    for (int s = 0; s < kStates; ++s) {
      const int64_t klass = StateClass(static_cast<MessageState>(s));
      if (klass != s) continue;  // a state kept in another state's class
      if (o.state && StateClass(*o.state) != klass) continue;
      Head h;
      h.klass = klass;
      if (int rc = mdb_cursor_open(T(), dbi(kByState), &h.c); rc != 0) {
        return Fail(rc, "Peek: open a cursor");
      }
      heads.push_back(h);
      const Key start = IndexKey(kByState, queue.id, klass, from);
      MDB_val k = V(start.view()), v{};
      const int rc = mdb_cursor_get(heads.back().c, &k, &v, MDB_SET_RANGE);
      MQLITE_RETURN_IF_ERROR(settle(heads.back(), rc, k));
    }
    while (static_cast<int>(out.size()) < o.max_messages) {
      size_t best = heads.size();
      for (size_t i = 0; i < heads.size(); ++i) {
        if (heads[i].valid && (best == heads.size() || heads[i].seq < heads[best].seq)) best = i;
      }
      if (best == heads.size()) break;
      MQLITE_RETURN_IF_ERROR(emit(heads[best].seq));
      MDB_val k{}, v{};
      const int rc = mdb_cursor_get(heads[best].c, &k, &v, MDB_NEXT);
      MQLITE_RETURN_IF_ERROR(settle(heads[best], rc, k));
    }
    return out;
  }

  Result<QueueStats> Stats(const QueueRecord& queue, int64_t now) override {
    MQLITE_ASSIGN_OR_RETURN(QueueData * q, LoadQueue(queue.id));
    QueueStats st;
    st.active = q->count[S(MessageState::kActive)];
    st.locked = q->count[S(MessageState::kLocked)];
    st.deferred = q->count[S(MessageState::kDeferred)];
    st.scheduled = q->count[S(MessageState::kScheduled)];
    st.dead_lettered = q->count[S(MessageState::kDeadLettered)];
    st.total = q->total();
    for (int64_t b : q->bytes) st.body_bytes += b;
    // Oldest claimable (StoreTxn::Stats): the smallest enqueued_at over
    // bounded walks. The active heads of one priority come in seq order from
    // the claim index, which is enqueued_at order (seqs and the engine's
    // clock both grow with every send) for all but redriven messages, and
    // those come in age order from their own index: in each walk the first
    // that qualifies is its answer. Due schedules and lapsed leases come in
    // time order, so each takes the minimum of what it visits.
    std::optional<int64_t> oldest;
    auto walk = [&](Db db, const Key& prefix, int64_t until, bool first_only) -> Status {
      std::vector<int64_t> seqs;
      MQLITE_RETURN_IF_ERROR(WalkSeqs(db, prefix, until, kStatsProbeLimit + 1, &seqs));
      for (int64_t seq : seqs) {
        MQLITE_ASSIGN_OR_RETURN(Row r, Load(seq));
        if (!r.is_head || !WouldDeliver(r, queue.config, now)) continue;
        if (!oldest || r.enqueued_at < *oldest) oldest = r.enqueued_at;
        if (first_only) break;
      }
      return Status::OK();
    };
    for (int priority = 0; priority <= 9; ++priority) {  // validate.cc: 0–9
      MQLITE_RETURN_IF_ERROR(
          walk(kClaim, IndexPrefix(kClaim, queue.id, -priority), kMax, /*first_only=*/true));
    }
    MQLITE_RETURN_IF_ERROR(
        walk(kRedriven, IndexPrefix(kRedriven, queue.id), kMax, /*first_only=*/true));
    MQLITE_RETURN_IF_ERROR(walk(kDue, IndexPrefix(kDue, queue.id), now, /*first_only=*/false));
    MQLITE_RETURN_IF_ERROR(
        walk(kLease, IndexPrefix(kLease, queue.id), now, /*first_only=*/false));
    if (oldest) st.oldest_claimable_age_ms = std::max<int64_t>(0, now - *oldest);
    return st;
  }

  Result<int64_t> Redrive(const QueueRecord& queue, const QueueRecord& target,
                          const RedriveOptions& o, int64_t now) override {
    MQLITE_RETURN_IF_ERROR(Writable("Redrive"));
    MQLITE_RETURN_IF_ERROR(RequireQueue(queue));
    MQLITE_ASSIGN_OR_RETURN(QueueData * target_data, RequireQueueData(target));
    MQLITE_RETURN_IF_ERROR(CheckRoom());
    std::vector<int64_t> seqs;
    MQLITE_RETURN_IF_ERROR(OldestDead(queue.id, now - o.older_than_ms, o.max_messages, &seqs));
    int64_t moved = 0;
    for (int64_t seq : seqs) {
      std::string_view payload;
      MQLITE_ASSIGN_OR_RETURN(std::optional<Row> old, Find(queue.id, seq, &payload));
      if (!old) continue;
      std::optional<std::string> group_id;
      if (old->group_key) {  // the group id is in the payload
        MQLITE_ASSIGN_OR_RETURN(RowPayload p, DecodePayload(payload));
        group_id = std::move(p.group_id);
      }
      std::optional<RedrivePlan> plan = PlanRedrive(group_id, target.config, now);
      if (!plan) continue;
      Row r = *old;
      r.queue_id = target.id;
      r.state = MessageState::kActive;
      r.redriven = true;  // its enqueued_at is older than its new seq says
      r.group_key = std::move(plan->group_key);
      if (r.group_key) {
        // (a read: `payload` stays valid)
        MQLITE_ASSIGN_OR_RETURN(bool live, GroupHasLive(target.id, *r.group_key));
        r.is_head = !live;
      } else {
        r.is_head = true;
      }
      r.delivery_count = 0;
      r.token = LockToken{};
      r.locked_until = 0;
      r.visible_at = plan->visible_at;
      r.expires_at = plan->expires_at;
      r.dead_lettered_at = 0;
      r.dead_letter_reason.reset();
      r.dead_letter_description.reset();
      EncodeRow(r, payload, &value_);  // copied out before the writes move the map's pages
      const int64_t fresh = NextSeq();
      MQLITE_RETURN_IF_ERROR(InsertRow(fresh, r, value_, /*count=*/true, MDB_APPEND));
      Touch(target.id);
      target_data->last_seq = std::max(target_data->last_seq, fresh);
      MQLITE_RETURN_IF_ERROR(RemoveRow(seq, *old));
      ++moved;
    }
    return moved;
  }

  Result<int64_t> PurgeDeadLetters(const QueueRecord& queue, const PurgeOptions& o,
                                   int64_t now) override {
    MQLITE_RETURN_IF_ERROR(Writable("PurgeDeadLetters"));
    MQLITE_RETURN_IF_ERROR(RequireQueue(queue));
    std::vector<int64_t> seqs;
    MQLITE_RETURN_IF_ERROR(OldestDead(queue.id, now - o.older_than_ms, o.max_messages, &seqs));
    for (int64_t seq : seqs) MQLITE_RETURN_IF_ERROR(Remove(seq));
    return static_cast<int64_t>(seqs.size());
  }

  // ---- Operator paths ----

  Status DeadLetterMessage(const QueueRecord& queue, int64_t seq, std::string_view reason,
                           const std::optional<std::string>& description, int64_t now) override {
    MQLITE_RETURN_IF_ERROR(Writable("DeadLetterMessage"));
    MQLITE_ASSIGN_OR_RETURN(std::optional<Row> r, Find(queue.id, seq));
    MQLITE_RETURN_IF_ERROR(CheckDeadLetterMessage(r ? &*r : nullptr, seq));
    return DeadLetter(seq, *r, reason, description, now);
  }

  Status DeleteMessage(const QueueRecord& queue, int64_t seq) override {
    MQLITE_RETURN_IF_ERROR(Writable("DeleteMessage"));
    MQLITE_ASSIGN_OR_RETURN(std::optional<Row> r, Find(queue.id, seq));
    MQLITE_RETURN_IF_ERROR(CheckDeleteMessage(r ? &*r : nullptr, seq));
    return RemoveRow(seq, *r);
  }

  // ---- Maintenance and recovery (SPEC §3, §6, §7.1) ----
  // Each collects at most `limit` seqs from one index seek, then applies them.

  Result<int64_t> PromoteDue(const QueueRecord& queue, int64_t now, int64_t limit) override {
    MQLITE_RETURN_IF_ERROR(Writable("PromoteDue"));
    std::vector<int64_t> seqs;
    MQLITE_RETURN_IF_ERROR(
        WalkSeqs(kDue, IndexPrefix(kDue, queue.id), now, limit, &seqs, /*count=*/true));
    for (int64_t seq : seqs) {
      MQLITE_ASSIGN_OR_RETURN(Row r, Load(seq));
      Row next = r;
      next.state = MessageState::kActive;
      MQLITE_RETURN_IF_ERROR(WriteRow(seq, r, next));
    }
    return static_cast<int64_t>(seqs.size());
  }

  Result<int64_t> ReclaimLocks(const QueueRecord& queue, int64_t now, bool all_locked,
                               int64_t limit) override {
    MQLITE_RETURN_IF_ERROR(Writable("ReclaimLocks"));
    std::vector<int64_t> seqs;
    MQLITE_RETURN_IF_ERROR(WalkSeqs(kLease, IndexPrefix(kLease, queue.id),
                                    all_locked ? kMax : now, limit, &seqs, /*count=*/true));
    for (int64_t seq : seqs) {
      MQLITE_ASSIGN_OR_RETURN(Row r, Load(seq));
      MQLITE_RETURN_IF_ERROR(ApplyTo(seq, r, DecideReclaim(r, queue.config), now));
    }
    return static_cast<int64_t>(seqs.size());
  }

  Result<int64_t> ExpireMessages(const QueueRecord& queue, int64_t now, int64_t limit) override {
    MQLITE_RETURN_IF_ERROR(Writable("ExpireMessages"));
    std::vector<int64_t> seqs;
    MQLITE_RETURN_IF_ERROR(
        WalkSeqs(kTtl, IndexPrefix(kTtl, queue.id), now, limit, &seqs, /*count=*/true));
    const Verdict v = DecideExpire(queue.config);
    for (int64_t seq : seqs) MQLITE_RETURN_IF_ERROR(Apply(seq, v, now));
    return static_cast<int64_t>(seqs.size());
  }

  Result<int64_t> EnforceRetention(const QueueRecord& queue, const RetentionBounds& b, int64_t now,
                                   int64_t limit) override {
    MQLITE_RETURN_IF_ERROR(Writable("EnforceRetention"));
    MQLITE_ASSIGN_OR_RETURN(QueueData * q, LoadQueue(queue.id));
    if (!RetentionPass::Bounded(b)) return int64_t{0};
    RetentionPass pass(b, now, q->count[S(MessageState::kDeadLettered)],
                       q->bytes[S(MessageState::kDeadLettered)]);
    std::vector<int64_t> candidates;
    MQLITE_RETURN_IF_ERROR(
        WalkSeqs(kDlq, IndexPrefix(kDlq, queue.id), kMax, limit, &candidates, /*count=*/true));
    std::vector<std::pair<int64_t, Row>> victims;
    for (int64_t seq : candidates) {
      MQLITE_ASSIGN_OR_RETURN(Row r, Load(seq));
      if (!pass.Evict(r.dead_lettered_at, r.body_size)) break;
      victims.emplace_back(seq, std::move(r));
    }
    for (const auto& [seq, r] : victims) MQLITE_RETURN_IF_ERROR(RemoveRow(seq, r));
    return static_cast<int64_t>(victims.size());
  }

  // ---- Idempotency records (SPEC §4, §7.2, §7.3) ----

  Result<std::optional<DedupRecord>> FindDedup(const QueueRecord& queue, std::string_view key,
                                               int64_t now) override {
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> raw,
                            Get(kDedup, DedupKey(queue.id, key).view()));
    if (!raw) return std::optional<DedupRecord>();
    MQLITE_ASSIGN_OR_RETURN(DedupRecord r, DecodeDedup(*raw));
    if (r.expires_at <= now) return std::optional<DedupRecord>();
    return std::optional<DedupRecord>(std::move(r));
  }

  Status PutDedup(const QueueRecord& queue, std::string_view key, const DedupRecord& r) override {
    MQLITE_RETURN_IF_ERROR(Writable("PutDedup"));
    MQLITE_RETURN_IF_ERROR(EraseDedup(queue.id, key));
    const Key k = DedupKey(queue.id, key);
    MQLITE_RETURN_IF_ERROR(Put(kDedup, k.view(), EncodeDedup(r)));
    return Put(kDedupExp, ExpiryKey(kDedupExp, r.expires_at, k.view()).view(), "");
  }

  Result<bool> FindReceipt(std::string_view key, int64_t now) override {
    MQLITE_ASSIGN_OR_RETURN(Key stored, ReceiptKey(key));
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> raw, Get(kReceipts, stored.view()));
    return raw && raw->size() == 8 && ReadI64(raw->data()) > now;
  }

  Status PutReceipt(std::string_view key, int64_t expires_at) override {
    MQLITE_RETURN_IF_ERROR(Writable("PutReceipt"));
    MQLITE_ASSIGN_OR_RETURN(Key stored, ReceiptKey(key));
    // A key is a settle of one lease (its token is in it), so it is almost
    // always new: try the insert, and only on a clash replace the old
    // receipt and its expiry twin.
    MQLITE_ASSIGN_OR_RETURN(MDB_cursor * c, WriteCursorOn(kReceipts));
    const Key expires = SeqKey(expires_at);
    MDB_val k = V(stored.view()), v = V(expires.view());
    int rc = mdb_cursor_put(c, &k, &v, MDB_NOOVERWRITE);
    if (rc == MDB_KEYEXIST) {  // k and v now hold the stored receipt
      if (v.mv_size == 8) {
        const int64_t old = ReadI64(static_cast<const char*>(v.mv_data));
        MQLITE_RETURN_IF_ERROR(Del(kReceiptExp, ExpiryKey(kReceiptExp, old, key).view()));
      }
      MQLITE_RETURN_IF_ERROR(Put(kReceipts, stored.view(), expires.view()));
      rc = 0;
    }
    if (rc != 0) return Fail(rc, "write mqlite/messages (receipts)");
    return Put(kReceiptExp, ExpiryKey(kReceiptExp, expires_at, key).view(), "");
  }

  Result<std::optional<AttemptRecord>> FindAttempt(std::string_view id, int64_t now) override {
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> raw, Get(kAttempts, id));
    if (!raw) return std::optional<AttemptRecord>();
    MQLITE_ASSIGN_OR_RETURN(AttemptRecord r, DecodeAttempt(*raw));
    if (r.expires_at <= now) return std::optional<AttemptRecord>();
    return std::optional<AttemptRecord>(std::move(r));
  }

  Status PutAttempt(std::string_view id, const AttemptRecord& r) override {
    MQLITE_RETURN_IF_ERROR(Writable("PutAttempt"));
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> old, Get(kAttempts, id));
    if (old) {
      MQLITE_ASSIGN_OR_RETURN(AttemptRecord prev, DecodeAttempt(*old));
      MQLITE_RETURN_IF_ERROR(Del(kAttemptExp, ExpiryKey(kAttemptExp, prev.expires_at, id).view()));
    }
    MQLITE_RETURN_IF_ERROR(Put(kAttempts, id, EncodeAttempt(r)));
    return Put(kAttemptExp, ExpiryKey(kAttemptExp, r.expires_at, id).view(), "");
  }

  Result<int64_t> DropExpiredRecords(int64_t now, int64_t limit) override {
    MQLITE_RETURN_IF_ERROR(Writable("DropExpiredRecords"));
    int64_t total = 0;
    for (auto [exp, main] : {std::pair{kDedupExp, kDedup}, std::pair{kReceiptExp, kReceipts},
                             std::pair{kAttemptExp, kAttempts}}) {
      std::vector<std::string> keys;
      if (limit <= 0) break;
      MQLITE_RETURN_IF_ERROR(Scan(
          exp, std::string(1, IndexTag(exp)),
          [&](std::string_view k, std::string_view) {
            if (k.size() < kExpiryKeyAt || ReadI64(k.data() + 1) > now) return false;
            keys.emplace_back(k);
            return static_cast<int64_t>(keys.size()) < limit;
          },
          &ProbeRef().maintenance_steps));
      for (const std::string& k : keys) {
        MQLITE_RETURN_IF_ERROR(Del(exp, k));
        const std::string_view key = std::string_view(k).substr(kExpiryKeyAt);
        if (main == kReceipts) {
          MQLITE_ASSIGN_OR_RETURN(Key stored, ReceiptKey(key));
          MQLITE_RETURN_IF_ERROR(Del(main, stored.view()));
        } else {
          MQLITE_RETURN_IF_ERROR(Del(main, key));
        }
      }
      total += static_cast<int64_t>(keys.size());
    }
    return total;
  }

  // ---- Savepoints and the native handle ----

  // A nested write transaction. A read transaction cannot nest in LMDB and
  // cannot fail part-way, so its body runs directly. The queue records this
  // transaction holds in memory are rolled back with it.
  Status Savepoint(const std::function<Status(StoreTxn&)>& body) override {
    if (read_only_) return body(*this);
    CloseCursors();  // a parent's cursors cannot be used while a child is open
    MDB_txn* child = nullptr;
    if (int rc = mdb_txn_begin(mdb_txn_env(T()), T(), 0, &child); rc != 0) {
      return Fail(rc, "begin a savepoint (nested transaction)");
    }
    stack_.push_back(child);
    std::map<int64_t, QueueSlot> saved = queues_;
    const bool saved_changed = queues_changed_;
    Status s = body(*this);
    CloseCursors();
    stack_.pop_back();
    if (s.ok()) {
      if (int rc = mdb_txn_commit(child); rc != 0) s = Fail(rc, "commit a savepoint");
    } else {
      mdb_txn_abort(child);
    }
    if (!s.ok()) {
      queues_ = std::move(saved);
      queues_changed_ = saved_changed || queues_changed_;  // the cache rule stays conservative
    }
    return s;
  }

  void* NativeHandle() override { return read_only_ ? nullptr : static_cast<void*>(T()); }

  // SPEC §8: after application code ran with the MDB_txn*. An LMDB call that
  // failed there (MDB_MAP_FULL, a bad DBI, ...) leaves the transaction
  // unusable; every later call answers MDB_BAD_TXN, so one probe read tells.
  Status CheckNativeTxnOpen() override {
    const int rc = ProbeTxn();
    if (rc == 0) return Status::OK();
    return Status::InvalidArgument(
        std::string("Tx: the MDB_txn* is no longer usable after the callback (") +
        mdb_strerror(rc) +
        "): an LMDB call the application made inside it failed, which poisons the whole "
        "transaction; everything it did was rolled back (docs/lmdb-store.md, \"Tx\")");
  }

 private:
  // A queue record read in this transaction, with what it did to it so far.
  struct QueueSlot {
    QueueData data;
    bool dirty = false;   // FlushQueues writes it
    bool erased = false;  // DeleteQueue removed it
  };

  MDB_txn* T() const { return stack_.back(); }
  MDB_dbi dbi(Db db) const;
  Probe& ProbeRef();

  Status Writable(const char* op) const {
    if (!read_only_) return Status::OK();
    return Status::Internal(std::string(op) +
                            ": a write inside a read transaction (TxnKind::kRead)");
  }

  // Every LMDB error of an operation goes through here: MDB_MAP_FULL marks
  // the transaction so that Run grows the map and reruns the body.
  Status Fail(int rc, std::string_view what) {
    if (rc == MDB_MAP_FULL) map_full_ = true;
    return LmdbStatus(rc, "LMDB store: " + std::string(what));
  }

  // At the map cap (LmdbOptions::max_map_bytes): refuses to add messages once
  // less than the headroom is free, so settles and purges can still drain.
  Status CheckRoom();

  // ---- Plain access ----

  Result<std::optional<std::string>> Get(Db db, std::string_view key) {
    MDB_val k = V(key), v{};
    const int rc = mdb_get(T(), dbi(db), &k, &v);
    if (rc == MDB_NOTFOUND) return std::optional<std::string>();
    if (rc != 0) return Fail(rc, std::string("read ") + DbName(db));
    return std::optional<std::string>(std::string(SV(v)));
  }
  // Writes go through a cursor kept per Db (not per database: the index
  // tree's kinds each keep their own), so consecutive writes near each other
  // (a batch appending to one kind) find their leaf without a descent from
  // the root (LMDB's mdb_cursor_set checks the cursor's current page first).
  Status Put(Db db, std::string_view key, std::string_view value, unsigned flags = 0) {
    MQLITE_ASSIGN_OR_RETURN(MDB_cursor * c, WriteCursorOn(db));
    MDB_val k = V(key), v = V(value);
    const int rc = mdb_cursor_put(c, &k, &v, flags);
    if (rc != 0) return Fail(rc, std::string("write ") + DbName(db));
    return Status::OK();
  }
  Status Del(Db db, std::string_view key) {
    MQLITE_ASSIGN_OR_RETURN(MDB_cursor * c, WriteCursorOn(db));
    MDB_val k = V(key), v{};
    int rc = mdb_cursor_get(c, &k, &v, MDB_SET);
    if (rc == 0) rc = mdb_cursor_del(c, 0);
    if (rc != 0 && rc != MDB_NOTFOUND) return Fail(rc, std::string("delete from ") + DbName(db));
    return Status::OK();
  }
  Result<MDB_cursor*> WriteCursorOn(Db db) { return LazyCursor(write_cursors_, db); }
  // A cursor on `db` in the innermost transaction, kept until the next
  // savepoint boundary or the end of the body.
  Result<MDB_cursor*> CursorOn(Db db) { return LazyCursor(cursors_, db); }
  Result<MDB_cursor*> LazyCursor(std::array<MDB_cursor*, kDbCount>& set, Db db) {
    if (set[db] == nullptr) {
      if (int rc = mdb_cursor_open(T(), dbi(db), &set[db]); rc != 0) {
        set[db] = nullptr;
        return Fail(rc, std::string("open a cursor on ") + DbName(db));
      }
    }
    return set[db];
  }
  // Calls fn(key, value) for every entry from the first key ≥ `prefix` that
  // starts with `prefix`, until fn returns false. Views are valid only during
  // the call.
  // `steps`, if given, counts every cursor call (the §11 pins).
  template <class Fn>
  Status Scan(Db db, std::string_view prefix, Fn fn, std::atomic<int64_t>* steps = nullptr) {
    MQLITE_ASSIGN_OR_RETURN(MDB_cursor * c, CursorOn(db));
    MDB_val k = V(prefix), v{};
    auto step = [&](MDB_cursor_op op) {
      if (steps) steps->fetch_add(1, std::memory_order_relaxed);
      return mdb_cursor_get(c, &k, &v, op);
    };
    int rc = step(prefix.empty() ? MDB_FIRST : MDB_SET_RANGE);
    while (rc == 0) {
      if (!SV(k).starts_with(prefix) || !fn(SV(k), SV(v))) return Status::OK();
      rc = step(MDB_NEXT);
    }
    if (rc != MDB_NOTFOUND) return Fail(rc, std::string("walk ") + DbName(db));
    return Status::OK();
  }
  // Up to `limit` seqs from the entries of an index keyed (tag, queue, time,
  // seq) that start with `prefix` (the queue's, or the queue's and one
  // time) and whose time ≤ `until`, in index order.
  Status WalkSeqs(Db db, const Key& prefix, int64_t until, int64_t limit,
                  std::vector<int64_t>* seqs, bool count = false) {
    if (limit <= 0) return Status::OK();
    return Scan(
        db, prefix.view(),
        [&](std::string_view k, std::string_view) {
          if (k.size() != kIndexKeySize || ReadI64(k.data() + kIndexTimeAt) > until) return false;
          seqs->push_back(ReadI64(k.data() + kIndexSeqAt));
          return static_cast<int64_t>(seqs->size()) < limit;
        },
        count ? &ProbeRef().maintenance_steps : nullptr);
  }
  // Dead letters dead-lettered at or before `cutoff`, oldest first, at most
  // `max` (0 = all).
  Status OldestDead(int64_t queue_id, int64_t cutoff, int64_t max, std::vector<int64_t>* seqs) {
    return WalkSeqs(kDlq, IndexPrefix(kDlq, queue_id), cutoff, max > 0 ? max : kMax, seqs);
  }

  // Adds `delta` to the i64 meta counter `name` and returns the new value.
  Result<int64_t> Bump(const char* name, int64_t delta) {
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> raw, Get(kMeta, name));
    const int64_t now = (raw && raw->size() == 8 ? ReadI64(raw->data()) : 0) + delta;
    MQLITE_RETURN_IF_ERROR(Put(kMeta, name, SeqKey(now).view()));
    return now;
  }
  // The next seq (SPEC §3): the store's counter, never handed out twice in
  // this process (a rolled-back one is skipped) and, after a reopen, above
  // every committed one (QueueData::last_seq, meta "last_seq").
  int64_t NextSeq();

  static Key DedupKey(int64_t queue_id, std::string_view key) {
    return Key().I64(queue_id).Append(key);
  }
  Status EraseDedup(int64_t queue_id, std::string_view key) {
    const Key k = DedupKey(queue_id, key);
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> raw, Get(kDedup, k.view()));
    if (!raw) return Status::OK();
    MQLITE_ASSIGN_OR_RETURN(DedupRecord r, DecodeDedup(*raw));
    MQLITE_RETURN_IF_ERROR(Del(kDedupExp, ExpiryKey(kDedupExp, r.expires_at, k.view()).view()));
    return Del(kDedup, k.view());
  }

  // ---- Queues and rows ----

  // Whether the store's cache of committed queue records serves this
  // transaction: a writer's (readers run beside the writer) that has not
  // changed a queue (its own view of them is not the committed one).
  bool Cached() const { return !read_only_ && !queues_changed_; }
  // Queue `id`'s record as this transaction sees it (read once, then kept
  // with its changes until FlushQueues), or null if there is no such queue.
  Result<QueueSlot*> FindSlot(int64_t id) {
    if (auto it = queues_.find(id); it != queues_.end()) {
      return it->second.erased ? nullptr : &it->second;
    }
    QueueSlot slot;
    if (const QueueData* hit = Cached() ? store_queue_cache_->Find(id) : nullptr) {
      slot.data = *hit;
    } else {
      MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> raw, Get(kQueues, QueueKey(id).view()));
      if (!raw) return static_cast<QueueSlot*>(nullptr);
      MQLITE_ASSIGN_OR_RETURN(slot.data, DecodeQueue(*raw));
      if (Cached()) store_queue_cache_->Put(id, slot.data);  // committed: unchanged so far
    }
    return &(queues_[id] = std::move(slot));
  }
  Result<QueueData*> LoadQueue(int64_t id) {
    MQLITE_ASSIGN_OR_RETURN(QueueSlot * slot, FindSlot(id));
    if (!slot) return Status::QueueNotFound("queue id " + std::to_string(id) + " does not exist");
    return &slot->data;
  }
  // Marks queue `id`'s record (already loaded) as changed.
  void Touch(int64_t id) { queues_.at(id).dirty = true; }
  // The queue's record; QueueNotFound naming the queue if it is gone.
  Result<QueueData*> RequireQueueData(const QueueRecord& queue) {
    MQLITE_ASSIGN_OR_RETURN(QueueSlot * slot, FindSlot(queue.id));
    if (!slot) {
      return Status::QueueNotFound("queue '" + queue.config.name + "' (id " +
                                   std::to_string(queue.id) + ") does not exist");
    }
    return &slot->data;
  }
  Status RequireQueue(const QueueRecord& queue) { return RequireQueueData(queue).status(); }
  // Adds to the queue's counters.
  Status AddCounts(int64_t queue_id, const std::array<int64_t, kStates>& count,
                   const std::array<int64_t, kStates>& bytes) {
    MQLITE_ASSIGN_OR_RETURN(QueueData * q, LoadQueue(queue_id));
    for (int s = 0; s < kStates; ++s) {
      q->count[s] += count[s];
      q->bytes[s] += bytes[s];
    }
    Touch(queue_id);
    return Status::OK();
  }

  // Message `seq`'s header, or nothing if there is no such row; `payload`,
  // if given, views the rest of its value in the map: valid until the next
  // write.
  Result<std::optional<Row>> ReadRow(int64_t seq, std::string_view* payload = nullptr) {
    const Key key = SeqKey(seq);
    MDB_val k = V(key.view()), v{};
    const int rc = mdb_get(T(), dbi(kMessages), &k, &v);
    if (rc == MDB_NOTFOUND) return std::optional<Row>();
    if (rc != 0) return Fail(rc, "read mqlite/messages");
    MQLITE_ASSIGN_OR_RETURN(Row r, DecodeRow(SV(v), payload));
    return std::optional<Row>(std::move(r));
  }
  // Message `seq`, which an index or the caller says exists.
  Result<Row> Load(int64_t seq, std::string_view* payload = nullptr) {
    MQLITE_ASSIGN_OR_RETURN(std::optional<Row> r, ReadRow(seq, payload));
    if (!r) {
      return Status::Corruption("LMDB store: an index names message " + std::to_string(seq) +
                                ", which does not exist");
    }
    return std::move(*r);
  }
  // Message `seq` if it belongs to `queue_id` (SPEC §2: another queue's seq
  // is unknown here).
  Result<std::optional<Row>> Find(int64_t queue_id, int64_t seq,
                                  std::string_view* payload = nullptr) {
    MQLITE_ASSIGN_OR_RETURN(std::optional<Row> r, ReadRow(seq, payload));
    if (r && r->queue_id != queue_id) r.reset();
    return r;
  }

  Result<bool> GroupHasLive(int64_t queue_id, const std::string& key) {
    const Key prefix = GroupPrefix(queue_id, key);
    bool live = false;
    MQLITE_RETURN_IF_ERROR(Scan(kGroup, prefix.view(), [&](std::string_view k, std::string_view) {
      live = k.size() == prefix.size() + 8;
      return false;
    }));
    return live;
  }

  Status Reindex(Db db, const std::optional<Key>& before, const std::optional<Key>& after) {
    if (before == after) return Status::OK();
    if (before) MQLITE_RETURN_IF_ERROR(Del(db, before->view()));
    if (after) MQLITE_RETURN_IF_ERROR(Put(db, after->view(), ""));
    return Status::OK();
  }

  // Moves every index entry (and, when `count`, the counters) of row `seq`
  // from `before` to `after` (nullptr = absent).
  Status IndexRow(int64_t seq, const Row* before, const Row* after, bool count) {
    auto of = [&](auto key_fn, const Row* r) -> std::optional<Key> {
      return r ? key_fn(seq, *r) : std::nullopt;
    };
    const std::optional<Key> claim_before = of(ClaimKeyOf, before);
    const std::optional<Key> claim_after = of(ClaimKeyOf, after);
    MQLITE_RETURN_IF_ERROR(Reindex(kClaim, claim_before, claim_after));
    if (watch_ && claim_after && claim_after != claim_before &&
        (!watch_min_ || *claim_after < *watch_min_)) {
      watch_min_ = claim_after;
    }
    MQLITE_RETURN_IF_ERROR(Reindex(kRedriven, of(RedrivenKeyOf, before), of(RedrivenKeyOf, after)));
    MQLITE_RETURN_IF_ERROR(Reindex(kGroup, of(GroupKeyOf, before), of(GroupKeyOf, after)));
    MQLITE_RETURN_IF_ERROR(Reindex(kDue, of(DueKeyOf, before), of(DueKeyOf, after)));
    MQLITE_RETURN_IF_ERROR(Reindex(kLease, of(LeaseKeyOf, before), of(LeaseKeyOf, after)));
    MQLITE_RETURN_IF_ERROR(Reindex(kTtl, of(TtlKeyOf, before), of(TtlKeyOf, after)));
    MQLITE_RETURN_IF_ERROR(Reindex(kDlq, of(DlqKeyOf, before), of(DlqKeyOf, after)));
    MQLITE_RETURN_IF_ERROR(Reindex(kByState, of(StateKeyOf, before), of(StateKeyOf, after)));
    if (!count) return Status::OK();
    if (before && after && before->queue_id == after->queue_id && before->state == after->state) {
      return Status::OK();  // bodies never change, so neither do the byte totals
    }
    auto delta = [](std::array<int64_t, kStates>* c, std::array<int64_t, kStates>* b,
                    const Row& r, int64_t sign) {
      (*c)[S(r.state)] += sign;
      (*b)[S(r.state)] += sign * r.body_size;
    };
    std::array<int64_t, kStates> c{}, b{};
    if (before) delta(&c, &b, *before, -1);
    if (after && before && after->queue_id != before->queue_id) {
      MQLITE_RETURN_IF_ERROR(AddCounts(before->queue_id, c, b));
      c = {};
      b = {};
    }
    if (after) delta(&c, &b, *after, +1);
    return AddCounts(after ? after->queue_id : before->queue_id, c, b);
  }

  // A new row (a send or a redrive): `row` encoded with its payload in
  // `value` (EncodeRow).
  Status InsertRow(int64_t seq, const Row& row, std::string_view value, bool count,
                   unsigned flags) {
    MQLITE_RETURN_IF_ERROR(IndexRow(seq, nullptr, &row, count));
    return Put(kMessages, SeqKey(seq).view(), value, flags);
  }
  // Row `seq` (`before` as just read) changes to `after`; its payload bytes
  // are copied over from the stored value.
  Status WriteRow(int64_t seq, const Row& before, const Row& after) {
    MQLITE_RETURN_IF_ERROR(IndexRow(seq, &before, &after, /*count=*/true));
    MQLITE_ASSIGN_OR_RETURN(MDB_cursor * c, WriteCursorOn(kMessages));
    const Key key = SeqKey(seq);
    MDB_val k = V(key.view()), v{};
    if (int rc = mdb_cursor_get(c, &k, &v, MDB_SET); rc != 0) {
      return Fail(rc, "rewrite a message in mqlite/messages");
    }
    std::string_view payload;
    MQLITE_RETURN_IF_ERROR(DecodeRow(SV(v), &payload).status());
    EncodeRow(after, payload, &value_);  // copied out of the map before the put
    MDB_val nv = V(value_);
    if (int rc = mdb_cursor_put(c, &k, &nv, MDB_CURRENT); rc != 0) {
      return Fail(rc, "rewrite a message in mqlite/messages");
    }
    return Status::OK();
  }
  Status EraseRow(int64_t seq, const Row& before, bool count = true) {
    MQLITE_RETURN_IF_ERROR(IndexRow(seq, &before, nullptr, count));
    return Del(kMessages, SeqKey(seq).view());
  }

  // ---- Transitions that keep headship right ----

  // Makes the lowest-seq live member of the group its head, after the old
  // head left (one seek of the group index).
  Status PromoteNext(int64_t queue_id, const std::string& key) {
    const Key prefix = GroupPrefix(queue_id, key);
    std::optional<int64_t> next_seq;
    MQLITE_RETURN_IF_ERROR(Scan(kGroup, prefix.view(), [&](std::string_view k, std::string_view) {
      if (k.size() == prefix.size() + 8) next_seq = ReadI64(k.data() + prefix.size());
      return false;
    }));
    if (!next_seq) return Status::OK();
    MQLITE_ASSIGN_OR_RETURN(Row r, Load(*next_seq));
    if (r.is_head) return Status::OK();
    Row next = r;
    next.is_head = true;
    return WriteRow(*next_seq, r, next);
  }

  // Deletes row `seq` (as just read) and hands headship on.
  Status RemoveRow(int64_t seq, const Row& r) {
    MQLITE_RETURN_IF_ERROR(EraseRow(seq, r));
    if (r.is_head && r.group_key) return PromoteNext(r.queue_id, *r.group_key);
    return Status::OK();
  }
  // The same, reading the live row first; absent: nothing to do.
  Status Remove(int64_t seq) {
    MQLITE_ASSIGN_OR_RETURN(std::optional<Row> r, ReadRow(seq));
    return r ? RemoveRow(seq, *r) : Status::OK();
  }

  Status DeadLetter(int64_t seq, const Row& r, std::string_view reason,
                    const std::optional<std::string>& description, int64_t now) {
    Row next = r;
    DeadLetterRow(reason, description, now, &next);
    MQLITE_RETURN_IF_ERROR(WriteRow(seq, r, next));
    if (r.is_head && r.group_key) return PromoteNext(r.queue_id, *r.group_key);
    return Status::OK();
  }

  // Applies a store_util.h verdict to row `seq` as just read (`r`). kDeliver
  // is Claim's own and changes nothing here.
  Status ApplyTo(int64_t seq, const Row& r, const Verdict& v, int64_t now) {
    switch (v.action) {
      case Verdict::Action::kUnlock:  // the lease and token go
      case Verdict::Action::kRenew: {
        Row next = r;
        ApplyToRow(v, &next);
        return WriteRow(seq, r, next);
      }
      case Verdict::Action::kDeadLetter:
        return DeadLetter(seq, r, v.reason, v.description, now);
      case Verdict::Action::kDelete:
        return RemoveRow(seq, r);
      case Verdict::Action::kDeliver:
        return Status::OK();
    }
    return Status::OK();
  }
  Status Apply(int64_t seq, const Verdict& v, int64_t now) {
    MQLITE_ASSIGN_OR_RETURN(Row r, Load(seq));
    return ApplyTo(seq, r, v, now);
  }

  LmdbStore* const store_;
  QueueCache* const store_queue_cache_;
  std::vector<MDB_txn*> stack_;  // the Run's transaction, then open savepoints
  const bool read_only_;
  bool map_full_ = false;
  bool poisoned_ = false;
  bool queues_changed_ = false;
  std::array<MDB_cursor*, kDbCount> cursors_{};
  std::array<MDB_cursor*, kDbCount> write_cursors_{};  // Put and Del only
  std::map<int64_t, QueueSlot> queues_;  // by queue id
  std::string value_;  // scratch: a row's value being written
  // Claim's watch on claim-index inserts (see Claim).
  bool watch_ = false;
  std::optional<Key> watch_min_;
};


class LmdbStore final : public Store {
 public:
  LmdbStore(std::unique_ptr<FileLock> lock, MDB_env* env, std::array<MDB_dbi, kDbCount> dbis,
            std::string dir, const LmdbOptions& options, int64_t map_size, int64_t page_size,
            int64_t last_seq)
      : lock_(std::move(lock)),
        env_(env),
        dbis_(dbis),
        dir_(std::move(dir)),
        options_(options),
        map_size_(map_size),
        page_size_(page_size),
        last_seq_(last_seq) {}
  ~LmdbStore() override {
    if (options_.read_only) {
      mdb_env_close(env_);  // nothing of ours to sync
      return;
    }
    // A clean close leaves everything on disk at every durability (normal
    // and process_only skip some syncs per commit; this makes up for them).
    // Best effort: a destructor has no one to tell, and the commits are in
    // the OS's hands already, which is all those levels promise.
    (void)mdb_env_sync(env_, 1);
    mdb_env_close(env_);  // before the lock goes (file_lock.h)
  }

  StoreCapabilities Capabilities() const override {
    StoreCapabilities c;
    c.exclusive = true;
    c.native_handle_type = kHandleType;
    c.crash_model = "process";
    c.name = "lmdb";
    c.write_concurrency = 1;
    c.read_only = options_.read_only;
    return c;
  }

  Status Run(TxnKind kind, const RunOptions& options,
             const std::function<Status(StoreTxn&)>& body) override {
    if (kind == TxnKind::kRead) return RunRead(body);
    if (options_.read_only) return ReadOnlyWriteRefused("LMDB store " + dir_);
    MQLITE_RETURN_IF_ERROR(gate_.Acquire(RunGate::Mode::kExclusive, options, "the LMDB writer"));
    struct Release {
      RunGate* gate;
      ~Release() { gate->Release(RunGate::Mode::kExclusive); }
    } release{&gate_};
    // A body that cannot be rerun (a Tx) would have to fail with Unavailable
    // on MDB_MAP_FULL: grow before it starts while the map is half used.
    // Rerunnable bodies grow the map when they meet MDB_MAP_FULL.
    while (!options.rerunnable && CanGrow() && UsedBytes() * 2 > map_size()) {
      MQLITE_RETURN_IF_ERROR(Grow());
    }
    for (;;) {
      bool grow = false;
      bool poisoned = false;
      bool app_failed = false;
      Status s;
      {
        std::shared_lock<std::shared_mutex> resize(resize_mu_);
        MDB_txn* txn = nullptr;
        if (int rc = mdb_txn_begin(env_, nullptr, 0, &txn); rc != 0) {
          return LmdbStatus(rc, "LMDB store " + dir_ + ": begin a write transaction");
        }
        LmdbTxn t(this, txn, /*read_only=*/false);
        s = body(t);
        if (s.ok()) s = t.FlushQueues();
        t.CloseCursors();
        // A Tx that failed may have failed because an LMDB call of the
        // application's poisoned the transaction (its MDB_MAP_FULL never
        // reached the store).
        if (!s.ok() && !options.rerunnable && !t.map_full()) app_failed = t.ProbeTxn() != 0;
        poisoned = t.poisoned();
        if (t.map_full() && CanGrow()) {
          mdb_txn_abort(txn);
          grow = true;
        } else if (!s.ok()) {
          mdb_txn_abort(txn);
        } else if (int rc = mdb_txn_commit(txn); rc != 0) {
          if (rc == MDB_MAP_FULL && CanGrow()) {
            grow = true;
          } else {
            s = LmdbStatus(rc, "LMDB store " + dir_ + ": commit");
          }
        } else if (!t.queues_changed()) {
          t.PublishQueues();
        }
        if (t.queues_changed()) queue_cache_.Clear();
      }
      if (poisoned && !grow && CanGrow()) {
        // The application's own write may have hit MDB_MAP_FULL (its error
        // never reached the store): grow so that running the Tx again works.
        MQLITE_RETURN_IF_ERROR(Grow());
        if (app_failed) return s;  // the application's own answer stands
        return Status::Unavailable(std::string(s.message()) + "; the map was grown to " + Mib(map_size()) +
                                   " in case it was full: run the Tx again");
      }
      if (!grow) return s;
      MQLITE_RETURN_IF_ERROR(Grow());
      probe_.map_full_reruns.fetch_add(1, std::memory_order_relaxed);
      if (!options.rerunnable) {
        return Status::Unavailable("LMDB store " + dir_ + ": the map was full and has grown to " +
                                   Mib(map_size()) +
                                   "; this transaction is never rerun by the store (a Tx runs "
                                   "application code) and was rolled back: run it again");
      }
    }
  }

  // LMDB reuses freed pages; it never gives them back without a copy
  // (SpaceMode::kReused). What housekeeping it needs is clearing reader slots
  // left by dead processes, which would otherwise pin old pages forever.
  Result<int64_t> ReclaimSpace(const RunOptions& options, int64_t budget) override {
    (void)options, (void)budget;
    if (options_.read_only) return ReadOnlyWriteRefused("LMDB store " + dir_);
    int dead = 0;
    mdb_reader_check(env_, &dead);
    return int64_t{0};
  }

  MDB_dbi dbi(Db db) const { return dbis_[db]; }
  Probe& probe() { return probe_; }
  int64_t map_size() const { return map_size_.load(std::memory_order_acquire); }
  int64_t page_size() const { return page_size_; }
  // The configured cap, or the map's size at open if it was already larger.
  int64_t cap() const { return cap_; }
  MDB_env* env() const { return env_; }
  const std::string& dir() const { return dir_; }

 private:
  Status RunRead(const std::function<Status(StoreTxn&)>& body) {
    std::shared_lock<std::shared_mutex> resize(resize_mu_);
    MDB_txn* txn = nullptr;
    int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn);
    if (rc == MDB_MAP_RESIZED && options_.read_only) {
      // The owning process grew the map: adopt its size (no transaction of
      // this environment is open while resize_mu_ is held exclusively).
      resize.unlock();
      {
        std::unique_lock<std::shared_mutex> exclusive(resize_mu_);
        if (int r = mdb_env_set_mapsize(env_, 0); r != 0) {
          return LmdbStatus(r, "LMDB store " + dir_ + ": follow the owner's map growth");
        }
      }
      resize.lock();
      rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn);
    }
    if (rc != 0) return LmdbStatus(rc, "LMDB store " + dir_ + ": begin a read transaction");
    Status s;
    {
      LmdbTxn t(this, txn, /*read_only=*/true);
      s = body(t);
      t.CloseCursors();
    }
    mdb_txn_abort(txn);
    return s;
  }

  bool CanGrow() { return map_size() < cap(); }
  // Pages up to the last one committed: the free list is not subtracted
  // (LmdbTxn::CheckRoom does that), so this errs towards growing early.
  int64_t UsedBytes() {
    MDB_envinfo info{};
    mdb_env_info(env_, &info);
    return (static_cast<int64_t>(info.me_last_pgno) + 1) * page_size_;
  }

  // Doubles the map (at most to the cap) with no transaction open.
  Status Grow() {
    std::unique_lock<std::shared_mutex> resize(resize_mu_);
    const int64_t now = map_size();
    const int64_t next = std::min(cap(), std::max(now * 2, now + page_size_));
    if (int rc = mdb_env_set_mapsize(env_, static_cast<size_t>(next)); rc != 0) {
      return LmdbStatus(rc, "LMDB store " + dir_ + ": grow the map to " + Mib(next));
    }
    map_size_.store(next, std::memory_order_release);
    return Status::OK();
  }

  std::unique_ptr<FileLock> lock_;
  MDB_env* const env_;
  const std::array<MDB_dbi, kDbCount> dbis_;
  const std::string dir_;
  const LmdbOptions options_;
  RunGate gate_;                 // one writer at a time, cancellable
  std::shared_mutex resize_mu_;  // transactions shared, a map resize exclusive
  std::atomic<int64_t> map_size_;  // changed only by Grow, under resize_mu_
  const int64_t cap_ = std::max(options_.max_map_bytes, map_size_.load());
  const int64_t page_size_;
  int64_t last_seq_;  // the last seq handed out; only the writer touches it
  QueueCache queue_cache_;  // only the writer touches it
  Probe probe_;

  friend class LmdbTxn;
};

LmdbTxn::LmdbTxn(LmdbStore* store, MDB_txn* txn, bool read_only)
    : store_(store), store_queue_cache_(&store->queue_cache_), stack_{txn}, read_only_(read_only) {}

MDB_dbi LmdbTxn::dbi(Db db) const { return store_->dbi(Physical(db)); }
int64_t LmdbTxn::NextSeq() { return ++store_->last_seq_; }
Probe& LmdbTxn::ProbeRef() { return store_->probe(); }

Status LmdbTxn::CheckRoom() {
  const int64_t cap = store_->cap();
  const int64_t map = store_->map_size();
  if (map < cap) return Status::OK();  // the map can still grow
  const int64_t psize = store_->page_size();
  const int64_t total = map / psize;
  const int64_t headroom = std::max(kMinHeadroomPages, total / kHeadroomDivisor);
  MDB_envinfo info{};
  if (int rc = mdb_env_info(store_->env(), &info); rc != 0) return Fail(rc, "read the map size");
  int64_t used = static_cast<int64_t>(info.me_last_pgno) + 1;
  if (used + headroom <= total) return Status::OK();
  // Pages freed by earlier commits are reused before the map grows: count
  // them (the free list holds one entry per freeing transaction).
  // LMDB opens the free list (sub-database 0) only to read transactions: read
  // the committed one (MDB_NOTLS lets this thread hold both).
  MDB_txn* reader = nullptr;
  if (int rc = mdb_txn_begin(store_->env(), nullptr, MDB_RDONLY, &reader); rc != 0) {
    return Fail(rc, "read the free list");
  }
  MDB_cursor* c = nullptr;
  int rc = mdb_cursor_open(reader, 0, &c);
  MDB_val k{}, v{};
  if (rc == 0) rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
  while (rc == 0) {
    if (v.mv_size >= sizeof(size_t)) {
      size_t n = 0;
      std::memcpy(&n, v.mv_data, sizeof(n));
      used -= static_cast<int64_t>(n);
    }
    rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
  }
  if (c) mdb_cursor_close(c);
  mdb_txn_abort(reader);
  if (rc != MDB_NOTFOUND) return Fail(rc, "walk the free list");
  if (used + headroom <= total) return Status::OK();
  return Status::StoreFull(
      "LMDB store " + store_->dir() + ": the map is at its cap of " + Mib(cap) +
      " (LmdbOptions::max_map_bytes) with " + std::to_string(used * psize >> 10) +
      " KiB in use; new messages are refused while the last " +
      std::to_string(headroom * psize >> 10) +
      " KiB stay free for completes and purges to drain the backlog");
}

// ---- Opening ----

struct EnvCloser {
  MDB_env* env = nullptr;
  ~EnvCloser() {
    if (env) mdb_env_close(env);
  }
};

Status OpenDbis(MDB_env* env, const std::string& dir, std::array<MDB_dbi, kDbCount>* dbis,
                int64_t* last_seq, bool read_only = false) {
  MDB_txn* txn = nullptr;
  if (int rc = mdb_txn_begin(env, nullptr, read_only ? MDB_RDONLY : 0, &txn); rc != 0) {
    return LmdbStatus(rc, "LMDB store " + dir + ": begin the opening transaction");
  }
  auto fail = [&](Status s) {
    mdb_txn_abort(txn);
    return s;
  };
  MDB_dbi meta = 0;
  int rc = mdb_dbi_open(txn, DbName(kMeta), 0, &meta);
  const bool fresh = rc == MDB_NOTFOUND;
  if (rc != 0 && !fresh) return fail(LmdbStatus(rc, "LMDB store " + dir + ": open mqlite/meta"));
  if (fresh && read_only) {
    return fail(Status::InvalidArgument("LMDB store " + dir +
                                        ": the environment holds no mqlite schema: nothing to "
                                        "inspect"));
  }
  if (fresh) {
    // A new environment, or one holding someone else's data: refuse the
    // latter rather than mix our sub-databases into it.
    MDB_dbi main = 0;
    MDB_stat st{};
    if ((rc = mdb_dbi_open(txn, nullptr, 0, &main)) != 0 ||
        (rc = mdb_stat(txn, main, &st)) != 0) {
      return fail(LmdbStatus(rc, "LMDB store " + dir + ": read the main database"));
    }
    if (st.ms_entries > 0) {
      return fail(Status::SchemaVersionMismatch(
          "LMDB store " + dir +
          ": the environment holds data but no mqlite schema (it is not an mqlite store); "
          "nothing was changed"));
    }
  } else {
    MDB_val k = V(kSchemaKey), v{};
    rc = mdb_get(txn, meta, &k, &v);
    const std::string found = rc == 0 ? std::string(SV(v)) : std::string("(none)");
    if (found != kLmdbSchemaToken) {
      return fail(Status::SchemaVersionMismatch(
          "LMDB store " + dir + ": schema '" + found + "', this build reads '" +
          kLmdbSchemaToken + "'; nothing was changed"));
    }
  }
  for (int i = 0; i < kPhysicalDbs; ++i) {
    const Db db = static_cast<Db>(i);
    if ((rc = mdb_dbi_open(txn, DbName(db), fresh ? MDB_CREATE : 0, &(*dbis)[i])) != 0) {
      if (rc == MDB_NOTFOUND) {
        return fail(Status::Corruption("LMDB store " + dir + ": sub-database " + DbName(db) +
                                       " is missing"));
      }
      return fail(LmdbStatus(rc, "LMDB store " + dir + ": open " + DbName(db)));
    }
  }
  if (fresh) {
    MDB_val k = V(kSchemaKey), v = V(kLmdbSchemaToken);
    if ((rc = mdb_put(txn, (*dbis)[kMeta], &k, &v, 0)) != 0) {
      return fail(LmdbStatus(rc, "LMDB store " + dir + ": write the schema token"));
    }
  }
  // The seq counter (LmdbTxn::NextSeq): above every seq ever committed.
  *last_seq = 0;
  MDB_val k = V(kLastSeqKey), v{};
  if (mdb_get(txn, (*dbis)[kMeta], &k, &v) == 0 && v.mv_size == 8) {
    *last_seq = ReadI64(static_cast<const char*>(v.mv_data));
  }
  MDB_cursor* c = nullptr;
  if ((rc = mdb_cursor_open(txn, (*dbis)[kIndex], &c)) != 0) {
    return fail(LmdbStatus(rc, "LMDB store " + dir + ": read the queue records"));
  }
  const std::string first_queue(1, kQueueKeyTag);
  k = V(first_queue);
  for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0 && SV(k).starts_with(first_queue);
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    Result<QueueData> q = DecodeQueue(SV(v));
    if (!q.ok()) {
      mdb_cursor_close(c);
      return fail(q.status());
    }
    *last_seq = std::max(*last_seq, q->last_seq);
  }
  mdb_cursor_close(c);
  if (rc != 0 && rc != MDB_NOTFOUND) {
    return fail(LmdbStatus(rc, "LMDB store " + dir + ": read the queue records"));
  }
  if ((rc = mdb_txn_commit(txn)) != 0) {
    return LmdbStatus(rc, "LMDB store " + dir + ": commit the opening transaction");
  }
  return Status::OK();
}

// The store over an opened environment (which it then owns).
Result<std::unique_ptr<Store>> Adopt(std::unique_ptr<FileLock> lock, EnvCloser* env,
                                     const std::array<MDB_dbi, kDbCount>& dbis,
                                     const std::string& dir, const LmdbOptions& options,
                                     int64_t last_seq) {
  MDB_envinfo info{};
  MDB_stat stat{};
  mdb_env_info(env->env, &info);
  mdb_env_stat(env->env, &stat);
  LmdbStore* store = new LmdbStore(std::move(lock), env->env, dbis, dir, options,
                                   static_cast<int64_t>(info.me_mapsize),
                                   static_cast<int64_t>(stat.ms_psize), last_seq);
  env->env = nullptr;  // the store owns it now
  return std::unique_ptr<Store>(store);
}

// LmdbOptions::read_only: MDB_RDONLY on an existing environment, registered
// in this process (FileLock::ForReading: LMDB must never be opened twice in
// one process) but not locked, so its owner keeps running.
Result<std::unique_ptr<Store>> OpenReadOnly(const LmdbOptions& options) {
  const std::string& dir = options.dir;
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return Status::NotFound("LMDB store " + dir + " does not exist (nothing to inspect)");
    }
    return OsErrorStatus(errno, "LMDB store " + dir + ": stat");
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("LMDB store " + dir + ": not a directory");
  }
  MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock, FileLock::ForReading(dir + "/data.mdb"));
  const std::string data = lock->canonical_path();
  if (::stat(data.c_str(), &st) == 0 && st.st_size == 0) {
    // Never written (MDB_RDONLY cannot read a meta page that is not there).
    return Status::InvalidArgument("LMDB store " + dir +
                                   ": data.mdb is empty, so it holds no mqlite schema: nothing to "
                                   "inspect");
  }
  const std::string canonical_dir = data.substr(0, data.rfind('/'));
  EnvCloser env;
  if (int rc = mdb_env_create(&env.env); rc != 0) {
    return LmdbStatus(rc, "LMDB store " + dir + ": mdb_env_create");
  }
  mdb_env_set_maxdbs(env.env, kMaxDbs);
  // MDB_RDONLY maps at least the size the owner last committed.
  const unsigned flags = MDB_RDONLY | MDB_NOTLS;  // MDB_NOTLS as for the owner (EnvFlagsFor)
  if (int rc = mdb_env_open(env.env, canonical_dir.c_str(), flags, 0644); rc != 0) {
    if (rc == MDB_INVALID) {
      return Status::Corruption("LMDB store " + dir + ": data.mdb is not an LMDB environment");
    }
    return LmdbStatus(rc, "LMDB store " + dir + ": mdb_env_open (read-only)");
  }
  std::array<MDB_dbi, kDbCount> dbis{};
  int64_t last_seq = 0;
  MQLITE_RETURN_IF_ERROR(OpenDbis(env.env, dir, &dbis, &last_seq, /*read_only=*/true));
  return Adopt(std::move(lock), &env, dbis, dir, options, last_seq);
}

Result<std::unique_ptr<Store>> Open(const LmdbOptions& options) {
  if (options.dir.empty()) return Status::InvalidArgument("LmdbOptions.dir is empty");
  if (DurabilityName(options.durability) == "unknown") {
    return Status::InvalidArgument("LmdbOptions.durability is not kNormal, kFull or kProcessOnly");
  }
  if (options.initial_map_bytes < (int64_t{1} << 16) ||
      options.max_map_bytes < options.initial_map_bytes) {
    return Status::InvalidArgument(
        "LmdbOptions: initial_map_bytes must be at least 64 KiB and max_map_bytes at least "
        "initial_map_bytes (got " +
        std::to_string(options.initial_map_bytes) + " and " +
        std::to_string(options.max_map_bytes) + ")");
  }
  if (options.read_only) return OpenReadOnly(options);
  const std::string& dir = options.dir;
  struct stat st{};
  bool created_dir = false;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument("LMDB store " + dir +
                                     ": not a directory (an LMDB environment is a directory "
                                     "holding data.mdb and lock.mdb)");
    }
  } else if (errno == ENOENT) {
    if (::mkdir(dir.c_str(), 0755) != 0) {
      return OsErrorStatus(errno, "LMDB store " + dir + ": create the directory");
    }
    created_dir = true;
  } else {
    return OsErrorStatus(errno, "LMDB store " + dir + ": stat");
  }
  Result<std::unique_ptr<FileLock>> locked = FileLock::Acquire(dir + "/data.mdb");
  if (!locked) {
    if (created_dir) ::rmdir(dir.c_str());
    return locked.status();
  }
  std::unique_ptr<FileLock> lock = std::move(*locked);
  const std::string data = lock->canonical_path();
  const std::string canonical_dir = data.substr(0, data.rfind('/'));
  const bool created_file = lock->created_file();
  // A refused open removes what it created: lock.mdb beside a new data.mdb,
  // the data file and sidecar (FileLock::Abandon), the directory.
  auto refuse = [&](Status s) -> Result<std::unique_ptr<Store>> {
    if (created_file) ::unlink((canonical_dir + "/lock.mdb").c_str());
    FileLock::Abandon(std::move(lock));
    if (created_dir) ::rmdir(dir.c_str());
    return s;
  };
  EnvCloser env;
  if (int rc = mdb_env_create(&env.env); rc != 0) {
    return refuse(LmdbStatus(rc, "LMDB store " + dir + ": mdb_env_create"));
  }
  mdb_env_set_maxdbs(env.env, kMaxDbs);
  mdb_env_set_mapsize(env.env, static_cast<size_t>(options.initial_map_bytes));
  if (int rc = mdb_env_open(env.env, canonical_dir.c_str(), EnvFlagsFor(options.durability), 0644);
      rc != 0) {
    mdb_env_close(env.env);
    env.env = nullptr;
    if (rc == MDB_INVALID) {
      return refuse(Status::Corruption("LMDB store " + dir +
                                       ": data.mdb is not an LMDB environment; nothing was changed"));
    }
    return refuse(LmdbStatus(rc, "LMDB store " + dir + ": mdb_env_open"));
  }
  int dead = 0;
  mdb_reader_check(env.env, &dead);  // a SIGKILLed reader must not pin pages
  std::array<MDB_dbi, kDbCount> dbis{};
  int64_t last_seq = 0;
  Status s = OpenDbis(env.env, dir, &dbis, &last_seq);
  // A map too small even for the sub-databases grows like any other.
  for (int64_t size = options.initial_map_bytes;
       s.code() == StatusCode::kStoreFull && size < options.max_map_bytes;) {
    size = std::min(options.max_map_bytes, size * 2);
    mdb_env_set_mapsize(env.env, static_cast<size_t>(size));
    s = OpenDbis(env.env, dir, &dbis, &last_seq);
  }
  if (!s.ok()) {
    mdb_env_close(env.env);
    env.env = nullptr;
    return refuse(s);
  }
  return Adopt(std::move(lock), &env, dbis, dir, options, last_seq);
}

}  // namespace

unsigned EnvFlagsFor(Durability durability) {
  // MDB_NOTLS: read transactions are not tied to threads (the engine may run
  // a read on any thread). kNormal: MDB_NOMETASYNC — data pages are synced at
  // every commit, the meta page at the next one, so a power loss may lose
  // the last commit but never integrity. Never MDB_NOSYNC / MDB_MAPASYNC
  // (corruption where the file system reorders writes) or MDB_WRITEMAP
  // (savepoints need nested transactions).
  unsigned flags = MDB_NOTLS;
  if (durability == Durability::kNormal) flags |= MDB_NOMETASYNC;
  if (durability == Durability::kProcessOnly) flags |= MDB_NOSYNC;
  return flags;
}

Probe* ProbeOf(Store* store) {
  auto* s = dynamic_cast<LmdbStore*>(store);
  return s ? &s->probe() : nullptr;
}

}  // namespace lmdb_internal

Result<std::unique_ptr<Store>> OpenLmdbStore(const LmdbOptions& options) {
  return lmdb_internal::Open(options);
}

Result<MDB_txn*> LmdbHandle(TxContext& tx) {
  return NativeHandleAs<MDB_txn>(tx, lmdb_internal::kHandleType, "LmdbHandle");
}

}  // namespace mqlite
