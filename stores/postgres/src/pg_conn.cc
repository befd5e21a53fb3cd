#include "pg_conn.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <utility>
#include <vector>

namespace mqlite::pg_internal {

namespace {

// The server's primary message without libpq's trailing newline.
std::string Trimmed(const char* s) {
  std::string m = s ? s : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

// libpq's view of a statement's parameters: pointers and lengths (NULL for
// a missing value), valid while `params` lives.
struct ParamArrays {
  std::vector<const char*> values;
  std::vector<int> lengths;
  explicit ParamArrays(std::span<const std::optional<std::string>> params)
      : values(params.size()), lengths(params.size()) {
    for (size_t i = 0; i < params.size(); ++i) {
      values[i] = params[i] ? params[i]->data() : nullptr;
      lengths[i] = params[i] ? static_cast<int>(params[i]->size()) : 0;
    }
  }
  int count() const { return static_cast<int>(values.size()); }
};

// `sql` with each $N written out as the literal of params[N-1] (NULL for a
// missing value), quoted by the server's rules (PQescapeLiteral); nullopt
// when a value cannot be quoted (libpq's error message says why) or is in
// binary format, or for a $N past $9.
std::optional<std::string> WithLiterals(PGconn* conn, const char* sql,
                                        std::span<const std::optional<std::string>> params,
                                        const int* formats) {
  std::string out;
  for (const char* p = sql; *p != '\0'; ++p) {
    if (*p != '$' || p[1] < '1' || p[1] > '9') {
      out += *p;
      continue;
    }
    const size_t i = static_cast<size_t>(p[1] - '1');
    ++p;
    if ((p[1] >= '0' && p[1] <= '9') || i >= params.size() || (formats != nullptr && formats[i] != 0)) return std::nullopt;
    if (!params[i]) {
      out += "NULL";
      continue;
    }
    char* quoted = PQescapeLiteral(conn, params[i]->data(), params[i]->size());
    if (quoted == nullptr) return std::nullopt;
    out += quoted;
    PQfreemem(quoted);
  }
  return out;
}

}  // namespace

PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    if (r_) PQclear(r_);
    r_ = o.r_;
    o.r_ = nullptr;
  }
  return *this;
}

PgResult::~PgResult() {
  if (r_) PQclear(r_);
}

int64_t PgResult::i64(int row, int col) const {
  const std::string_view t = text(row, col);
  int64_t v = 0;
  std::from_chars(t.data(), t.data() + t.size(), v);
  return v;
}

std::string PgResult::bytes(int row, int col) const {
  const std::string_view t = text(row, col);
  std::string out;
  if (t.size() < 2 || t[0] != '\\' || t[1] != 'x') return std::string(t);  // not hex form
  out.reserve((t.size() - 2) / 2);
  auto nib = [](char c) -> int {
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
  };
  for (size_t i = 2; i + 1 < t.size(); i += 2) {
    out.push_back(static_cast<char>((nib(t[i]) << 4) | nib(t[i + 1])));
  }
  return out;
}

std::optional<std::string> PgResult::opt_bytes(int row, int col) const {
  if (null(row, col)) return std::nullopt;
  return bytes(row, col);
}

int64_t PgResult::affected() const {
  const char* n = r_ ? PQcmdTuples(r_) : "";
  int64_t v = 0;
  std::from_chars(n, n + std::strlen(n), v);
  return v;
}

PgError ClassifyPgError(std::string_view sqlstate, bool connection_lost, bool committing,
                        std::string message) {
  PgError e;
  e.failure = Failure::kOther;
  e.sqlstate = std::string(sqlstate);
  const std::string code = sqlstate.empty() ? "" : " (SQLSTATE " + std::string(sqlstate) + ")";
  if (connection_lost && committing) {
    e.failure = Failure::kLostAfter;
    e.status = Status::OutcomeUnknown(
        message + code +
        ": the connection was lost while COMMIT was in flight, so the transaction may or may "
        "not have committed; reconcile (idempotency keys, receipts) before retrying");
    return e;
  }
  const auto cls = sqlstate.substr(0, std::min<size_t>(2, sqlstate.size()));
  if (sqlstate == "40001" || sqlstate == "40P01") {
    e.failure = Failure::kRetryable;
    e.status = Status::Unavailable(message + code + ": rolled back; safe to retry");
  } else if (connection_lost || cls == "08" || sqlstate == "57P01" || sqlstate == "57P02" ||
             sqlstate == "57P03") {
    e.failure = Failure::kLostBefore;
    e.status = Status::Unavailable(message + code +
                                   ": the connection was lost before COMMIT; nothing committed");
  } else if (sqlstate == "55P03" || sqlstate == "57014") {
    e.status = Status::Cancelled(message + code);
  } else if (cls == "53") {
    e.status = Status::StoreFull(message + code);
  } else {
    e.status = Status::Internal(message + code);
  }
  return e;
}

Result<std::unique_ptr<PgConn>> PgConn::Connect(const std::string& url) {
  PGconn* c = PQconnectdb(url.c_str());
  if (c == nullptr) return Status::Internal("PostgreSQL store: out of memory connecting");
  if (PQstatus(c) != CONNECTION_OK) {
    // PQerrorMessage names host and port; the connection string itself (which
    // may hold a password) is never echoed.
    const std::string msg = Trimmed(PQerrorMessage(c));
    PQfinish(c);
    return Status::Unavailable("PostgreSQL store: cannot connect: " + msg);
  }
  // The server's NOTICEs ("table does not exist, skipping") are not the
  // application's business: libpq would print them to stderr.
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  std::string where = std::string(PQhost(c) ? PQhost(c) : "?") + ":" +
                      (PQport(c) ? PQport(c) : "?") + "/" + (PQdb(c) ? PQdb(c) : "?");
  return std::unique_ptr<PgConn>(new PgConn(c, std::move(where)));
}

PgConn::~PgConn() { PQfinish(conn_); }

Status PgConn::Fail(const PGresult* r, std::string_view what, bool committing) {
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  std::string message = Trimmed(r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : nullptr);
  if (message.empty()) message = Trimmed(PQerrorMessage(conn_));
  last_ = ClassifyPgError(state ? state : "", broken(), committing,
                          "PostgreSQL store (" + where_ + "): " + std::string(what) + ": " +
                              message);
  if (last_.failure == Failure::kRetryable || last_.failure == Failure::kLostBefore) {
    attempt_failure_ = last_.failure;
  }
  return last_.status;
}

Result<PgResult> PgConn::Query(std::string_view sql, std::string_view what) {
  if (!deferred_.empty()) {
    Command c;
    c.sql = std::string(sql);
    c.what = std::string(what);
    return Pipeline(&c);
  }
  ++sent_;
  PgResult r(PQexec(conn_, std::string(sql).c_str()));
  const ExecStatusType st = r.get() ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return Fail(r.get(), what);
  last_ = PgError{};
  return r;
}

Result<PgResult> PgConn::Exec(const Statement& st,
                              std::span<const std::optional<std::string>> params) {
  return Run(st, params, nullptr);
}

Result<PgResult> PgConn::Exec(const Statement& st, const PgParams& params) {
  return Run(st, params.values_, params.formats_.data());
}

void PgConn::Defer(std::string sql, std::string_view what) {
  Command c;
  c.sql = std::move(sql);
  c.what = std::string(what);
  deferred_.push_back(std::move(c));
}

void PgConn::Defer(const Statement& st, const PgParams& params, std::string_view what) {
  Command c;
  c.st = st;
  c.values = params.values_;
  c.formats = params.formats_;
  c.what = what.empty() ? std::string(st.name) : std::string(what);
  deferred_.push_back(std::move(c));
}

Status PgConn::Flush() {
  if (deferred_.empty()) return Status::OK();
  return Pipeline(nullptr).status();
}

Result<PgResult> PgConn::Run(const Statement& st,
                             std::span<const std::optional<std::string>> params,
                             const int* formats) {
  if (!deferred_.empty() || (!st.plan_each_time && !prepared_.contains(st.name))) {
    // Preparing, and whatever is deferred, go in the same round trip.
    Command c;
    c.st = st;
    c.values.assign(params.begin(), params.end());
    if (formats != nullptr) c.formats.assign(formats, formats + params.size());
    c.what = st.name;
    return Pipeline(&c);
  }
  PgResult r;
  if (st.plan_each_time) {
    const std::optional<std::string> text = WithLiterals(conn_, st.sql, params, formats);
    if (!text) return Fail(nullptr, st.name);
    ++sent_;
    r = PgResult(PQexecParams(conn_, text->c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0));
  } else {
    const ParamArrays a(params);
    ++sent_;
    r = PgResult(PQexecPrepared(conn_, st.name, a.count(), a.values.data(), a.lengths.data(),
                                formats, 0));
  }
  const ExecStatusType s = r.get() ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) return Fail(r.get(), st.name);
  last_ = PgError{};
  return r;
}

bool PgConn::SendCommand(const Command& c) {
  ++sent_;
  if (!c.sql.empty()) {
    return PQsendQueryParams(conn_, c.sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) != 0;
  }
  const int* formats = c.formats.empty() ? nullptr : c.formats.data();
  if (c.st.plan_each_time) {
    const std::optional<std::string> text = WithLiterals(conn_, c.st.sql, c.values, formats);
    return text && PQsendQueryParams(conn_, text->c_str(), 0, nullptr, nullptr, nullptr, nullptr,
                                     0) != 0;
  }
  const ParamArrays a(c.values);
  return PQsendQueryPrepared(conn_, c.st.name, a.count(), a.values.data(), a.lengths.data(),
                             formats, 0) != 0;
}

Result<std::vector<PgResult>> PgConn::ExecMany(const Statement& st,
                                               std::span<const PgParams> params) {
  std::vector<PgResult> out;
  if (params.empty()) return out;
  const size_t first = deferred_.size();
  for (size_t i = 0; i + 1 < params.size(); ++i) Defer(st, params[i]);
  Command last;
  last.st = st;
  last.values = params.back().values_;
  last.formats = params.back().formats_;
  last.what = st.name;
  out.reserve(params.size());
  MQLITE_RETURN_IF_ERROR(Pipeline(&last, /*committing=*/false, first, nullptr, &out).status());
  if (out.size() != params.size()) return Status::Internal("ExecMany: results missing");
  return out;
}

Result<PgResult> PgConn::Pipeline(Command* last, bool committing, size_t keep, PgResult* kept,
                                  std::vector<PgResult>* own, std::vector<Command>* after) {
  std::vector<Command> commands = std::move(deferred_);
  deferred_.clear();
  if (last != nullptr) commands.push_back(std::move(*last));
  const size_t last_index = commands.size() - 1;
  if (after != nullptr) {
    for (Command& c : *after) commands.push_back(std::move(c));
  }
  // What each result the server sends back is for: a PREPARE (named) or a
  // command (its index); best effort: one of `after`'s.
  struct Expect {
    const char* prepared = nullptr;
    size_t command = 0;
    std::string what;
    bool best_effort = false;
  };
  std::vector<Expect> expects;
  std::set<std::string, std::less<>> preparing;
  bool sent_all = PQenterPipelineMode(conn_) != 0;
  for (size_t i = 0; sent_all && i < commands.size(); ++i) {
    const Command& c = commands[i];
    if (c.sql.empty() && !c.st.plan_each_time && !prepared_.contains(c.st.name) &&
        !preparing.contains(c.st.name)) {
      if (PQsendPrepare(conn_, c.st.name, c.st.sql, 0, nullptr) == 0) {
        sent_all = false;
        break;
      }
      preparing.insert(c.st.name);
      expects.push_back({c.st.name, i, std::string("prepare ") + c.st.name});
    }
    if (!SendCommand(c)) {
      sent_all = false;
      break;
    }
    expects.push_back({nullptr, i, c.what, i > last_index});
  }
  if (!sent_all || PQpipelineSync(conn_) == 0) {
    // Nothing could be sent (the connection is gone): nothing ran.
    (void)PQexitPipelineMode(conn_);
    return Fail(nullptr, expects.empty() ? std::string_view("pipeline") : expects.back().what);
  }
  // One result per PREPARE and command, each followed by a null; a command
  // after a failed one comes back PGRES_PIPELINE_ABORTED (it never ran).
  // When committing, a failure the server reported (with a SQLSTATE) before
  // the COMMIT means the COMMIT never ran; any other failure may have come
  // after it did.
  Status failed;
  PgResult out;
  bool lost = false;
  for (const Expect& e : expects) {
    PGresult* raw = PQgetResult(conn_);
    if (raw == nullptr) {  // the connection went
      if (failed.ok() && !e.best_effort) failed = Fail(nullptr, e.what, committing);
      lost = true;
      break;
    }
    PgResult r(raw);
    while (PGresult* extra = PQgetResult(conn_)) PQclear(extra);
    const ExecStatusType st = PQresultStatus(r.get());
    if (st == PGRES_PIPELINE_ABORTED || e.best_effort) continue;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      if (failed.ok()) {
        // A deferred command's (one before `last` and not the caller's own,
        // or any in a Flush).
        const bool deferred =
            last == nullptr || e.command < (own != nullptr ? keep : last_index);
        const bool server_said = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) != nullptr;
        failed = Fail(r.get(), e.what, committing && !(deferred && server_said));
        if (deferred) spoiled_ = failed;
      }
      continue;
    }
    if (e.prepared != nullptr) {
      prepared_.insert(e.prepared);
    } else if (own != nullptr && e.command >= keep) {
      own->push_back(std::move(r));
    } else if (e.command == last_index) {
      out = std::move(r);
    } else if (e.command == keep && kept != nullptr) {
      *kept = std::move(r);
    }
  }
  if (!lost) {
    PgResult sync(PQgetResult(conn_));
    if (sync.get() == nullptr || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC) {
      if (failed.ok()) failed = Fail(sync.get(), "pipeline sync", committing);
    }
  }
  (void)PQexitPipelineMode(conn_);
  if (!failed.ok()) return failed;
  last_ = PgError{};
  return out;
}

Status PgConn::BeginWrite(std::chrono::steady_clock::time_point deadline, std::string_view what) {
  deadline_ = deadline;
  what_ = std::string(what);
  ended_ = false;
  Defer(kBeginWriteStatement, PgParams(), "BEGIN");
  if (deadline == std::chrono::steady_clock::time_point::max()) return Status::OK();
  const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                           deadline - std::chrono::steady_clock::now())
                           .count();
  if (left <= 0) {
    DropPending();
    return Status::Cancelled(what_ +
                             ": the deadline passed before the transaction began; nothing was done");
  }
  Defer(kLockTimeoutStatement, PgParams().Text(std::to_string(left)), "lock_timeout");
  return Status::OK();
}

Status PgConn::Commit() { return CommitPipeline(SIZE_MAX, nullptr); }

Result<PgResult> PgConn::ExecAndCommit(const Statement& st, const PgParams& params) {
  Defer(st, params);
  const size_t keep = deferred_.size() - 1;
  PgResult kept;
  MQLITE_RETURN_IF_ERROR(CommitPipeline(keep, &kept));
  return kept;
}

Status PgConn::CommitPipeline(size_t keep, PgResult* kept) {
  // A session the server has already ended (pg_terminate_backend, a
  // shutdown) left its FATAL in the socket: read it first, and the failure
  // is "lost before COMMIT", which is certain, not "outcome unknown".
  if (PQconsumeInput(conn_) == 0 || broken()) {
    DropPending();
    return Fail(nullptr, "COMMIT");
  }
  if (!spoiled_.ok()) {
    const Status spoiled = spoiled_;
    DropPending();
    return spoiled;
  }
  std::vector<Command> after = std::move(after_commit_);
  after_commit_.clear();
  Command commit;
  commit.st = kCommitStatement;
  commit.what = "COMMIT";
  MQLITE_ASSIGN_OR_RETURN(PgResult last,
                          Pipeline(&commit, /*committing=*/true, keep, kept, nullptr, &after));
  if (last.get() == nullptr) return Fail(nullptr, "COMMIT", /*committing=*/true);
  if (last.tag() != "COMMIT") {
    // The transaction had failed earlier (an error the caller did not see,
    // e.g. application code in a Tx): PostgreSQL rolls it back and answers
    // ROLLBACK, with no error.
    last_ = ClassifyPgError("", false, false,
                            "PostgreSQL store (" + where_ + "): COMMIT answered '" +
                                std::string(last.tag()) +
                                "': the transaction had failed and was rolled back; nothing "
                                "committed");
    return last_.status;
  }
  last_ = PgError{};
  ended_ = true;
  return Status::OK();
}

void PgConn::Rollback() {
  DropPending();
  if (broken() || txn_status() == PQTRANS_IDLE) return;
  PgResult r(PQexec(conn_, "ROLLBACK"));
}

}  // namespace mqlite::pg_internal
