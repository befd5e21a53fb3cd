// One libpq connection for the PostgreSQL store, and what its failures mean.
//
// The store runs every transaction on a PgConn leased from a PgPool
// (pool.h): BEGIN, prepared statements only, then Commit(), which checks the
// COMMIT's result tag. Errors come back as Status values whose code tells
// the store what it may do (SPEC §10, LESSONS "PostgreSQL"):
//
//   Unavailable     serialization failure (40001), deadlock (40P01), the
//                   server shutting the session (57P01–57P03), connection
//                   trouble (08xxx) or a connection lost before COMMIT was
//                   sent: nothing committed. A rerunnable body may run again
//                   on a fresh connection (Failure says which case it was).
//   OutcomeUnknown  the connection went while COMMIT was in flight: the
//                   transaction may or may not have committed. Never retried.
//   Cancelled       lock_timeout (55P03, set from the call's deadline) or a
//                   cancelled statement (57014).
//   StoreFull       the server is out of disk or memory (class 53).
//   Internal        anything else, with the SQLSTATE and the server's message.
//
// Not thread-safe: one thread uses a connection at a time (the pool's lease).
#ifndef MQLITE_STORES_POSTGRES_SRC_PG_CONN_H_
#define MQLITE_STORES_POSTGRES_SRC_PG_CONN_H_

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mqlite/status.h"

namespace mqlite::pg_internal {

// Why a call failed, beyond its Status code: what a retry may assume.
enum class Failure {
  kNone,
  kRetryable,   // serialization failure or deadlock: rolled back, safe to rerun
  kLostBefore,  // the connection went before COMMIT was sent: nothing committed
  kLostAfter,   // the connection went while COMMIT was in flight: outcome unknown
  kOther,       // the statement's own error: not retried
};

struct PgError {
  Status status;
  Failure failure = Failure::kNone;
  std::string sqlstate;  // "" when the server sent none (connection trouble)
};

// RAII over a PGresult*.
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(PGresult* r) : r_(r) {}
  PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  PgResult& operator=(PgResult&& o) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  ~PgResult();

  const PGresult* get() const { return r_; }
  int rows() const { return r_ ? PQntuples(r_) : 0; }
  bool null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
  std::string_view text(int row, int col) const {
    return {PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col))};
  }
  int64_t i64(int row, int col) const;  // a bigint/int column in text form
  bool boolean(int row, int col) const { return text(row, col) == "t"; }
  // A bytea column (text form, hex "\\x..."), decoded; nullopt when NULL.
  std::string bytes(int row, int col) const;
  std::optional<std::string> opt_bytes(int row, int col) const;
  // Rows an INSERT/UPDATE/DELETE touched (PQcmdTuples).
  int64_t affected() const;
  std::string_view tag() const { return r_ ? PQcmdStatus(r_) : ""; }

 private:
  PGresult* r_ = nullptr;
};

// The parameters of one prepared statement, left to right: integers and
// text in text form, byte strings in binary form (bytea round-trips every
// byte, NUL included, with no escaping).
class PgParams {
 public:
  PgParams& I(int64_t v) { return Add(std::to_string(v), 0); }
  PgParams& Bool(bool v) { return Add(v ? "t" : "f", 0); }
  PgParams& Text(std::string_view v) { return Add(std::string(v), 0); }
  PgParams& Bytes(std::string_view v) { return Add(std::string(v), 1); }
  PgParams& OptBytes(const std::optional<std::string>& v) { return v ? Bytes(*v) : Null(); }
  PgParams& Null() {
    values_.emplace_back();
    formats_.push_back(0);
    return *this;
  }

 private:
  friend class PgConn;
  PgParams& Add(std::string v, int format) {
    values_.emplace_back(std::move(v));
    formats_.push_back(format);
    return *this;
  }
  std::vector<std::optional<std::string>> values_;
  std::vector<int> formats_;
};

// A statement the connection prepares once, on first use, under `name`
// (unless plan_each_time).
struct Statement {
  const char* name;
  const char* sql;
  // Never prepared: sent with its parameters written into its text as
  // literals (text format, $1..$9), so the server plans it for those values
  // every time — a parameterised unnamed statement would get a generic plan
  // in the store's sessions (plan_cache_mode = force_generic_plan).
  bool plan_each_time = false;
};

// A write transaction's BEGIN, its lock_timeout (the time left, in ms, as
// text) and its COMMIT: prepared once per session like every other
// statement, so each transaction sends a Bind and an Execute for them, never
// a Parse (measured: paired send_one 0.54/0.61 -> 0.59/0.64 of pg_floor at
// process_only). set_config(..., true) is SET LOCAL's effect.
inline constexpr Statement kBeginWriteStatement{"mq_begin_write", "BEGIN READ WRITE"};
inline constexpr Statement kLockTimeoutStatement{
    "mq_lock_timeout", "SELECT set_config('lock_timeout', $1::text, true)"};
inline constexpr Statement kCommitStatement{"mq_commit", "COMMIT"};

class PgConn {
 public:
  // Connects with a libpq connection string or URI. Unavailable, naming the
  // server (never the password), when the server cannot be reached or
  // refuses the login.
  static Result<std::unique_ptr<PgConn>> Connect(const std::string& url);
  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  PGconn* raw() const { return conn_; }
  // CONNECTION_BAD: the session is gone; the pool drops such a connection.
  bool broken() const { return PQstatus(conn_) != CONNECTION_OK; }
  PGTransactionStatusType txn_status() const { return PQtransactionStatus(conn_); }
  // Where the server is, for messages: "127.0.0.1:5432/postgres".
  const std::string& where() const { return where_; }

  // Runs `sql` unprepared, with no parameters (DDL, a one-off read at open,
  // a savepoint), and returns its rows. `what` names it in errors. With
  // statements deferred, `sql` must be a single statement (it goes in their
  // pipeline).
  Result<PgResult> Query(std::string_view sql, std::string_view what);
  // The same when the rows do not matter.
  Status Simple(std::string_view sql, std::string_view what) { return Query(sql, what).status(); }
  // Runs a prepared statement with text parameters (nullopt = NULL),
  // preparing it first if this connection has not yet.
  Result<PgResult> Exec(const Statement& st, std::span<const std::optional<std::string>> params);
  Result<PgResult> Exec(const Statement& st, const PgParams& params);
  // Runs `st` once per element of `params`, in order, in one round trip
  // (after whatever is deferred), and returns their results in that order.
  // The first failure is the call's (nothing after it ran).
  Result<std::vector<PgResult>> ExecMany(const Statement& st, std::span<const PgParams> params);

  // Deferred statements: queued here and sent ahead of the next statement
  // this connection runs (Query, Exec, Flush or Commit), in the same round
  // trip (libpq pipeline mode). For statements whose result nobody reads: a
  // transaction's BEGIN, a savepoint, a write that cannot fail on expected
  // conditions (a receipt). If one fails, that next call fails with its
  // error, named after it, and nothing after it in the pipeline runs; and
  // since a call that deferred it already returned OK, the transaction is
  // spoiled: Commit refuses it (no savepoint rollback can mend that).
  void Defer(std::string sql, std::string_view what);
  // `what` names it in errors (default: the statement's name).
  void Defer(const Statement& st, const PgParams& params, std::string_view what = {});
  // Sends what is deferred, alone (before application code gets the
  // PGconn*, which must find the transaction begun).
  Status Flush();
  // Forgets what is deferred from index `from` on, unsent (a savepoint
  // whose body failed). deferred() is how many are queued now; sent() counts
  // every command this connection has sent.
  void DropDeferred(size_t from) {
    if (from < deferred_.size()) deferred_.resize(from);
  }
  size_t deferred() const { return deferred_.size(); }
  uint64_t sent() const { return sent_; }

  // Begins a write transaction: BEGIN READ WRITE and, when `deadline` is
  // not time_point::max(), its lock_timeout set to the time left (both
  // prepared, see kBeginWriteStatement), deferred: they go out with the
  // first statement. Cancelled, naming
  // `what`, with nothing sent, if the deadline has already passed. The
  // deadline is kept for Rebegin.
  Status BeginWrite(std::chrono::steady_clock::time_point deadline, std::string_view what);
  // After ExecAndCommit: begins the next transaction of the same call, as
  // BeginWrite did the first.
  Status Rebegin() { return BeginWrite(deadline_, what_); }

  // Runs a prepared statement and COMMITs in the same round trip: what is
  // deferred, the statement, COMMIT and the AfterCommit statements, as
  // Commit() does. Returns the statement's result once COMMIT's tag is
  // checked. If the statement fails (its error, classified as any
  // statement's), COMMIT did not run and nothing committed; a connection
  // lost before any answer came is OutcomeUnknown, as for Commit. On
  // success ended() is true: statements after it run outside any
  // transaction (the pool's sessions are read-only by default, so a write
  // there fails) until Rebegin.
  Result<PgResult> ExecAndCommit(const Statement& st, const PgParams& params);
  // Whether the transaction this attempt began was committed by
  // ExecAndCommit and none has begun since.
  bool ended() const { return ended_; }

  // Statements (no parameters) sent in the same round trip as the COMMIT,
  // right after it, each in a transaction of its own (for a NOTIFY: one
  // inside the committing transaction would hold PostgreSQL's database-wide
  // notification lock through that commit's WAL flush, so notifying commits
  // could never share a flush). Best effort: they run only if COMMIT did not
  // fail, and their own failure, or the connection lost after COMMIT's
  // answer came, leaves the outcome COMMIT reported. Dropped by Rollback and
  // after Commit.
  void AfterCommit(std::string sql) {
    Command c;
    c.sql = std::move(sql);
    c.what = "after COMMIT";
    after_commit_.push_back(std::move(c));
  }
  // What is deferred, COMMIT and the AfterCommit statements, in one round
  // trip; then checks COMMIT's tag: a transaction that had failed answers
  // "ROLLBACK" without an error, which is Internal here (nothing committed,
  // Failure kOther). A connection lost during the COMMIT is OutcomeUnknown.
  Status Commit();
  // Drops what is deferred, then ROLLBACK if a transaction is open, best
  // effort (a broken connection has nothing to roll back).
  void Rollback();

  // The last failure's classification (Status::OK and kNone after success).
  const PgError& last_error() const { return last_; }
  // Whether any statement since MarkAttempt() failed in a way that rolled
  // the whole transaction back safely (kRetryable, kLostBefore), even if the
  // body went on (a savepoint rolled back, a later statement succeeded) and
  // finally failed with a status of its own making.
  void MarkAttempt() {
    attempt_failure_ = Failure::kNone;
    ended_ = false;
    DropPending();
  }
  Failure attempt_failure() const { return attempt_failure_; }
  // The body found that what it read before the transaction began (the
  // store's cached queue records) no longer holds: rerunning it is what
  // succeeds, as after a serialization failure.
  void MarkStale() { attempt_failure_ = Failure::kRetryable; }

 private:
  PgConn(PGconn* conn, std::string where) : conn_(conn), where_(std::move(where)) {}
  // Classifies a failed result (null: the call could not even send).
  Status Fail(const PGresult* r, std::string_view what, bool committing = false);
  Result<PgResult> Run(const Statement& st, std::span<const std::optional<std::string>> values,
                       const int* formats);
  // Forgets what is deferred or due before COMMIT, and a spoiled
  // transaction's failure: the transaction they belonged to is over.
  void DropPending() {
    spoiled_ = Status::OK();
    deferred_.clear();
    after_commit_.clear();
  }
  // One command of a pipeline: a prepared or unprepared statement (`st`)
  // with its parameters, or, when `sql` is set, that parameterless text.
  struct Command {
    Statement st;
    std::string sql;
    std::vector<std::optional<std::string>> values;
    std::vector<int> formats;
    std::string what;
  };
  // Sends deferred_ then `last` (if any) then `after` (if any) in one
  // pipeline and reads every result. The first failure among deferred_ and
  // `last` decides (committing: `last` is the COMMIT, see Commit); `after`'s
  // are best effort (AfterCommit). Otherwise returns `last`'s result (or an
  // empty one), and moves the result of deferred command `keep` (if not
  // npos) to *kept. With `own`, the commands from `keep` on are the caller's
  // (ExecMany: a failure there is the call's, not a deferred statement's)
  // and every result from `keep` on, `last`'s included, is appended to *own
  // instead.
  Result<PgResult> Pipeline(Command* last, bool committing = false, size_t keep = SIZE_MAX,
                            PgResult* kept = nullptr, std::vector<PgResult>* own = nullptr,
                            std::vector<Command>* after = nullptr);
  // Commit() and ExecAndCommit: deferred_ (command `keep` of it kept in
  // *kept), COMMIT, its tag checked, and the AfterCommit statements.
  Status CommitPipeline(size_t keep, PgResult* kept);

  bool SendCommand(const Command& c);

  PGconn* conn_;
  std::string where_;
  std::set<std::string, std::less<>> prepared_;
  PgError last_;
  Failure attempt_failure_ = Failure::kNone;
  std::vector<Command> deferred_;
  std::vector<Command> after_commit_;
  uint64_t sent_ = 0;
  Status spoiled_;  // a deferred statement's failure: Commit returns it
  bool ended_ = false;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  std::string what_;
};

// The classification itself, for a SQLSTATE (empty: no server answer) and
// whether COMMIT was in flight; exposed for tests.
PgError ClassifyPgError(std::string_view sqlstate, bool connection_lost, bool committing,
                        std::string message);

}  // namespace mqlite::pg_internal

#endif  // MQLITE_STORES_POSTGRES_SRC_PG_CONN_H_
