// The transactional outbox on PostgreSQL (SPEC §8): an order row in the
// application's own table and its "order-created" event commit together or
// not at all, through the PGconn* of the Tx.
//
//   mqlite_outbox_postgres URL [SCHEMA]
//
// URL is a libpq connection string or URI (postgresql://user@host:port/db).
// The queues live in SCHEMA (default "outbox_example"), the application's
// table in the same database as SCHEMA.orders; both are dropped at the end
// unless SCHEMA was given.
//
// 1. Places order 42: INSERT into orders and Send to "order-events" inside
//    one Tx → both visible.
// 2. Tries order 43 but fails after both writes (a validation error) → the Tx
//    rolls back: no row, no event.
// 3. A consumer receives order 42's event and, in one Tx, marks the order
//    shipped and completes the message (consume-transform-produce).
// Exits non-zero with a message if anything deviates.
#include <libpq-fe.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>

#include "mqlite/engine.h"
#include "mqlite/postgres.h"

using mqlite::Status;

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "outbox example failed: %s\n", what.c_str());
  return 1;
}

// One statement of the application's, with text parameters, inside the Tx.
mqlite::Result<std::optional<std::string>> Sql(mqlite::TxContext& tx, const std::string& sql,
                                               std::initializer_list<const char*> params = {}) {
  MQLITE_ASSIGN_OR_RETURN(PGconn * conn, mqlite::PostgresHandle(tx));
  std::vector<const char*> values(params);
  PGresult* r = PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr,
                             values.data(), nullptr, nullptr, 0);
  const ExecStatusType st = PQresultStatus(r);
  std::optional<std::string> first;
  if (st == PGRES_TUPLES_OK && PQntuples(r) > 0) first = PQgetvalue(r, 0, 0);
  const std::string error = PQresultErrorMessage(r);
  PQclear(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return Status::Internal("application statement failed: " + error);
  }
  return first;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s URL [SCHEMA]\n", argv[0]);
    return 2;
  }
  const std::string schema = argc > 2 ? argv[2] : "outbox_example_" + std::to_string(getpid());
  auto store = mqlite::OpenPostgresStore({.url = argv[1], .schema = schema});
  if (!store.ok()) return Fail(store.error().ToString());
  auto opened = mqlite::Engine::Open(std::move(*store));
  if (!opened.ok()) return Fail(opened.error().ToString());
  mqlite::Engine& engine = **opened;
  if (auto q = engine.CreateQueue({.name = "order-events"}); !q.ok()) {
    return Fail(q.error().ToString());
  }
  const std::string orders = schema + ".orders";

  // 0. The application's own table (any DDL works inside a Tx on PostgreSQL).
  Status s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    return Sql(tx, "CREATE TABLE IF NOT EXISTS " + orders +
                       " (id int PRIMARY KEY, total int NOT NULL, status text NOT NULL)")
        .status();
  });
  if (!s.ok()) return Fail(s.ToString());

  // 1. The happy path: row and event commit together.
  s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(
        Sql(tx, "INSERT INTO " + orders + " VALUES (42, 1999, 'placed')").status());
    return tx.Send("order-events", {.body = R"({"order":42,"event":"created"})"}).status();
  });
  if (!s.ok()) return Fail("placing order 42: " + s.ToString());
  std::printf("order 42 placed: row and event committed together\n");

  // 2. A failure after both writes: everything rolls back.
  s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(
        Sql(tx, "INSERT INTO " + orders + " VALUES (43, -5, 'placed')").status());
    MQLITE_RETURN_IF_ERROR(
        tx.Send("order-events", {.body = R"({"order":43,"event":"created"})"}).status());
    return Status::InvalidArgument("order 43 has a negative total");
  });
  if (s.code() != mqlite::StatusCode::kInvalidArgument) return Fail("order 43 should fail");
  std::optional<std::string> count;
  Status check = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(count, Sql(tx, "SELECT count(*) FROM " + orders + " WHERE id = 43"));
    return Status::OK();
  });
  if (!check.ok()) return Fail(check.ToString());
  if (count != "0") return Fail("order 43's row survived the rollback");
  std::printf("order 43 refused (%s): no row, no event\n", s.ToString().c_str());

  // 3. Consume-transform-produce: ship order 42 and acknowledge its event atomically.
  auto got = engine.Receive("order-events", {.max_messages = 10});
  if (!got.ok()) return Fail(got.error().ToString());
  if (got->size() != 1) return Fail("expected exactly order 42's event");
  const mqlite::Message& event = got->front();
  s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(
        Sql(tx, "UPDATE " + orders + " SET status = $1 WHERE id = 42", {"shipped"}).status());
    return tx.Complete("order-events", event.seq, event.lock_token);
  });
  if (!s.ok()) return Fail("shipping order 42: " + s.ToString());
  auto stats = engine.Stats("order-events");
  if (!stats.ok() || stats->total != 0) return Fail("the event queue should be empty");
  std::optional<std::string> status;
  s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(status, Sql(tx, "SELECT status FROM " + orders + " WHERE id = 42"));
    return Status::OK();
  });
  if (!s.ok() || status != "shipped") return Fail("order 42 is not shipped");
  std::printf("order 42 shipped and its event completed in one transaction\n");

  (void)engine.Close();
  if (argc <= 2) {  // our own schema: leave the database as we found it
    PGconn* c = PQconnectdb(argv[1]);
    PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
    PQclear(PQexec(c, ("DROP SCHEMA IF EXISTS " + schema + " CASCADE").c_str()));
    PQfinish(c);
  }
  std::printf("outbox example OK\n");
  return 0;
}
