// The floor: the fewest raw SQL statements that implement send_one,
// send_batch, cycle and drain on the SQLite store's schema ideas — one
// connection, prepared statements, the store's pragmas, a message table with
// a never-reused AUTOINCREMENT seq, a partial claim index over claimable rows
// and a partial lease index over locked ones. No queue table lookups, no
// groups, no receipts, no dedup: only what any SQLite queue must write. It is
// the physical limit for the SQLite store on this machine; the report shows
// the store's ratio to it.
//
// floor_spec adds, still with the fewest statements, the two writes the SPEC
// obliges every SQLite queue to make beyond that: a settlement receipt in the
// same commit as each Complete (§7.2; keyed only, as the store keeps it —
// maintenance finds expired ones by sweeping the keys) and an index
// that pages messages by state and seq (§6 Peek by state, which §11 forbids
// answering with a scan). The gap between the two floors is the price of
// those guarantees; the gap between floor_spec and the store is the engine's.
// The workloads themselves are floor_workloads.cc, shared with the LMDB floor.
#include <sqlite3.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench.h"

namespace mqlite::bench {
namespace {

class FloorDb final : public Floor {
 public:
  FloorDb(const std::string& dir, Durability durability, bool spec) : spec_(spec) {
    const std::string path = dir + "/floor.db";
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                                 SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      Fail("open " + path);
    }
    Exec("PRAGMA auto_vacuum = INCREMENTAL");
    Exec("PRAGMA journal_mode = WAL");
    Exec("PRAGMA journal_size_limit = 4194304");
    Exec("PRAGMA secure_delete = FAST");
    Exec((std::string("PRAGMA synchronous = ") + SqliteSynchronous(durability)).c_str());
    Exec(
        "CREATE TABLE msgs (seq INTEGER PRIMARY KEY AUTOINCREMENT, queue_id INTEGER NOT NULL,"
        " state INTEGER NOT NULL, priority INTEGER NOT NULL, enqueued_at INTEGER NOT NULL,"
        " delivery_count INTEGER NOT NULL, locked_until INTEGER NOT NULL, lock_token BLOB,"
        " body BLOB NOT NULL) STRICT");
    Exec("CREATE INDEX msgs_claim ON msgs (queue_id, priority DESC, seq) WHERE state = 0");
    Exec("CREATE INDEX msgs_lease ON msgs (queue_id, locked_until) WHERE state = 1");
    if (spec_) {
      Exec("CREATE INDEX msgs_state ON msgs (queue_id, state, seq)");
      Exec("CREATE TABLE receipts (key BLOB PRIMARY KEY, expires_at INTEGER NOT NULL) STRICT,"
           " WITHOUT ROWID");
      receipt_ = Prepare("INSERT INTO receipts (key, expires_at) VALUES (?1, ?2)");
    }
    insert_ = Prepare(
        "INSERT INTO msgs (queue_id, state, priority, enqueued_at, delivery_count, locked_until,"
        " body) VALUES (?1, 0, 0, ?2, 0, 0, ?3)");
    claim_ = Prepare(
        "UPDATE msgs SET state = 1, lock_token = ?2, locked_until = ?3,"
        " delivery_count = delivery_count + 1 WHERE seq IN (SELECT seq FROM msgs"
        " WHERE queue_id = ?1 AND state = 0 ORDER BY priority DESC, seq LIMIT ?4)"
        " RETURNING seq, body");
    complete_ = Prepare("DELETE FROM msgs WHERE seq = ?1 AND state = 1 AND lock_token = ?2");
    begin_ = Prepare("BEGIN IMMEDIATE");
    commit_ = Prepare("COMMIT");
  }
  ~FloorDb() override {
    for (sqlite3_stmt* s : {insert_, claim_, complete_, begin_, commit_, receipt_}) {
      sqlite3_finalize(s);
    }
    sqlite3_close(db_);
  }

  void Begin() override { Done(begin_); }
  void Commit() override { Done(commit_); }

  // Outside Begin/Commit: autocommit, one statement, one commit.
  void Insert(int64_t queue, const std::string& body) override {
    sqlite3_bind_int64(insert_, 1, queue);
    sqlite3_bind_int64(insert_, 2, NowMs());
    sqlite3_bind_blob(insert_, 3, body.data(), static_cast<int>(body.size()), SQLITE_STATIC);
    Done(insert_);
  }

  // One autocommit UPDATE … RETURNING.
  std::vector<int64_t> Claim(int64_t queue, int max) override {
    const int64_t now = NowMs();
    const uint64_t token[2] = {static_cast<uint64_t>(now), ++token_counter_};
    sqlite3_bind_int64(claim_, 1, queue);
    sqlite3_bind_blob(claim_, 2, token, sizeof token, SQLITE_TRANSIENT);
    sqlite3_bind_int64(claim_, 3, now + 30'000);
    sqlite3_bind_int(claim_, 4, max);
    std::vector<int64_t> seqs;
    int rc;
    while ((rc = sqlite3_step(claim_)) == SQLITE_ROW) {
      seqs.push_back(sqlite3_column_int64(claim_, 0));
      body_bytes_ += sqlite3_column_bytes(claim_, 1);  // read the body, as a consumer would
    }
    if (rc != SQLITE_DONE) Fail("claim");
    sqlite3_reset(claim_);
    std::memcpy(last_token_, token, sizeof token);
    return seqs;
  }

  // Outside Begin/Commit: autocommit, except that floor_spec's delete and
  // its receipt commit together.
  void Complete(int64_t seq) override {
    const bool own_txn = spec_ && sqlite3_get_autocommit(db_);
    if (own_txn) Begin();
    sqlite3_bind_int64(complete_, 1, seq);
    sqlite3_bind_blob(complete_, 2, last_token_, sizeof last_token_, SQLITE_STATIC);
    Done(complete_);
    if (sqlite3_changes(db_) != 1) Fail("complete: lock lost");
    if (spec_) {  // key: seq big-endian, then the token (the store's key leads the same way)
      unsigned char key[8 + sizeof last_token_];
      PutBigEndian(static_cast<uint64_t>(seq), key);
      std::memcpy(key + 8, last_token_, sizeof last_token_);
      sqlite3_bind_blob(receipt_, 1, key, sizeof key, SQLITE_TRANSIENT);
      sqlite3_bind_int64(receipt_, 2, NowMs() + 30 * 60 * 1000);
      Done(receipt_);
    }
    if (own_txn) Commit();
  }

 private:
  [[noreturn]] void Fail(const std::string& what) {
    Die("floor: " + what, Status::Internal(db_ ? sqlite3_errmsg(db_) : "no connection"));
  }
  void Exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) Fail(sql);
  }
  sqlite3_stmt* Prepare(const char* sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr) != SQLITE_OK) {
      Fail(sql);
    }
    return st;
  }
  void Done(sqlite3_stmt* st) {
    if (sqlite3_step(st) != SQLITE_DONE) Fail(sqlite3_sql(st));
    sqlite3_reset(st);
  }

  sqlite3* db_ = nullptr;
  sqlite3_stmt *insert_ = nullptr, *claim_ = nullptr, *complete_ = nullptr;
  sqlite3_stmt *begin_ = nullptr, *commit_ = nullptr, *receipt_ = nullptr;
  bool spec_ = false;
  uint64_t token_counter_ = 0;
  uint64_t last_token_[2] = {0, 0};
  int64_t body_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Floor> OpenSqlFloor(const std::string& dir, Durability durability, bool spec) {
  return std::make_unique<FloorDb>(dir, durability, spec);
}

void RegisterFloorWorkloads(Durability durability, bool spec, const Scale& scale) {
  RegisterFloor(std::string(spec ? "floor_spec:" : "floor:") + std::string(DurabilityName(durability)),
                SqliteLabel(durability), scale, [durability, spec](const std::string& dir) {
                  return OpenSqlFloor(dir, durability, spec);
                });
}

}  // namespace mqlite::bench
