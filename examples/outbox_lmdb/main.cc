// The transactional outbox on LMDB (SPEC §8): an order record in the
// application's own sub-database and its "order-created" event commit
// together or not at all.
//
//   mqlite_outbox_lmdb [dir]
//
// 0. Setup: one Tx opens (creates) the application's sub-database "orders" —
//    a DBI opened inside a transaction is usable after that transaction
//    commits (docs/lmdb-store.md, "Tx and the MDB_txn*").
// 1. Places order 42: mdb_put into "orders" and Send to "order-events" inside
//    one Tx → both visible.
// 2. Tries order 43 but fails after both writes (a validation error) → the Tx
//    rolls back: no record, no event.
// 3. A consumer receives order 42's event and, in one Tx, marks the order
//    shipped and completes the message (consume-transform-produce).
// Exits non-zero with a message if anything deviates.
#include <lmdb.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "mqlite/engine.h"
#include "mqlite/lmdb.h"

using mqlite::Status;

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "outbox example failed: %s\n", what.c_str());
  return 1;
}

MDB_val Val(const std::string& s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }

Status Lmdb(int rc, const char* what) {
  if (rc == 0) return Status::OK();
  return Status::Internal(std::string(what) + ": " + mdb_strerror(rc));
}

// The application's record for `id` in the Tx's transaction; nullopt if absent.
mqlite::Result<std::optional<std::string>> GetOrder(mqlite::TxContext& tx, MDB_dbi orders,
                                                    const std::string& id) {
  MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, mqlite::LmdbHandle(tx));
  MDB_val k = Val(id), v{};
  const int rc = mdb_get(txn, orders, &k, &v);
  if (rc == MDB_NOTFOUND) return std::optional<std::string>();
  MQLITE_RETURN_IF_ERROR(Lmdb(rc, "mdb_get(orders)"));
  return std::optional<std::string>(std::string(static_cast<const char*>(v.mv_data), v.mv_size));
}

Status PutOrder(mqlite::TxContext& tx, MDB_dbi orders, const std::string& id,
                const std::string& value) {
  MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, mqlite::LmdbHandle(tx));
  MDB_val k = Val(id), v = Val(value);
  return Lmdb(mdb_put(txn, orders, &k, &v, 0), "mdb_put(orders)");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir =
      argc > 1 ? argv[1] : "mqlite-outbox-lmdb-" + std::to_string(getpid());
  auto store = mqlite::OpenLmdbStore({.dir = dir});
  if (!store.ok()) return Fail(store.error().ToString());
  auto opened = mqlite::Engine::Open(std::move(*store));
  if (!opened.ok()) return Fail(opened.error().ToString());
  mqlite::Engine& engine = **opened;
  if (auto q = engine.CreateQueue({.name = "order-events"}); !q.ok()) {
    return Fail(q.error().ToString());
  }

  // 0. The application's own sub-database, in the same environment.
  MDB_dbi orders = 0;
  Status s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, mqlite::LmdbHandle(tx));
    return Lmdb(mdb_dbi_open(txn, "orders", MDB_CREATE, &orders), "mdb_dbi_open(orders)");
  });
  if (!s.ok()) return Fail(s.ToString());

  // 1. The happy path: record and event commit together.
  s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(PutOrder(tx, orders, "42", "total=1999 status=placed"));
    return tx.Send("order-events", {.body = R"({"order":42,"event":"created"})"}).status();
  });
  if (!s.ok()) return Fail("placing order 42: " + s.ToString());
  std::printf("order 42 placed: record and event committed together\n");

  // 2. A failure after both writes: everything rolls back.
  s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(PutOrder(tx, orders, "43", "total=-5 status=placed"));
    MQLITE_RETURN_IF_ERROR(
        tx.Send("order-events", {.body = R"({"order":43,"event":"created"})"}).status());
    return Status::InvalidArgument("order 43 has a negative total");
  });
  if (s.code() != mqlite::StatusCode::kInvalidArgument) return Fail("order 43 should fail");
  bool order_43_exists = true;
  Status check = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> v, GetOrder(tx, orders, "43"));
    order_43_exists = v.has_value();
    return Status::OK();
  });
  if (!check.ok()) return Fail(check.ToString());
  if (order_43_exists) return Fail("order 43's record survived the rollback");
  std::printf("order 43 refused (%s): no record, no event\n", s.ToString().c_str());

  // 3. Consume-transform-produce: ship order 42 and acknowledge its event atomically.
  auto got = engine.Receive("order-events", {.max_messages = 10});
  if (!got.ok()) return Fail(got.error().ToString());
  if (got->size() != 1) return Fail("expected exactly order 42's event");
  const mqlite::Message& event = got->front();
  s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(PutOrder(tx, orders, "42", "total=1999 status=shipped"));
    return tx.Complete("order-events", event.seq, event.lock_token);
  });
  if (!s.ok()) return Fail("shipping order 42: " + s.ToString());
  auto stats = engine.Stats("order-events");
  if (!stats.ok() || stats->total != 0) return Fail("the event queue should be empty");
  std::optional<std::string> shipped;
  s = engine.Tx([&](mqlite::TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(shipped, GetOrder(tx, orders, "42"));
    return Status::OK();
  });
  if (!s.ok() || shipped != "total=1999 status=shipped") return Fail("order 42 is not shipped");
  std::printf("order 42 shipped and its event completed in one transaction\n");

  (void)engine.Close();
  if (argc <= 1) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::printf("outbox example OK\n");
  return 0;
}
