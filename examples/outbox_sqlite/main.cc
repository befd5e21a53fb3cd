// The transactional outbox on SQLite (SPEC §8): an order row and its
// "order-created" event commit together or not at all.
//
//   mqlite_outbox_sqlite [path]
//
// 1. Places order 42: INSERT into the application's own `orders` table and
//    Send to "order-events" inside one Tx → both visible.
// 2. Tries order 43 but fails after both writes (a validation error) → the Tx
//    rolls back: no row, no event.
// 3. A consumer receives order 42's event and, in one Tx, marks the order
//    shipped and completes the message (consume-transform-produce).
// Exits non-zero with a message if anything deviates.
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "mqlite/engine.h"
#include "mqlite/sqlite.h"

using mqlite::Status;

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "outbox example failed: %s\n", what.c_str());
  return 1;
}

// Runs one SQL statement on the Tx's connection, mapping errors to Status.
Status Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return Status::Internal("SQL failed: " + msg);
  }
  return Status::OK();
}

int64_t CountOrders(mqlite::Engine& engine, int id) {
  int64_t n = -1;
  (void)engine.Tx([&](mqlite::TxContext& tx) -> Status {
    auto db = mqlite::SqliteHandle(tx);
    if (!db.ok()) return db.error();
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(*db, "SELECT count(*) FROM orders WHERE id = ?", -1, &st, nullptr);
    sqlite3_bind_int(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return Status::OK();
  });
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = argc > 1 ? argv[1] : "mqlite-outbox-" + std::to_string(getpid()) + ".db";
  auto store = mqlite::OpenSqliteStore({.path = path});
  if (!store.ok()) return Fail(store.error().ToString());
  auto opened = mqlite::Engine::Open(std::move(*store));
  if (!opened.ok()) return Fail(opened.error().ToString());
  mqlite::Engine& engine = **opened;
  if (auto q = engine.CreateQueue({.name = "order-events"}); !q.ok()) {
    return Fail(q.error().ToString());
  }

  // The application's own table, in the same file.
  Status s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    auto db = mqlite::SqliteHandle(tx);
    if (!db.ok()) return db.error();
    return Exec(*db,
                "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, total_cents INTEGER, "
                "status TEXT)");
  });
  if (!s.ok()) return Fail(s.ToString());

  // 1. The happy path: row and event commit together.
  s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    auto db = mqlite::SqliteHandle(tx);
    if (!db.ok()) return db.error();
    MQLITE_RETURN_IF_ERROR(Exec(*db, "INSERT INTO orders VALUES (42, 1999, 'placed')"));
    return tx.Send("order-events", {.body = R"({"order":42,"event":"created"})"}).status();
  });
  if (!s.ok()) return Fail("placing order 42: " + s.ToString());
  std::printf("order 42 placed: row and event committed together\n");

  // 2. A failure after both writes: everything rolls back.
  s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    auto db = mqlite::SqliteHandle(tx);
    if (!db.ok()) return db.error();
    MQLITE_RETURN_IF_ERROR(Exec(*db, "INSERT INTO orders VALUES (43, -5, 'placed')"));
    MQLITE_RETURN_IF_ERROR(
        tx.Send("order-events", {.body = R"({"order":43,"event":"created"})"}).status());
    return Status::InvalidArgument("order 43 has a negative total");
  });
  if (s.code() != mqlite::StatusCode::kInvalidArgument) return Fail("order 43 should fail");
  if (CountOrders(engine, 43) != 0) return Fail("order 43's row survived the rollback");
  std::printf("order 43 refused (%s): no row, no event\n", s.ToString().c_str());

  // 3. Consume-transform-produce: ship order 42 and acknowledge its event atomically.
  auto got = engine.Receive("order-events", {.max_messages = 10});
  if (!got.ok()) return Fail(got.error().ToString());
  if (got->size() != 1) return Fail("expected exactly order 42's event");
  const mqlite::Message& event = got->front();
  s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    auto db = mqlite::SqliteHandle(tx);
    if (!db.ok()) return db.error();
    MQLITE_RETURN_IF_ERROR(Exec(*db, "UPDATE orders SET status = 'shipped' WHERE id = 42"));
    return tx.Complete("order-events", event.seq, event.lock_token);
  });
  if (!s.ok()) return Fail("shipping order 42: " + s.ToString());
  auto stats = engine.Stats("order-events");
  if (!stats.ok() || stats->total != 0) return Fail("the event queue should be empty");
  std::printf("order 42 shipped and its event completed in one transaction\n");

  (void)engine.Close();
  if (argc <= 1) {
    for (const char* suffix : {"", "-wal", "-shm", ".lock"}) ::unlink((path + suffix).c_str());
  }
  std::printf("outbox example OK\n");
  return 0;
}
