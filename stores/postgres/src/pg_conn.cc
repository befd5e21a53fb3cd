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

Result<PgResult> PgConn::Run(const Statement& st,
                             std::span<const std::optional<std::string>> params,
                             const int* formats) {
  if (!st.plan_each_time && !prepared_.contains(st.name)) {
    PgResult p(PQprepare(conn_, st.name, st.sql, 0, nullptr));
    if (!p.get() || PQresultStatus(p.get()) != PGRES_COMMAND_OK) {
      return Fail(p.get(), std::string("prepare ") + st.name);
    }
    prepared_.insert(st.name);
  }
  std::vector<const char*> values(params.size());
  std::vector<int> lengths(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    values[i] = params[i] ? params[i]->data() : nullptr;
    lengths[i] = params[i] ? static_cast<int>(params[i]->size()) : 0;
  }
  PgResult r(st.plan_each_time
                 ? PQexecParams(conn_, st.sql, static_cast<int>(values.size()), nullptr,
                                values.data(), lengths.data(), formats, 0)
                 : PQexecPrepared(conn_, st.name, static_cast<int>(values.size()),
                                  values.data(), lengths.data(), formats, 0));
  const ExecStatusType s = r.get() ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) return Fail(r.get(), st.name);
  last_ = PgError{};
  return r;
}

Status PgConn::Commit() {
  const std::string sql = std::move(before_commit_) + "COMMIT";
  const int before = before_commit_count_;
  before_commit_.clear();
  before_commit_count_ = 0;
  // A session the server has already ended (pg_terminate_backend, a
  // shutdown) left its FATAL in the socket: read it first, and the failure
  // is "lost before COMMIT", which is certain, not "outcome unknown".
  if (PQconsumeInput(conn_) == 0 || broken()) return Fail(nullptr, "COMMIT");
  if (PQsendQuery(conn_, sql.c_str()) == 0) return Fail(nullptr, "COMMIT", /*committing=*/true);
  // One result per statement, COMMIT's last. A statement before COMMIT that
  // the server itself failed (it sent an error with a SQLSTATE) means it
  // never ran the COMMIT; any other failure may have come after it did.
  PgResult last;
  Status failed;
  for (int i = 0;; ++i) {
    PgResult r(PQgetResult(conn_));
    if (r.get() == nullptr) break;
    const ExecStatusType s = PQresultStatus(r.get());
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK && failed.ok()) {
      const bool server_said = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) != nullptr;
      failed = Fail(r.get(), i < before ? "before COMMIT" : "COMMIT",
                    /*committing=*/!(i < before && server_said));
    }
    last = std::move(r);
  }
  if (!failed.ok()) return failed;
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
  return Status::OK();
}

void PgConn::Rollback() {
  before_commit_.clear();
  before_commit_count_ = 0;
  if (broken()) return;
  PgResult r(PQexec(conn_, "ROLLBACK"));
}

}  // namespace mqlite::pg_internal
