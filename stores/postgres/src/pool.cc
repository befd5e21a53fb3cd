#include "pool.h"

#include <chrono>
#include <stop_token>
#include <utility>

namespace mqlite::pg_internal {

PgPool::Lease& PgPool::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    Return();
    pool_ = o.pool_;
    conn_ = std::move(o.conn_);
    discard_ = o.discard_;
    o.pool_ = nullptr;
  }
  return *this;
}

void PgPool::Lease::Return() {
  if (pool_ && conn_) pool_->Release(std::move(conn_), discard_);
  pool_ = nullptr;
  conn_.reset();
}

Result<std::unique_ptr<PgPool>> PgPool::Create(PgPoolOptions options) {
  if (options.max_connections < 1) {
    return Status::InvalidArgument("PostgreSQL store: max_connections must be at least 1 (got " +
                                   std::to_string(options.max_connections) + ")");
  }
  return std::unique_ptr<PgPool>(new PgPool(std::move(options)));
}

PgPool::~PgPool() {
  std::lock_guard<std::mutex> l(mu_);
  idle_.clear();
}

Result<PgPool::Lease> PgPool::Acquire(const RunOptions& options, std::string_view what) {
  const auto cancelled = [&] {
    return Status::Cancelled(std::string(what) +
                             ": cancelled while waiting for a PostgreSQL connection (all " +
                             std::to_string(options_.max_connections) +
                             " in use); nothing was done");
  };
  std::unique_lock<std::mutex> l(mu_);
  const auto ready = [&] { return !idle_.empty() || open_ < options_.max_connections; };
  if (options.stop.stop_requested() || std::chrono::steady_clock::now() >= options.deadline) {
    return cancelled();
  }
  if (!ready()) {
    if (options.deadline == std::chrono::steady_clock::time_point::max()) {
      cv_.wait(l, options.stop, ready);
    } else {
      cv_.wait_until(l, options.stop, options.deadline, ready);
    }
    if (!ready()) return cancelled();
  }
  if (!idle_.empty()) {
    std::unique_ptr<PgConn> c = std::move(idle_.back());
    idle_.pop_back();
    return Lease(this, std::move(c));
  }
  ++open_;  // the slot is ours while we connect, outside the lock
  l.unlock();
  Result<std::unique_ptr<PgConn>> c = PgConn::Connect(options_.url);
  if (c.has_value()) {
    if (Status s = SetUp(**c); !s.ok()) c = s;
  }
  if (!c.has_value()) {
    l.lock();
    --open_;
    cv_.notify_one();
    return c.error();
  }
  return Lease(this, std::move(*c));
}

Status PgPool::SetUp(PgConn& c) const {
  if (options_.session_setup.empty()) return Status::OK();
  std::string sql;  // one round trip
  for (const std::string& s : options_.session_setup) sql += s + ";";
  return c.Simple(sql, "set up the session");
}

Status PgPool::Adopt(std::unique_ptr<PgConn> conn) {
  if (conn->broken() || conn->txn_status() != PQTRANS_IDLE) return Status::OK();  // dropped
  MQLITE_RETURN_IF_ERROR(SetUp(*conn));
  std::lock_guard<std::mutex> l(mu_);
  if (open_ >= options_.max_connections) return Status::OK();
  ++open_;
  idle_.push_back(std::move(conn));
  cv_.notify_one();
  return Status::OK();
}

void PgPool::Release(std::unique_ptr<PgConn> conn, bool discard) {
  if (!discard && !conn->broken() && conn->txn_status() != PQTRANS_IDLE) {
    conn->Rollback();  // a lease given back mid-transaction: end it
  }
  const bool reuse = !discard && !conn->broken() && conn->txn_status() == PQTRANS_IDLE;
  if (!reuse) conn.reset();  // closed outside the lock
  std::lock_guard<std::mutex> l(mu_);
  if (reuse) {
    idle_.push_back(std::move(conn));
  } else {
    --open_;
  }
  cv_.notify_one();
}

int PgPool::open_connections() const {
  std::lock_guard<std::mutex> l(mu_);
  return open_;
}

int PgPool::idle_connections() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int>(idle_.size());
}

}  // namespace mqlite::pg_internal
