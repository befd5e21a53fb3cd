// The PostgreSQL store's connection pool: up to `max_connections` PgConns
// to one server, handed out one at a time per transaction.
//
// Acquire waits for an idle connection, or opens a new one while fewer than
// the maximum are open. The wait is the store's "waiting to start" (SPEC
// §10, RunOptions): it gives up with Cancelled — having done nothing — as
// soon as the call's stop token is requested or its deadline passes.
// Connections are opened outside the pool's lock, so a slow server never
// blocks a release.
//
// A lease returns its connection when destroyed. A connection that is
// broken, or still inside a transaction that a ROLLBACK cannot end, is
// closed instead of reused (its slot is freed for a fresh one), so a session
// killed by the server (pg_terminate_backend, a restart) costs one failed
// transaction, not a poisoned pool.
//
// Thread-safe.
#ifndef MQLITE_STORES_POSTGRES_SRC_POOL_H_
#define MQLITE_STORES_POSTGRES_SRC_POOL_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "mqlite/status.h"
#include "mqlite/store.h"
#include "pg_conn.h"

namespace mqlite::pg_internal {

struct PgPoolOptions {
  std::string url;          // libpq connection string or URI
  int max_connections = 8;  // ≥ 1
  // Run once on every new connection before its first lease (SET ...), in
  // one round trip.
  std::vector<std::string> session_setup;
};

class PgPool {
 public:
  // A connection on loan; returns it to the pool when destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept : pool_(o.pool_), conn_(std::move(o.conn_)) { o.pool_ = nullptr; }
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { Return(); }

    PgConn* operator->() const { return conn_.get(); }
    PgConn& operator*() const { return *conn_; }
    // Closes the connection instead of reusing it (after a failure that may
    // have left it in an unknown state).
    void Discard() { discard_ = true; }

   private:
    friend class PgPool;
    Lease(PgPool* pool, std::unique_ptr<PgConn> conn) : pool_(pool), conn_(std::move(conn)) {}
    void Return();
    PgPool* pool_ = nullptr;
    std::unique_ptr<PgConn> conn_;
    bool discard_ = false;
  };

  // InvalidArgument for max_connections < 1. Opens no connection yet.
  static Result<std::unique_ptr<PgPool>> Create(PgPoolOptions options);
  ~PgPool();

  // A connection for one transaction (see the file comment). `what` names
  // the call in a Cancelled message. Unavailable if a new connection cannot
  // be made (the slot is freed again).
  Result<Lease> Acquire(const RunOptions& options, std::string_view what);

  // Takes an idle connection opened elsewhere (the one that checked the
  // schema at open) as one of the pool's, after the session setup; drops it
  // if the pool is full or it is not idle.
  Status Adopt(std::unique_ptr<PgConn> conn);

  int open_connections() const;  // idle + leased
  int idle_connections() const;
  const PgPoolOptions& options() const { return options_; }

 private:
  explicit PgPool(PgPoolOptions options) : options_(std::move(options)) {}
  void Release(std::unique_ptr<PgConn> conn, bool discard);
  Status SetUp(PgConn& c) const;  // options_.session_setup in one round trip

  const PgPoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::vector<std::unique_ptr<PgConn>> idle_;
  int open_ = 0;  // connections counted against max: idle, leased, or being opened
};

}  // namespace mqlite::pg_internal

#endif  // MQLITE_STORES_POSTGRES_SRC_POOL_H_
