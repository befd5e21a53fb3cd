// The SQLite reference store. See schema.h for the layout and
// docs/sqlite-store.md for the design.
//
// Concurrency: one connection, opened with SQLITE_OPEN_NOMUTEX and guarded by
// gate_; Run() serialises bodies. A second connection, on a thread of its
// own, only checkpoints the WAL (checkpointer.h). The file is exclusive to
// this store (SPEC §9), so no other writer exists and BEGIN IMMEDIATE never
// waits.
#include "mqlite/sqlite.h"

#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "checkpointer.h"
#include "mqlite/file_lock.h"
#include "mqlite/store_util.h"
#include "queries.h"
#include "schema.h"

namespace mqlite {

const char* const kSqliteSchemaToken = "mqlite-sqlite-4";

namespace {
constexpr char kHandleType[] = "sqlite3";
}  // namespace

Result<sqlite3*> SqliteHandle(TxContext& tx) {
  return NativeHandleAs<sqlite3>(tx, kHandleType, "SqliteHandle");
}

namespace internal {
namespace {

constexpr int kActive = static_cast<int>(MessageState::kActive);
constexpr int kLocked = static_cast<int>(MessageState::kLocked);
constexpr int kDeferred = static_cast<int>(MessageState::kDeferred);
constexpr int kScheduled = static_cast<int>(MessageState::kScheduled);
constexpr int kDead = static_cast<int>(MessageState::kDeadLettered);

// The one mapping from SQLite result codes to mqlite codes (SPEC §10). An
// embedded store never retries: a failed statement did not happen.
//
// The message names the database file and says what is wrong in words; the
// operation and SQLite's own text follow in parentheses. Codes:
//   SQLITE_FULL, or an I/O error whose errno is ENOSPC, EDQUOT or EFBIG
//                  → StoreFull (permanent until space is freed)
//   SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH, or an I/O or open error whose
//                  errno is EACCES, EPERM or EROFS → InvalidArgument
//   SQLITE_NOTADB  → InvalidArgument ("'<file>' is not an SQLite database":
//                  the caller pointed the store at the wrong file)
//   SQLITE_CORRUPT, SQLITE_FORMAT → Corruption
//   SQLITE_CANTOPEN → InvalidArgument, unless the OS ran out of descriptors
//                  or memory (EMFILE, ENFILE, ENOMEM) → Unavailable
//   SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_PROTOCOL, other I/O
//                  errors → Unavailable
//   SQLITE_INTERRUPT → Cancelled; anything else → Internal
//
// For an I/O error the OS errno is often lost: sqlite3_system_errno reports
// the global errno when SQLite records the error, not the errno of the WAL
// write that failed (measured: IOERR_WRITE with errno 0 past RLIMIT_FSIZE).
// So an I/O error is also StoreFull when a file of the database is at the
// process's file-size limit or its file system is (nearly) full.
std::optional<std::string> WriteLimitReached(sqlite3* db) {
  const char* f = db ? sqlite3_db_filename(db, "main") : nullptr;
  if (f == nullptr || *f == '\0') return std::nullopt;
  const std::string file(f);
  struct rlimit rl;
  if (::getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      struct stat st;
      if (::stat((file + suffix).c_str(), &st) == 0 &&
          static_cast<uint64_t>(st.st_size) + 65536 >= static_cast<uint64_t>(rl.rlim_cur)) {
        return "the file-size limit (RLIMIT_FSIZE, " + std::to_string(rl.rlim_cur) +
               " bytes) is reached";
      }
    }
  }
  const auto slash = file.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
  struct statvfs vs;
  if (::statvfs(dir.c_str(), &vs) == 0 &&
      static_cast<uint64_t>(vs.f_bavail) * vs.f_frsize < (uint64_t{1} << 20)) {
    return "the disk is full";
  }
  return std::nullopt;
}

Status ToStatus(int rc, sqlite3* db, std::string_view what) {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return Status::OK();
  const char* file = db ? sqlite3_db_filename(db, "main") : nullptr;
  const std::string name = file && *file ? "'" + std::string(file) + "'" : "the database";
  const std::string detail =
      " (" + std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)) + ")";
  const int primary = rc & 0xff;
  const int err = db && (primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN ||
                         primary == SQLITE_FULL || primary == SQLITE_READONLY)
                      ? sqlite3_system_errno(db)
                      : 0;
  if (primary == SQLITE_FULL || err == ENOSPC || err == EDQUOT) {
    return Status::StoreFull("database " + name +
                             ": the disk is full or the file-size limit is reached" + detail);
  }
  if (err == EFBIG) {
    return Status::StoreFull("database " + name +
                             ": the file-size limit (RLIMIT_FSIZE) is reached" + detail);
  }
  if (err == EACCES || err == EPERM || err == EROFS) {
    return Status::InvalidArgument("database " + name +
                                   (err == EROFS ? ": the file system is read-only"
                                                 : ": the process is not allowed to write it") +
                                   detail);
  }
  switch (primary) {
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return Status::InvalidArgument("database " + name + " cannot be written" + detail);
    case SQLITE_NOTADB:
      return Status::InvalidArgument(name + " is not an SQLite database" + detail);
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
      return Status::Corruption("database " + name + " is corrupt" + detail);
    case SQLITE_CANTOPEN:
      if (err == EMFILE || err == ENFILE || err == ENOMEM) {
        return Status::Unavailable("database " + name + ": out of file descriptors or memory" +
                                   detail);
      }
      return Status::InvalidArgument("database " + name + " cannot be opened" + detail);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable("database " + name + " is busy" + detail);
    case SQLITE_IOERR:
      if (std::optional<std::string> limit = WriteLimitReached(db)) {
        return Status::StoreFull("database " + name + ": " + *limit + detail);
      }
      return Status::Unavailable("database " + name + ": I/O error" +
                                 (err != 0 ? std::string(": ") + std::strerror(err) : "") + detail);
    case SQLITE_NOMEM:
    case SQLITE_PROTOCOL:
      return Status::Unavailable("database " + name + ": transient failure" + detail);
    case SQLITE_INTERRUPT:
      return Status::Cancelled("database " + name + ": interrupted" + detail);
    default:
      return Status::Internal("database " + name + ": internal error" + detail);
  }
}

class Conn;

// A cached prepared statement in use: binds left to right, resets on scope
// exit. SQL must be a string literal (the cache is keyed by its address).
class Query {
 public:
  Query(Conn* conn, const char* sql);
  ~Query() {
    if (st_) {
      sqlite3_reset(st_);
      sqlite3_clear_bindings(st_);
    }
  }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  Query& Int(int64_t v) {
    if (st_) sqlite3_bind_int64(st_, ++idx_, v);
    return *this;
  }
  Query& Text(std::string_view v) {
    if (st_) sqlite3_bind_text(st_, ++idx_, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // Bytes as a BLOB; "" is a zero-length BLOB, distinct from NULL.
  Query& Bytes(std::string_view v) {
    if (!st_) return *this;
    if (v.empty()) {
      sqlite3_bind_zeroblob(st_, ++idx_, 0);
    } else {
      sqlite3_bind_blob(st_, ++idx_, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    }
    return *this;
  }
  Query& OptBytes(const std::optional<std::string>& v) {
    if (!v) return Null();
    return Bytes(*v);
  }
  Query& Null() {
    if (st_) sqlite3_bind_null(st_, ++idx_);
    return *this;
  }
  Query& Token(const LockToken& t) {
    return Bytes(std::string_view(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size()));
  }

  // true: a row is available; false: done.
  Result<bool> Step();
  // Runs to completion (no rows expected or wanted).
  Status Exec() {
    for (;;) {
      auto r = Step();
      if (!r) return r.error();
      if (!*r) return Status::OK();
    }
  }

  int64_t ColInt(int c) const { return sqlite3_column_int64(st_, c); }
  bool IsNull(int c) const { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
  std::string ColBytes(int c) const {
    const void* p = sqlite3_column_blob(st_, c);
    int n = sqlite3_column_bytes(st_, c);
    return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
  }
  std::optional<std::string> ColOptBytes(int c) const {
    if (IsNull(c)) return std::nullopt;
    return ColBytes(c);
  }
  LockToken ColToken(int c) const {
    LockToken t;
    if (IsNull(c)) return t;
    std::string b = ColBytes(c);
    if (b.size() == t.bytes.size()) std::memcpy(t.bytes.data(), b.data(), b.size());
    return t;
  }

 private:
  Conn* conn_;
  const char* sql_;
  sqlite3_stmt* st_ = nullptr;
  int idx_ = 0;
};

class Conn {
 public:
  explicit Conn(sqlite3* db) : db_(db) {}
  ~Conn() {
    for (auto& [sql, st] : cache_) sqlite3_finalize(st);
    sqlite3_close_v2(db_);
  }
  sqlite3* db() const { return db_; }

  // nullptr on failure, with the error in *status.
  sqlite3_stmt* Prepare(const char* sql, Status* status) {
    auto it = cache_.find(sql);
    if (it != cache_.end()) return it->second;
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr);
    if (rc != SQLITE_OK) {
      *status = ToStatus(rc, db_, std::string("prepare [") + sql + "]");
      return nullptr;
    }
    cache_.emplace(sql, st);
    return st;
  }

  Status ExecScript(const char* sql, std::string_view what) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
    if (err) sqlite3_free(err);
    return rc == SQLITE_OK ? Status::OK() : ToStatus(rc, db_, what);
  }

 private:
  sqlite3* db_;
  std::unordered_map<const char*, sqlite3_stmt*> cache_;
};

Query::Query(Conn* conn, const char* sql) : conn_(conn), sql_(sql) {
  Status ignored;
  st_ = conn_->Prepare(sql, &ignored);
}

Result<bool> Query::Step() {
  if (!st_) {
    Status s;
    conn_->Prepare(sql_, &s);
    return s.ok() ? Status::Internal("statement not prepared") : s;
  }
  int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return ToStatus(rc, conn_->db(), "step");
}

// Transaction control through cached prepared statements: sqlite3_exec would
// parse the text again on every transaction and savepoint. (These have no
// query plan, so they are not in the queries.h catalog.)
constexpr char kBeginWrite[] = "BEGIN IMMEDIATE";
constexpr char kBeginRead[] = "BEGIN";
constexpr char kCommit[] = "COMMIT";
constexpr char kRollback[] = "ROLLBACK";
// Savepoints nest under one name: RELEASE and ROLLBACK TO act on the
// innermost savepoint of that name, which is always the one to end here.
constexpr char kSavepoint[] = "SAVEPOINT mqlite_sp";
constexpr char kRelease[] = "RELEASE mqlite_sp";
constexpr char kRollbackTo[] = "ROLLBACK TO mqlite_sp";

Status Control(Conn* conn, const char* literal) {
  Query q(conn, literal);
  return q.Exec();
}

Result<Message> ReadMessage(const Query& q, const std::string& queue_name) {
  Message m;
  m.seq = q.ColInt(0);
  m.queue = queue_name;
  m.state = static_cast<MessageState>(q.ColInt(1));
  m.priority = static_cast<int>(q.ColInt(2));
  m.enqueued_at = q.ColInt(3);
  m.visible_at = q.ColInt(4);
  m.expires_at = q.ColInt(5);
  m.delivery_count = static_cast<int32_t>(q.ColInt(6));
  m.locked_until = q.ColInt(7);
  m.lock_token = q.ColToken(8);
  m.dead_lettered_at = q.ColInt(9);
  m.dead_letter_reason = q.ColOptBytes(10);
  m.dead_letter_description = q.ColOptBytes(11);
  m.message_id = q.ColOptBytes(12);
  m.group_id = q.ColOptBytes(13);
  m.subject = q.ColOptBytes(14);
  m.correlation_id = q.ColOptBytes(15);
  m.content_type = q.ColOptBytes(16);
  if (!q.IsNull(17)) MQLITE_RETURN_IF_ERROR(DecodePropertyBlob(q.ColBytes(17), &m.properties));
  m.body = q.ColBytes(18);
  return m;
}

QueueRecord ReadQueue(const Query& q) {
  QueueRecord r;
  r.id = q.ColInt(0);
  r.config.name = q.ColBytes(1);
  r.config.lock_duration_ms = q.ColInt(2);
  r.config.max_delivery_count = static_cast<int32_t>(q.ColInt(3));
  r.config.default_ttl_ms = q.ColInt(4);
  r.config.dead_letter_on_expire = q.ColInt(5) != 0;
  r.config.dedup_window_ms = q.ColInt(6);
  r.config.ordering = static_cast<Ordering>(q.ColInt(7));
  r.config.dlq_max_age_ms = q.ColInt(8);
  r.config.dlq_max_count = q.ColInt(9);
  r.config.dlq_max_bytes = q.ColInt(10);
  r.config.max_message_bytes = q.ColInt(11);
  return r;
}

// The few columns settle and maintenance decisions need: the facts the
// queue rules read (store_util.h) plus what headship and DLQ totals need.
struct RowRef : RowFacts {
  int64_t seq = 0;
  bool is_head = false;
  std::optional<std::string> group_key;
  int64_t body_size = 0;
};

// The row a refusal check reads: nullptr when there is none.
const RowFacts* Facts(const std::optional<RowRef>& row) { return row ? &*row : nullptr; }

RowRef ReadRef(const Query& q) {
  RowRef r;
  r.seq = q.ColInt(0);
  r.state = static_cast<MessageState>(q.ColInt(1));
  r.is_head = q.ColInt(2) != 0;
  r.group_key = q.ColOptBytes(3);
  r.body_size = q.ColInt(4);
  r.expires_at = q.ColInt(5);
  r.delivery_count = static_cast<int32_t>(q.ColInt(6));
  r.locked_until = q.ColInt(7);
  r.token = q.ColToken(8);
  return r;
}

// What the store keeps in memory across transactions. Every field is
// guarded by the store's RunGate (one transaction at a time).
struct StoreState {
  // The seq counter (schema.h): the next seq to hand out, and the highest
  // seq mqlite_meta has reserved (committed or in the open transaction).
  // `next` never goes back, even past a rollback: a seq handed out in a
  // transaction that then rolled back is skipped, not reused (store.h
  // allows either), so no seq can be handed out twice whatever the
  // application did to the transaction through the native handle.
  struct Seqs {
    int64_t next = 1;
    int64_t reserved = 0;
    // After a rollback the reservation may not be in the file: the next
    // NextSeq writes a new one (next + block − 1, never below a reservation
    // written before, since `next` only grows).
    void ForgetReservation() { reserved = 0; }
  } seqs;
  // Queue records by name, as committed: the store is exclusive (SPEC §9),
  // so only its own transactions change them. A transaction that creates,
  // changes or deletes a queue clears the cache and bypasses it until it
  // ends, and it is cleared again then, whether it committed or not.
  std::unordered_map<std::string, QueueRecord> queues;
  bool queues_changed = false;
  // The receipt sweep (SqliteTxn::SweepReceipts): the key the last sweep
  // stopped after ("" = the start of the table), and how many receipts were
  // put since. A sweep that rolls back keeps the advanced cursor: the rows it
  // deleted and lost wait for the next lap.
  struct ReceiptSweep {
    std::string after;
    int64_t puts = 0;
  } receipt_sweep;
  // Seqs a claim locked that belong to a group: their Complete skips the
  // one-statement path (it would find the row grouped and fall through).
  // Only a hint, so rollbacks, reopens and lost leases need no bookkeeping:
  // a seq missing here costs one failed statement, a stale one the general
  // path; the bound keeps leases that are never settled from piling up.
  std::unordered_set<int64_t> grouped_locks;
  static constexpr size_t kMaxGroupedLocks = 1 << 16;
};

// A claim candidate as kClaimCandidates reads it: the whole message, and
// the row facts the claim's rules and writes need.
struct Candidate : RowRef {
  Message message;
};

Result<Candidate> ReadCandidate(const Query& q, const std::string& queue_name) {
  Candidate c;
  MQLITE_ASSIGN_OR_RETURN(c.message, ReadMessage(q, queue_name));
  const Message& m = c.message;
  c.seq = m.seq;
  c.state = m.state;
  c.expires_at = m.expires_at;
  c.delivery_count = m.delivery_count;
  c.locked_until = m.locked_until;
  c.token = m.lock_token;
  c.is_head = q.ColInt(19) != 0;
  c.group_key = q.ColOptBytes(20);
  c.body_size = q.ColInt(21);
  return c;
}

class SqliteTxn final : public StoreTxn {
 public:
  SqliteTxn(Conn* conn, StoreState* state) : c_(conn), st_(state) {}

  // ---- Queues ----

  Result<QueueRecord> UpsertQueue(const QueueConfig& cfg, int64_t now, bool* created) override {
    auto existing = GetQueue(cfg.name);
    QueuesChanged();
    if (existing) {
      if (existing->config.ordering != cfg.ordering) {
        Query any(c_, kQueueHasMessages);
        any.Int(existing->id);
        MQLITE_ASSIGN_OR_RETURN(bool has, any.Step());
        MQLITE_RETURN_IF_ERROR(CheckOrderingChange(existing->config, cfg, has));
      }
      Query u(c_, kUpdateQueue);
      BindConfig(u, cfg).Int(existing->id);
      MQLITE_RETURN_IF_ERROR(u.Exec());
      if (created) *created = false;
      return QueueRecord{existing->id, cfg};
    }
    if (existing.error().code() != StatusCode::kQueueNotFound) return existing.error();
    Query ins(c_, kInsertQueue);
    ins.Text(cfg.name);
    BindConfig(ins, cfg).Int(now);
    MQLITE_RETURN_IF_ERROR(ins.Exec());
    if (created) *created = true;
    return QueueRecord{sqlite3_last_insert_rowid(c_->db()), cfg};
  }

  Result<QueueRecord> GetQueue(std::string_view name) override {
    const bool cache = !st_->queues_changed;
    if (cache) {
      if (auto it = st_->queues.find(std::string(name)); it != st_->queues.end()) return it->second;
    }
    Query q(c_, kGetQueue);
    q.Text(name);
    MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return Status::QueueNotFound("queue '" + std::string(name) + "' does not exist");
    QueueRecord r = ReadQueue(q);
    if (cache) st_->queues.emplace(r.config.name, r);
    return r;
  }

  Result<std::vector<QueueRecord>> ListQueues() override {
    Query q(c_, kListQueues);
    std::vector<QueueRecord> out;
    for (;;) {
      MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      out.push_back(ReadQueue(q));
    }
    return out;
  }

  Status DeleteQueue(const QueueRecord& queue) override {
    QueuesChanged();
    Query dm(c_, kDeleteQueueMessages);
    dm.Int(queue.id);
    MQLITE_RETURN_IF_ERROR(dm.Exec());
    Query dq(c_, kDeleteQueueRow);
    dq.Int(queue.id);
    return dq.Exec();
  }

  // ---- Enqueue ----

  Result<std::vector<int64_t>> Enqueue(const QueueRecord& queue,
                                       std::span<const EnqueueItem> items) override {
    // Rows go in as multi-row INSERTs (queries.h ChunkRows). A group's head
    // flag needs the groups earlier in this batch, which the table does not
    // show yet: those are tracked here.
    struct Row {
      const EnqueueItem* item;
      int64_t seq;
      bool head;
      std::string properties;
    };
    std::vector<Row> rows;
    rows.reserve(items.size());
    std::unordered_set<std::string_view> batch_groups;
    for (const EnqueueItem& it : items) {
      bool head = true;
      if (it.group_key) {
        if (!batch_groups.insert(*it.group_key).second) {
          head = false;
        } else {
          MQLITE_ASSIGN_OR_RETURN(bool live, GroupHasLiveMember(queue.id, *it.group_key));
          head = !live;
        }
      }
      MQLITE_ASSIGN_OR_RETURN(int64_t seq, NextSeq());
      const OutgoingMessage& m = *it.message;
      rows.push_back({&it, seq, head,
                      m.properties.empty() ? std::string() : EncodePropertyBlob(m.properties)});
    }
    for (size_t done = 0; done < rows.size();) {
      const size_t n = ChunkRows(rows.size() - done);
      Query ins(c_, InsertMessagesSql(n));
      for (size_t r = done; r < done + n; ++r) {
        const EnqueueItem& it = *rows[r].item;
        const OutgoingMessage& m = *it.message;
        ins.Int(queue.id)
            .Int(static_cast<int>(it.state))
            .Int(rows[r].seq)
            .Int(rows[r].head ? 1 : 0)
            .Int(m.priority)
            .OptBytes(it.group_key)
            .Int(it.enqueued_at)
            .Int(it.visible_at)
            .Int(it.expires_at)
            .OptBytes(m.message_id)
            .OptBytes(m.group_id)
            .OptBytes(m.subject)
            .OptBytes(m.correlation_id)
            .OptBytes(m.content_type);
        if (m.properties.empty()) {
          ins.Null();
        } else {
          ins.Bytes(rows[r].properties);
        }
        ins.Bytes(m.body);
      }
      MQLITE_RETURN_IF_ERROR(ins.Exec());
      done += n;
    }
    std::vector<int64_t> seqs;
    seqs.reserve(rows.size());
    for (const Row& r : rows) seqs.push_back(r.seq);
    return seqs;
  }

  Status CancelScheduled(const QueueRecord& queue, int64_t seq) override {
    MQLITE_ASSIGN_OR_RETURN(std::optional<RowRef> row, LoadRef(queue.id, kScheduled, seq));
    MQLITE_RETURN_IF_ERROR(CheckCancelScheduled(Facts(row), seq));
    return Remove(queue, *row, /*fresh=*/true);
  }

  // ---- Claim ----

  Result<std::vector<Message>> Claim(const QueueRecord& queue, const ClaimRequest& req) override {
    MQLITE_RETURN_IF_ERROR(CheckClaimRequest(req));
    std::vector<Message> out;
    const bool peek_lock = req.mode == ReceiveMode::kPeekLock;
    // Peek-Lock takes are written a chunk of rows per statement (queries.h
    // ChunkRows), before every read of the claim index and at the end: a
    // read must not return a row this claim already took.
    std::vector<std::pair<int64_t, const LockToken*>> locks;
    auto write_locks = [&]() -> Status {
      for (size_t done = 0; done < locks.size();) {
        const size_t n = ChunkRows(locks.size() - done);
        Query u(c_, n == 1 ? kLockActive : LockActivesSql(n));
        if (n == 1) {
          u.Token(*locks[done].second).Int(req.locked_until).Int(queue.id).Int(locks[done].first);
        } else {
          for (size_t r = done; r < done + n; ++r) u.Int(locks[r].first).Token(*locks[r].second);
          u.Int(req.locked_until).Int(queue.id);
        }
        MQLITE_RETURN_IF_ERROR(u.Exec());
        if (sqlite3_changes(c_->db()) != static_cast<int>(n)) {
          return Status::Internal("claim: a row vanished");
        }
        done += n;
      }
      locks.clear();
      return Status::OK();
    };
    MQLITE_RETURN_IF_ERROR(ClaimInChunks<Candidate>(
        req, queue.config,
        [&](int64_t limit) -> Result<std::vector<Candidate>> {
          MQLITE_RETURN_IF_ERROR(write_locks());
          std::vector<Candidate> rows;
          Query q(c_, kClaimCandidates);
          q.Int(queue.id).Int(limit);
          for (;;) {
            MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
            if (!row) break;
            MQLITE_ASSIGN_OR_RETURN(Candidate c, ReadCandidate(q, queue.config.name));
            rows.push_back(std::move(c));
          }
          return rows;
        },
        [&](const Candidate& r, const Verdict& v) -> Result<ClaimTake> {
          if (v.action != Verdict::Action::kDeliver) {
            MQLITE_RETURN_IF_ERROR(Apply(queue, r, v, req.now));
            return ClaimTake::kRetired;
          }
          Message m = r.message;
          if (peek_lock) {
            const LockToken& token = req.tokens[out.size()];
            locks.emplace_back(r.seq, &token);
            // The row as write_locks leaves it.
            m.state = MessageState::kLocked;
            m.lock_token = token;
            m.locked_until = req.locked_until;
            m.delivery_count += 1;
            if (r.group_key) {
              if (st_->grouped_locks.size() >= StoreState::kMaxGroupedLocks) {
                st_->grouped_locks.clear();
              }
              st_->grouped_locks.insert(r.seq);
            }
          } else {
            Query d(c_, kDeleteMessage);
            d.Int(queue.id).Int(kActive).Int(r.seq);
            MQLITE_RETURN_IF_ERROR(ExecOne(d, "claim"));
            AsReceivedAndDeleted(&m);
            // A candidate is a head: its group's next member takes over.
            if (r.group_key) MQLITE_RETURN_IF_ERROR(PromoteNext(queue.id, *r.group_key));
          }
          out.push_back(std::move(m));
          return ClaimTake::kDelivered;
        }));
    MQLITE_RETURN_IF_ERROR(write_locks());
    return out;
  }

  Result<Message> ClaimDeferred(const QueueRecord& queue, int64_t seq, const LockToken& token,
                                int64_t now, int64_t locked_until) override {
    MQLITE_ASSIGN_OR_RETURN(std::optional<RowRef> row, LoadRef(queue.id, kDeferred, seq));
    MQLITE_RETURN_IF_ERROR(CheckClaimDeferred(Facts(row), queue.config, seq, now));
    {
      Query u(c_, kLockDeferred);
      u.Token(token).Int(locked_until).Int(queue.id).Int(seq);
      MQLITE_RETURN_IF_ERROR(ExecOne(u, "claim deferred"));
    }
    Query q(c_, kLoadMessage);
    q.Int(queue.id).Int(kLocked).Int(seq);
    MQLITE_ASSIGN_OR_RETURN(bool locked, q.Step());
    if (!locked) return Status::Internal("claim deferred: row vanished");
    return ReadMessage(q, queue.config.name);
  }

  // ---- Settle ----

  Result<SettleResult> Settle(const QueueRecord& queue, const SettleRequest& req) override {
    // The common Complete — an ungrouped message locked under this token, its
    // lease live — is one statement, without reading the row first; anything
    // else (grouped, LockLost, any other op) takes the general path below,
    // which decides it exactly. A lease a claim noted as grouped
    // (StoreState::grouped_locks) goes straight there.
    const bool grouped = req.op != SettleOp::kRenew && st_->grouped_locks.erase(req.seq) > 0;
    if (req.op == SettleOp::kComplete && !grouped) {
      MQLITE_ASSIGN_OR_RETURN(bool deleted, CompleteUngrouped(queue, req));
      if (deleted) return Settled(*this, req, DeleteVerdict());
    }
    // Only a locked row can be settled (DecideSettle refuses any other the
    // same way), so the row is looked up as locked.
    MQLITE_ASSIGN_OR_RETURN(std::optional<RowRef> row, LoadRef(queue.id, kLocked, req.seq));
    MQLITE_ASSIGN_OR_RETURN(Verdict v, DecideSettle(Facts(row), queue.config, req));
    MQLITE_RETURN_IF_ERROR(Apply(queue, *row, v, req.now, /*fresh=*/true));
    return Settled(*this, req, v);
  }

  // The batch settles (StoreTxn::SettleMany). The Completes of ungrouped
  // messages — those no claim noted as grouped, whose seq the batch names
  // once — each take Settle's one-statement delete, and the receipts of those
  // it deleted are written afterwards a chunk of rows per statement
  // (queries.h PutReceiptsSql); every other request is answered by Settle in
  // batch order. Settles of different messages commute and a repeated seq is
  // left to Settle every time, so every result and the end state are those
  // of the ordered calls. Measured (callgrind, the bench's drain: Receive 16,
  // CompleteBatch): CompleteBatch 33.9k instructions a message instead of
  // 35.5k with a receipt statement each.
  Status SettleMany(const QueueRecord& queue, std::span<const SettleRequest> reqs,
                    std::vector<Result<SettleResult>>* out) override {
    std::vector<int64_t> seqs;
    seqs.reserve(reqs.size());
    for (const SettleRequest& r : reqs) seqs.push_back(r.seq);
    std::sort(seqs.begin(), seqs.end());
    auto once = [&](int64_t seq) {
      auto [lo, hi] = std::equal_range(seqs.begin(), seqs.end(), seq);
      return hi - lo == 1;
    };
    out->assign(reqs.size(), Status::LockLost("not settled"));
    std::vector<bool> done(reqs.size(), false);
    std::vector<const SettleRequest*> receipts;
    for (size_t i = 0; i < reqs.size(); ++i) {
      const SettleRequest& r = reqs[i];
      if (r.op != SettleOp::kComplete || !once(r.seq) || st_->grouped_locks.count(r.seq) > 0) {
        continue;
      }
      MQLITE_ASSIGN_OR_RETURN(bool deleted, CompleteUngrouped(queue, r));
      if (!deleted) continue;
      (*out)[i] = SettleResultOf(DeleteVerdict());
      done[i] = true;
      if (!r.receipt_key.empty()) receipts.push_back(&r);
    }
    for (size_t at = 0; at < receipts.size();) {
      const size_t n = ChunkRows(receipts.size() - at);
      Query q(c_, PutReceiptsSql(n));
      for (size_t k = at; k < at + n; ++k) {
        q.Bytes(receipts[k]->receipt_key).Int(receipts[k]->receipt_expires_at);
      }
      MQLITE_RETURN_IF_ERROR(q.Exec());
      at += n;
    }
    st_->receipt_sweep.puts += static_cast<int64_t>(receipts.size());
    return SettleTheRest(*this, queue, reqs, done, out);
  }

  // ---- Inspection and DLQ ----

  Result<std::vector<Message>> Peek(const QueueRecord& queue, const PeekOptions& o) override {
    std::vector<Message> out;
    auto collect = [&](Query& q) -> Status {
      for (;;) {
        MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
        if (!row) return Status::OK();
        MQLITE_ASSIGN_OR_RETURN(Message m, ReadMessage(q, queue.config.name));
        out.push_back(std::move(m));
      }
    };
    if (o.state == MessageState::kLocked) {
      Query q(c_, kPeekLocked);
      q.Int(queue.id).Int(o.from_seq).Int(o.max_messages);
      MQLITE_RETURN_IF_ERROR(collect(q));
      return out;
    }
    // One range of the key per klass (klass 0: active only, or active and
    // locked), merged by seq.
    for (int klass : {0, kDeferred, kScheduled, kDead}) {
      const int state = o.state ? static_cast<int>(*o.state) : -1;
      if (state >= 0 && KlassOf(*o.state) != klass) continue;
      Query q(c_, kPeekKlass);
      q.Int(queue.id).Int(klass).Int(o.from_seq).Int(state).Int(o.max_messages);
      MQLITE_RETURN_IF_ERROR(collect(q));
    }
    std::sort(out.begin(), out.end(), [](const Message& a, const Message& b) { return a.seq < b.seq; });
    if (out.size() > static_cast<size_t>(o.max_messages)) out.resize(o.max_messages);
    return out;
  }

  Result<QueueStats> Stats(const QueueRecord& queue, int64_t now) override {
    QueueStats st;
    Query q(c_, kStatsCounts);
    q.Int(queue.id);
    for (;;) {
      MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      const int64_t locked = q.ColInt(1);
      const int64_t n = q.ColInt(2);
      const int64_t bytes = q.ColInt(3);
      switch (static_cast<int>(q.ColInt(0))) {
        case 0:
          st.locked = locked;
          st.active = n - locked;
          break;
        case kDeferred: st.deferred = n; break;
        case kScheduled: st.scheduled = n; break;
        case kDead: st.dead_lettered = n; break;
        default: return Status::Corruption("message with unknown state");
      }
      st.total += n;
      st.body_bytes += bytes;
    }
    // Oldest claimable (StoreTxn::Stats): the smallest enqueued_at over
    // bounded walks. The active heads of one priority come in seq order,
    // which is enqueued_at order (seqs and the engine's clock both grow with
    // every send) for all but redriven messages, and those come in age order
    // from their own index: in each walk the first that qualifies is its
    // answer. Due schedules and lapsed leases come in time order, so each
    // takes the minimum of what it visits.
    const int64_t cap = kStatsProbeLimit + 1;
    std::optional<int64_t> oldest;
    auto consider = [&](Query& q, bool first_only) -> Status {
      for (;;) {
        MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
        if (!row) return Status::OK();
        const int64_t enq = q.ColInt(0);
        RowFacts f;
        f.expires_at = q.ColInt(1);
        f.delivery_count = static_cast<int32_t>(q.ColInt(2));
        if (q.ColInt(3) == 0 || !WouldDeliver(f, queue.config, now)) continue;  // not claimable
        if (!oldest || enq < *oldest) oldest = enq;
        if (first_only) return Status::OK();
      }
    };
    for (int priority = 0; priority <= 9; ++priority) {  // validate.cc: 0–9
      Query a(c_, kOldestHeadsOfPriority);
      a.Int(queue.id).Int(priority).Int(cap);
      MQLITE_RETURN_IF_ERROR(consider(a, /*first_only=*/true));
    }
    {
      Query a(c_, kOldestRedrivenHeads);
      a.Int(queue.id).Int(cap);
      MQLITE_RETURN_IF_ERROR(consider(a, /*first_only=*/true));
    }
    {
      Query d(c_, kDueScheduled);
      d.Int(queue.id).Int(now).Int(cap);
      MQLITE_RETURN_IF_ERROR(consider(d, /*first_only=*/false));
    }
    {
      Query l(c_, kLapsedLeases);
      l.Int(queue.id).Int(now).Int(cap);
      MQLITE_RETURN_IF_ERROR(consider(l, /*first_only=*/false));
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
      Query g(c_, kGetGroupId);
      g.Int(queue.id).Int(r.seq);
      MQLITE_ASSIGN_OR_RETURN(bool found, g.Step());
      if (!found) continue;
      const std::optional<RedrivePlan> plan = PlanRedrive(g.ColOptBytes(0), target.config, now);
      if (!plan) continue;
      bool head = true;
      if (plan->group_key) {
        MQLITE_ASSIGN_OR_RETURN(bool live, GroupHasLiveMember(target.id, *plan->group_key));
        head = !live;
      }
      MQLITE_ASSIGN_OR_RETURN(int64_t seq, NextSeq());
      Query ins(c_, kRedriveInsert);
      ins.Int(target.id)
          .Int(seq)
          .Int(head ? 1 : 0)
          .OptBytes(plan->group_key)
          .Int(plan->visible_at)
          .Int(plan->expires_at)
          .Int(queue.id)
          .Int(r.seq);
      MQLITE_RETURN_IF_ERROR(ins.Exec());
      MQLITE_RETURN_IF_ERROR(Remove(queue, r));
      ++moved;
    }
    return moved;
  }

  Result<int64_t> PurgeDeadLetters(const QueueRecord& queue, const PurgeOptions& o,
                                   int64_t now) override {
    MQLITE_ASSIGN_OR_RETURN(std::vector<RowRef> rows,
                            OldestDead(queue.id, now - o.older_than_ms, o.max_messages));
    for (const RowRef& r : rows) MQLITE_RETURN_IF_ERROR(Remove(queue, r));
    return static_cast<int64_t>(rows.size());
  }

  // ---- Maintenance ----

  // ---- Operator paths ----

  Status DeadLetterMessage(const QueueRecord& queue, int64_t seq, std::string_view reason,
                           const std::optional<std::string>& description, int64_t now) override {
    MQLITE_ASSIGN_OR_RETURN(std::optional<RowRef> row, LoadAnyRef(queue.id, seq));
    MQLITE_RETURN_IF_ERROR(CheckDeadLetterMessage(Facts(row), seq));
    return DeadLetter(queue, *row, reason, description, now);
  }

  Status DeleteMessage(const QueueRecord& queue, int64_t seq) override {
    MQLITE_ASSIGN_OR_RETURN(std::optional<RowRef> row, LoadAnyRef(queue.id, seq));
    MQLITE_RETURN_IF_ERROR(CheckDeleteMessage(Facts(row), seq));
    return Remove(queue, *row, /*fresh=*/true);
  }

  Result<int64_t> PromoteDue(const QueueRecord& queue, int64_t now, int64_t limit) override {
    {
      Query any(c_, kAnyDue);
      any.Int(queue.id).Int(now);
      MQLITE_ASSIGN_OR_RETURN(bool due, any.Step());
      if (!due) return int64_t{0};
    }
    Query u(c_, kPromoteDue);
    u.Int(queue.id).Int(now).Int(limit);
    MQLITE_RETURN_IF_ERROR(u.Exec());
    return static_cast<int64_t>(sqlite3_changes(c_->db()));
  }

  Result<int64_t> ReclaimLocks(const QueueRecord& queue, int64_t now, bool all_locked,
                               int64_t limit) override {
    std::vector<RowRef> rows;
    {
      Query q(c_, kExpiredLeases);
      q.Int(queue.id).Int(all_locked ? INT64_MAX : now).Int(limit);
      MQLITE_RETURN_IF_ERROR(Collect(q, &rows));
    }
    for (const RowRef& r : rows) {
      MQLITE_RETURN_IF_ERROR(Apply(queue, r, DecideReclaim(r, queue.config), now));
    }
    return static_cast<int64_t>(rows.size());
  }

  Result<int64_t> ExpireMessages(const QueueRecord& queue, int64_t now, int64_t limit) override {
    std::vector<RowRef> rows;
    {
      Query q(c_, kExpiredTtl);
      q.Int(queue.id).Int(now).Int(limit);
      MQLITE_RETURN_IF_ERROR(Collect(q, &rows));
    }
    const Verdict v = DecideExpire(queue.config);
    for (const RowRef& r : rows) MQLITE_RETURN_IF_ERROR(Apply(queue, r, v, now));
    return static_cast<int64_t>(rows.size());
  }

  Result<int64_t> EnforceRetention(const QueueRecord& queue, const RetentionBounds& b, int64_t now,
                                   int64_t limit) override {
    if (!RetentionPass::Bounded(b)) return 0;
    std::optional<RetentionPass> pass;
    {
      Query q(c_, kDlqTotals);
      q.Int(queue.id);
      MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) return Status::Internal("retention: queue row missing");
      pass.emplace(b, now, q.ColInt(0), q.ColInt(1));
    }
    std::vector<RowRef> victims;
    {
      Query q(c_, kRetentionCandidates);
      q.Int(queue.id).Int(limit);
      for (;;) {
        MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
        if (!row) break;
        RowRef r = ReadRef(q);
        if (!pass->Evict(q.ColInt(9), r.body_size)) break;  // oldest first
        victims.push_back(std::move(r));
      }
    }
    for (const RowRef& r : victims) MQLITE_RETURN_IF_ERROR(Remove(queue, r));
    return static_cast<int64_t>(victims.size());
  }

  // ---- Idempotency records ----

  Result<std::optional<DedupRecord>> FindDedup(const QueueRecord& queue, std::string_view key,
                                               int64_t now) override {
    Query q(c_, kFindDedup);
    q.Int(queue.id).Bytes(key).Int(now);
    MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return std::optional<DedupRecord>();
    return std::optional<DedupRecord>(DedupRecord{q.ColInt(0), q.ColBytes(1), q.ColInt(2)});
  }

  Status PutDedup(const QueueRecord& queue, std::string_view key, const DedupRecord& r) override {
    Query q(c_, kPutDedup);
    q.Int(queue.id).Bytes(key).Int(r.seq).Bytes(r.body_hash).Int(r.expires_at);
    return q.Exec();
  }

  Result<bool> FindReceipt(std::string_view key, int64_t now) override {
    Query q(c_, kFindReceipt);
    q.Bytes(key).Int(now);
    return q.Step();
  }

  Status PutReceipt(std::string_view key, int64_t expires_at) override {
    Query q(c_, kPutReceipt);
    q.Bytes(key).Int(expires_at);
    MQLITE_RETURN_IF_ERROR(q.Exec());
    ++st_->receipt_sweep.puts;
    return Status::OK();
  }

  Result<std::optional<AttemptRecord>> FindAttempt(std::string_view id, int64_t now) override {
    Query q(c_, kFindAttempt);
    q.Bytes(id).Int(now);
    MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return std::optional<AttemptRecord>();
    return std::optional<AttemptRecord>(AttemptRecord{
        q.ColInt(0), static_cast<ReceiveMode>(q.ColInt(1)), q.ColBytes(2), q.ColInt(3)});
  }

  Status PutAttempt(std::string_view id, const AttemptRecord& r) override {
    Query q(c_, kPutAttempt);
    q.Bytes(id).Int(r.queue_id).Int(static_cast<int>(r.mode)).Bytes(r.payload).Int(r.expires_at);
    return q.Exec();
  }

  Result<int64_t> DropExpiredRecords(int64_t now, int64_t limit) override {
    int64_t total = 0;
    {
      // WITHOUT ROWID with a composite key: collect, then delete by key.
      std::vector<std::pair<int64_t, std::string>> keys;
      {
        Query q(c_, kExpiredDedup);
        q.Int(now).Int(limit);
        for (;;) {
          MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
          if (!row) break;
          keys.emplace_back(q.ColInt(0), q.ColBytes(1));
        }
      }
      for (const auto& [queue_id, key] : keys) {
        Query d(c_, kDeleteDedup);
        d.Int(queue_id).Bytes(key);
        MQLITE_RETURN_IF_ERROR(d.Exec());
      }
      total += static_cast<int64_t>(keys.size());
    }
    {
      MQLITE_ASSIGN_OR_RETURN(int64_t swept, SweepReceipts(now, limit));
      total += swept;
    }
    {
      Query d(c_, kDropAttempts);
      d.Int(now).Int(limit);
      MQLITE_RETURN_IF_ERROR(d.Exec());
      total += sqlite3_changes(c_->db());
    }
    return total;
  }

  // Receipts have no expiry index (schema.h): this walks them in key order
  // from where the last sweep stopped, wrapping to the start at the end, and
  // deletes the expired ones it meets — at most `limit`, among at most
  // max(limit, 2 × receipts put since the last sweep) it reads. The walk
  // laps the table at least twice as fast as receipts arrive, so a lap takes
  // at most about one retention period: an expired receipt is gone within
  // about that, and the table holds at most about twice the live receipts
  // (G7) — unless `limit` deletions a pass cannot keep up (then `more`).
  // (Finds never depend on it: they check expires_at.)
  Result<int64_t> SweepReceipts(int64_t now, int64_t limit) {
    StoreState::ReceiptSweep& sweep = st_->receipt_sweep;
    const int64_t budget = std::max(limit, 2 * sweep.puts);
    sweep.puts = 0;
    const std::string start = sweep.after;
    std::string after = start;
    std::vector<std::string> expired;
    int64_t read = 0;
    bool wrapped = false;
    while (read < budget && static_cast<int64_t>(expired.size()) < limit) {
      Query q(c_, kSweepReceipts);
      const int64_t want = budget - read;
      q.Bytes(after).Int(want);
      int64_t got = 0;
      bool lapped = false;
      for (;;) {
        MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
        if (!row) break;
        std::string key = q.ColBytes(0);
        if (wrapped && key > start) {  // back where this sweep began
          lapped = true;
          break;
        }
        ++got;
        if (q.ColInt(1) <= now) expired.push_back(key);
        after = std::move(key);
        if (static_cast<int64_t>(expired.size()) == limit) break;
      }
      read += got;
      if (lapped) break;
      if (got < want && static_cast<int64_t>(expired.size()) < limit) {
        // The end of the table: go on from its start, once.
        after.clear();
        if (wrapped || start.empty()) break;
        wrapped = true;
      }
    }
    sweep.after = after;
    for (const std::string& key : expired) {
      Query d(c_, kDeleteReceipt);
      d.Bytes(key);
      MQLITE_RETURN_IF_ERROR(d.Exec());
    }
    return static_cast<int64_t>(expired.size());
  }

  // G7: incremental_vacuum moves up to `budget` free pages to the end of the
  // file and truncates it (at the next checkpoint in WAL mode). Run by
  // SqliteStore::ReclaimSpace outside any transaction: in autocommit mode the
  // pragma is its own transaction.
  Result<int64_t> IncrementalVacuum(int64_t budget) {
    MQLITE_ASSIGN_OR_RETURN(int64_t before, FreelistCount());
    if (before == 0) return int64_t{0};
    std::string sql = "PRAGMA incremental_vacuum(" + std::to_string(std::max<int64_t>(1, budget)) + ")";
    MQLITE_RETURN_IF_ERROR(c_->ExecScript(sql.c_str(), "incremental_vacuum"));
    MQLITE_ASSIGN_OR_RETURN(int64_t after, FreelistCount());
    return before - after;
  }

  // ---- Savepoints, native handle ----

  Status Savepoint(const std::function<Status(StoreTxn&)>& body) override {
    Status s = Control(c_, kSavepoint);
    if (s.ok()) {
      s = body(*this);
      if (s.ok()) {
        s = Control(c_, kRelease);
      } else {
        (void)Control(c_, kRollbackTo);
        (void)Control(c_, kRelease);
        st_->seqs.ForgetReservation();  // the body may have written it
      }
    }
    return s;
  }

  void* NativeHandle() override { return c_->db(); }

  Status CheckNativeTxnOpen() override {
    if (sqlite3_get_autocommit(c_->db())) {
      return Status::InvalidArgument(
          "Tx: the transaction was committed or rolled back through the native sqlite3 handle; "
          "statements run after that were not part of the Tx (SPEC §8: never COMMIT or ROLLBACK "
          "inside the callback)");
    }
    return Status::OK();
  }

 private:
  // The one-statement Complete (kCompleteUngrouped): true if it deleted the
  // row — ungrouped, locked under req.token, lease live at req.now — and
  // nothing else has to change; false: the row is as it was.
  Result<bool> CompleteUngrouped(const QueueRecord& queue, const SettleRequest& req) {
    Query d(c_, kCompleteUngrouped);
    d.Int(queue.id).Int(req.seq).Token(req.token).Int(req.now);
    MQLITE_RETURN_IF_ERROR(d.Exec());
    return sqlite3_changes(c_->db()) == 1;
  }
  static Verdict DeleteVerdict() {
    Verdict v;
    v.action = Verdict::Action::kDelete;
    return v;
  }

  Query& BindConfig(Query& q, const QueueConfig& c) {
    return q.Int(c.lock_duration_ms)
        .Int(c.max_delivery_count)
        .Int(c.default_ttl_ms)
        .Int(c.dead_letter_on_expire ? 1 : 0)
        .Int(c.dedup_window_ms)
        .Int(static_cast<int>(c.ordering))
        .Int(c.dlq_max_age_ms)
        .Int(c.dlq_max_count)
        .Int(c.dlq_max_bytes)
        .Int(c.max_message_bytes);
  }

  Result<int64_t> FreelistCount() {
    Query q(c_, kFreelistCount);
    MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
    return row ? q.ColInt(0) : int64_t{0};
  }

  Status Collect(Query& q, std::vector<RowRef>* rows) {
    for (;;) {
      MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) return Status::OK();
      rows->push_back(ReadRef(q));
    }
  }

  // Message `seq` of the queue if it is in `state`.
  Result<std::optional<RowRef>> LoadRef(int64_t queue_id, int state, int64_t seq) {
    Query q(c_, kLoadRef);
    q.Int(queue_id).Int(state).Int(seq);
    return ReadOptionalRef(q);
  }
  // Message `seq` of the queue, in whatever state it is.
  Result<std::optional<RowRef>> LoadAnyRef(int64_t queue_id, int64_t seq) {
    Query q(c_, kLoadAnyRef);
    q.Int(queue_id).Int(seq);
    return ReadOptionalRef(q);
  }
  Result<std::optional<RowRef>> ReadOptionalRef(Query& q) {
    MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return std::optional<RowRef>();
    return std::optional<RowRef>(ReadRef(q));
  }

  // The next seq (schema.h): strictly above every seq this file ever handed
  // out, reserving another block in mqlite_meta — in this transaction, so
  // the reservation commits before any seq it covers can — when the
  // reserved ones run out.
  Result<int64_t> NextSeq() {
    StoreState::Seqs& q = st_->seqs;
    if (q.next > q.reserved) {
      const int64_t reserved = q.next + kSeqReserveBlock - 1;
      Query r(c_, kReserveSeqs);
      r.Text(std::to_string(reserved));
      MQLITE_RETURN_IF_ERROR(r.Exec());
      q.reserved = reserved;
    }
    return q.next++;
  }

  void QueuesChanged() {
    st_->queues_changed = true;
    st_->queues.clear();
  }

  Result<bool> GroupHasLiveMember(int64_t queue_id, const std::string& key) {
    Query q(c_, kGroupHasLive);
    q.Int(queue_id).Bytes(key);
    return q.Step();
  }

  // Makes the lowest-seq live member of the group its head (after the old
  // head left). One seek of mqlite_msg_group.
  Status PromoteNext(int64_t queue_id, const std::string& key) {
    int state = 0;
    int64_t seq = 0;
    {
      Query q(c_, kNextHead);
      q.Int(queue_id).Bytes(key);
      MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) return Status::OK();  // the group is empty now
      state = static_cast<int>(q.ColInt(0));
      seq = q.ColInt(1);
    }
    Query u(c_, kSetHead);
    u.Int(queue_id).Int(state).Int(seq);
    return u.Exec();
  }

  // locked → active or deferred: the lease and token go.
  Status Unlock(int64_t queue_id, int64_t seq, MessageState state) {
    if (state != MessageState::kActive && state != MessageState::kDeferred) {
      return Status::Internal("unlock to " + std::string(MessageStateName(state)));
    }
    Query u(c_, state == MessageState::kActive ? kUnlockToActive : kUnlockToDeferred);
    u.Int(queue_id).Int(seq);
    return u.Exec();
  }

  // Deletes a row; keeps DLQ counters and group headship right. `r` may
  // have been read before earlier changes in the same transaction, which can
  // have made it its group's head (never another state, nor another size):
  // headship is read again unless the caller says `r` is fresh.
  Status Remove(const QueueRecord& queue, const RowRef& r, bool fresh = false) {
    const int state = static_cast<int>(r.state);
    bool was_head = r.is_head;
    if (r.group_key && !fresh) {
      Query h(c_, kIsHead);
      h.Int(queue.id).Int(state).Int(r.seq);
      MQLITE_ASSIGN_OR_RETURN(bool row, h.Step());
      if (!row) return Status::OK();  // already gone
      was_head = h.ColInt(0) != 0;
    }
    {
      Query d(c_, kDeleteMessage);
      d.Int(queue.id).Int(state).Int(r.seq);
      MQLITE_RETURN_IF_ERROR(d.Exec());
      if (sqlite3_changes(c_->db()) == 0) return Status::OK();  // already gone
    }
    if (state == kDead) {
      Query c(c_, kDlqDecrement);
      c.Int(r.body_size).Int(queue.id);
      MQLITE_RETURN_IF_ERROR(c.Exec());
    }
    if (was_head && r.group_key) return PromoteNext(queue.id, *r.group_key);
    return Status::OK();
  }

  // Runs a statement that must change exactly one row.
  Status ExecOne(Query& q, std::string_view what) {
    MQLITE_RETURN_IF_ERROR(q.Exec());
    if (sqlite3_changes(c_->db()) != 1) {
      return Status::Internal(std::string(what) + ": the row vanished");
    }
    return Status::OK();
  }

  Status DeadLetter(const QueueRecord& queue, const RowRef& r, std::string_view reason,
                    const std::optional<std::string>& description, int64_t now) {
    const int state = static_cast<int>(r.state);
    bool was_head = false;
    {
      Query h(c_, kClearHead);
      h.Int(queue.id).Int(state).Int(r.seq);
      MQLITE_RETURN_IF_ERROR(h.Exec());
      was_head = sqlite3_changes(c_->db()) > 0;
    }
    Query u(c_, kDeadLetter);
    u.Int(now).Bytes(reason).OptBytes(description).Int(queue.id).Int(state).Int(r.seq);
    MQLITE_RETURN_IF_ERROR(u.Exec());
    Query c(c_, kDlqIncrement);
    c.Int(r.body_size).Int(queue.id);
    MQLITE_RETURN_IF_ERROR(c.Exec());
    if (was_head && r.group_key) return PromoteNext(queue.id, *r.group_key);
    return Status::OK();
  }

  // Applies a store_util.h verdict to row `r` (kDeliver is Claim's own).
  // `fresh`: `r` was read in this operation, after every earlier change.
  Status Apply(const QueueRecord& queue, const RowRef& r, const Verdict& v, int64_t now,
               bool fresh = false) {
    switch (v.action) {
      case Verdict::Action::kUnlock:
        if (v.to == MessageState::kScheduled) {
          Query u(c_, kAbandonDelayed);
          u.Int(v.visible_at).Int(queue.id).Int(r.seq);
          return u.Exec();
        }
        return Unlock(queue.id, r.seq, v.to);
      case Verdict::Action::kRenew: {
        Query u(c_, kRenew);
        u.Int(v.locked_until).Int(queue.id).Int(r.seq);
        return u.Exec();
      }
      case Verdict::Action::kDeadLetter:
        return DeadLetter(queue, r, v.reason, v.description, now);
      case Verdict::Action::kDelete:
        return Remove(queue, r, fresh);
      case Verdict::Action::kDeliver:
        break;
    }
    return Status::Internal("Apply: a claim verdict outside Claim");
  }

  // Dead letters dead-lettered at or before `cutoff`, oldest first.
  Result<std::vector<RowRef>> OldestDead(int64_t queue_id, int64_t cutoff, int64_t max) {
    std::vector<RowRef> rows;
    Query q(c_, kOldestDead);
    q.Int(queue_id).Int(cutoff).Int(max > 0 ? max : -1);
    MQLITE_RETURN_IF_ERROR(Collect(q, &rows));
    return rows;
  }

  Conn* c_;
  StoreState* st_;
};

class SqliteStore final : public Store {
 public:
  SqliteStore(std::unique_ptr<FileLock> lock, std::unique_ptr<Conn> conn, int64_t seq_reserved,
              bool read_only = false)
      : read_only_(read_only), lock_(std::move(lock)), conn_(std::move(conn)) {
    // Every seq up to the reservation may have been handed out before.
    state_.seqs.next = seq_reserved + 1;
    state_.seqs.reserved = seq_reserved;
    if (!read_only_) {
      checkpointer_ = WalCheckpointer::Start(conn_->db(), lock_->canonical_path(), {});
    }
  }
  ~SqliteStore() override {
    checkpointer_.reset();  // before its writer closes
    conn_.reset();  // close the database before releasing the lock
    lock_.reset();
  }

  StoreCapabilities Capabilities() const override {
    StoreCapabilities c;
    c.exclusive = true;
    c.native_handle_type = kHandleType;
    c.crash_model = "process";
    c.name = "sqlite";
    c.read_only = read_only_;
    return c;
  }

  // The connection is one writer, for reads too: wait for it, but give up
  // promptly — having done nothing — when the caller cancels (SPEC §10).
  Status Run(TxnKind kind, const RunOptions& options,
             const std::function<Status(StoreTxn&)>& body) override {
    if (read_only_ && kind == TxnKind::kWrite) return RefuseWrite();
    MQLITE_RETURN_IF_ERROR(gate_.Acquire(RunGate::Mode::kExclusive, options, "the SQLite writer"));
    // Another process owns the data: queue records may change under us.
    if (read_only_) state_.queues.clear();
    Status s = RunLocked(kind, body);
    gate_.Release(RunGate::Mode::kExclusive);
    return s;
  }

  // spec.md §1 "Space reclaim": between transactions, on the writer.
  Result<int64_t> ReclaimSpace(const RunOptions& options, int64_t budget) override {
    if (read_only_) return RefuseWrite();
    MQLITE_RETURN_IF_ERROR(gate_.Acquire(RunGate::Mode::kExclusive, options, "the SQLite writer"));
    Result<int64_t> freed = SqliteTxn(conn_.get(), &state_).IncrementalVacuum(budget);
    gate_.Release(RunGate::Mode::kExclusive);
    return freed;
  }

 private:

  Status RunLocked(TxnKind kind, const std::function<Status(StoreTxn&)>& body) {
    MQLITE_RETURN_IF_ERROR(Control(conn_.get(), kind == TxnKind::kWrite ? kBeginWrite : kBeginRead));
    SqliteTxn txn(conn_.get(), &state_);
    Status s = body(txn);
    if (s.ok()) s = Control(conn_.get(), kCommit);
    if (s.ok() && kind == TxnKind::kWrite && checkpointer_) checkpointer_->AfterCommit();
    if (!s.ok()) {
      if (!sqlite3_get_autocommit(conn_->db())) (void)Control(conn_.get(), kRollback);
      // The transaction's reservation may be gone with it. (Or not: an
      // application that committed through the native handle committed it.)
      state_.seqs.ForgetReservation();
    }
    if (state_.queues_changed) {
      state_.queues.clear();
      state_.queues_changed = false;
    }
    return s;
  }

  Status RefuseWrite() const {
    return ReadOnlyWriteRefused("database '" + std::string(sqlite3_db_filename(conn_->db(), "main")) +
                                "'");
  }

  const bool read_only_;
  RunGate gate_;
  StoreState state_;
  std::unique_ptr<FileLock> lock_;
  std::unique_ptr<Conn> conn_;
  std::unique_ptr<WalCheckpointer> checkpointer_;  // null: SQLite's automatic checkpoint
};

// Kept out of queries.h: it reads sqlite_master at open, not a message table.
constexpr char kCountMqliteTables[] =
    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'mqlite\\_%' "
    "ESCAPE '\\'";

// The file's schema token: nullopt for a file with no mqlite tables at all
// (empty, or only the application's own tables). Reads only. A file with
// mqlite_ tables but no mqlite_meta was not written by any mqlite build this
// one can vouch for: SchemaVersionMismatch, so nothing is written to it.
Result<std::optional<std::string>> ReadSchemaToken(Conn* conn) {
  Query t(conn, kHasMetaTable);
  MQLITE_ASSIGN_OR_RETURN(bool row, t.Step());
  if (!row || t.ColInt(0) == 0) {
    Query m(conn, kCountMqliteTables);
    MQLITE_ASSIGN_OR_RETURN(bool counted, m.Step());
    if (counted && m.ColInt(0) > 0) {
      return Status::SchemaVersionMismatch(
          "database '" + std::string(sqlite3_db_filename(conn->db(), "main")) + "' has " +
          std::to_string(m.ColInt(0)) +
          " mqlite_ table(s) but no mqlite_meta table, so no schema version: it was not written "
          "by this build (or was damaged); refusing to open or change it");
    }
    return std::optional<std::string>();
  }
  Query v(conn, kSchemaToken);
  MQLITE_ASSIGN_OR_RETURN(bool has, v.Step());
  if (!has) return std::optional<std::string>(std::string());
  return std::optional<std::string>(v.ColBytes(0));
}

// One connection (SQLITE_OPEN_NOMUTEX: the store serialises its use) with
// extended result codes and a busy timeout: only the store's own checkpointer
// (checkpointer.h), non-mqlite connections, or an inspected store's owner
// checkpointing, can contend.
Result<std::unique_ptr<Conn>> Connect(const std::string& path, int flags, const char* what) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status s = ToStatus(rc, db, what);
    sqlite3_close_v2(db);
    return s;
  }
  auto conn = std::make_unique<Conn>(db);
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);
  return conn;
}

// Opens the connection on a file `lock` holds and brings it to this build's
// schema. Every check that can refuse the file (not SQLite, another schema
// token, foreign mqlite_ tables) runs before the first statement that writes
// (journal_mode, auto_vacuum, the DDL), so a refused file is left unchanged.
Result<std::unique_ptr<Conn>> OpenDatabase(const SqliteOptions& options, const std::string& path) {
  MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<Conn> conn,
                          Connect(path, SQLITE_OPEN_READWRITE, "open"));

  MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> token, ReadSchemaToken(conn.get()));
  if (token && *token != kSqliteSchemaToken) {
    return Status::SchemaVersionMismatch("database '" + path + "' has schema version '" + *token +
                                         "'; this build reads only '" + kSqliteSchemaToken + "'");
  }
  const bool fresh = !token.has_value();
  if (fresh) {
    // Must precede the first table of a new file to take effect.
    MQLITE_RETURN_IF_ERROR(conn->ExecScript("PRAGMA auto_vacuum = INCREMENTAL", "auto_vacuum"));
  }
  MQLITE_RETURN_IF_ERROR(conn->ExecScript("PRAGMA journal_mode = WAL", "journal_mode"));
  // G7: a checkpoint truncates the WAL back to this size instead of keeping
  // the high-water mark forever. The store's checkpointer raises it while it
  // runs and space is plentiful (checkpointer.h).
  const std::string wal_limit = "PRAGMA journal_size_limit = " +
                                std::to_string(WalCheckpointer::Options{}.low_wal_bytes);
  MQLITE_RETURN_IF_ERROR(conn->ExecScript(wal_limit.c_str(), "journal_size_limit"));
  MQLITE_RETURN_IF_ERROR(conn->ExecScript("PRAGMA secure_delete = FAST", "secure_delete"));
  const std::string synchronous =
      std::string("PRAGMA synchronous = ") + SynchronousLevel(options.durability);
  MQLITE_RETURN_IF_ERROR(conn->ExecScript(synchronous.c_str(), "synchronous"));
  if (fresh) {
    MQLITE_RETURN_IF_ERROR(conn->ExecScript("BEGIN IMMEDIATE", "begin"));
    Status s;
    for (const char* ddl : kSqliteSchema) {
      s = conn->ExecScript(ddl, "create schema");
      if (!s.ok()) break;
    }
    if (s.ok()) {
      Query ins(conn.get(), kInsertSchemaToken);
      ins.Text(kSqliteSchemaToken);
      s = ins.Exec();
    }
    if (s.ok()) s = conn->ExecScript("COMMIT", "commit schema");
    if (!s.ok()) {
      (void)conn->ExecScript("ROLLBACK", "rollback");
      return s;
    }
  }
  return conn;
}

// The seq reservation (schema.h); 0 for a file that never handed one out.
Result<int64_t> ReadSeqReserved(Conn* conn) {
  Query q(conn, kSeqReserved);
  MQLITE_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return int64_t{0};
  const std::string v = q.ColBytes(0);
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || errno != 0 || *end != '\0' || n < 0) {
    return Status::Corruption("database '" + std::string(sqlite3_db_filename(conn->db(), "main")) +
                              "': mqlite_meta seq_reserved is '" + v + "', not a count");
  }
  return static_cast<int64_t>(n);
}

// SqliteOptions::read_only: an existing mqlite database, opened
// SQLITE_OPEN_READONLY without the file lock. Nothing is written: no pragma
// that changes the file, no schema. The WAL reader needs the -shm the owner
// keeps (or creates it when nobody has the file open; SQLite >= 3.22).
Result<std::unique_ptr<Store>> OpenReadOnly(const SqliteOptions& options) {
  MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock, FileLock::ForReading(options.path));
  const std::string& path = lock->canonical_path();
  MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<Conn> conn,
                          Connect(path, SQLITE_OPEN_READONLY, "open read-only"));
  MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> token, ReadSchemaToken(conn.get()));
  if (!token) {
    return Status::InvalidArgument("database '" + path +
                                   "' holds no mqlite schema: nothing to inspect");
  }
  if (*token != kSqliteSchemaToken) {
    return Status::SchemaVersionMismatch("database '" + path + "' has schema version '" + *token +
                                         "'; this build reads only '" + kSqliteSchemaToken + "'");
  }
  return std::unique_ptr<Store>(
      new SqliteStore(std::move(lock), std::move(conn), /*seq_reserved=*/0, /*read_only=*/true));
}

}  // namespace
}  // namespace internal

Result<std::unique_ptr<Store>> OpenSqliteStore(const SqliteOptions& options) {
  if (options.path.empty()) return Status::InvalidArgument("SqliteOptions.path is empty");
  if (options.read_only) return internal::OpenReadOnly(options);
  if (DurabilityName(options.durability) == "unknown") {
    return Status::InvalidArgument("SqliteOptions.durability is not kNormal, kFull or kProcessOnly");
  }
  // SPEC §9: lock first (sidecar, then the file's inode), so a refused open
  // touches nothing. The lock creates the file if it is missing.
  MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock,
                          FileLock::Acquire(options.path, {"-wal", "-shm", "-journal"}));
  Result<std::unique_ptr<internal::Conn>> conn = internal::OpenDatabase(options, lock->canonical_path());
  if (!conn) {
    // The connection is closed (destroyed inside OpenDatabase); remove
    // whatever this open created, then release the locks.
    FileLock::Abandon(std::move(lock));
    return conn.error();
  }
  Result<int64_t> seq_reserved = internal::ReadSeqReserved(conn->get());
  if (!seq_reserved) return seq_reserved.error();
  return std::unique_ptr<Store>(
      new internal::SqliteStore(std::move(lock), std::move(*conn), *seq_reserved));
}

}  // namespace mqlite
