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
// same commit as each Complete (§7.2, with its expiry index) and an index
// that pages messages by state and seq (§6 Peek by state, which §11 forbids
// answering with a scan). The gap between the two floors is the price of
// those guarantees; the gap between floor_spec and the store is the engine's.
#include <sqlite3.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "bench.h"

namespace mqlite::bench {
namespace {

constexpr size_t kBody = 256;

class FloorDb {
 public:
  FloorDb(const std::string& dir, bool full, bool spec) : spec_(spec) {
    const std::string path = dir + "/floor.db";
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                                 SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      Fail("open " + path);
    }
    Exec("PRAGMA auto_vacuum = INCREMENTAL");
    Exec("PRAGMA journal_mode = WAL");
    Exec("PRAGMA journal_size_limit = 4194304");
    Exec(full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
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
      Exec("CREATE INDEX receipts_expiry ON receipts (expires_at)");
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
  ~FloorDb() {
    for (sqlite3_stmt* s : {insert_, claim_, complete_, begin_, commit_, receipt_}) {
      sqlite3_finalize(s);
    }
    sqlite3_close(db_);
  }

  void Begin() { Done(begin_); }
  void Commit() { Done(commit_); }

  void Insert(int64_t queue, const std::string& body) {
    sqlite3_bind_int64(insert_, 1, queue);
    sqlite3_bind_int64(insert_, 2, Now());
    sqlite3_bind_blob(insert_, 3, body.data(), static_cast<int>(body.size()), SQLITE_STATIC);
    Done(insert_);
  }

  // Claims up to `max` messages of `queue` under one token; returns their seqs.
  std::vector<int64_t> Claim(int64_t queue, int max) {
    const int64_t now = Now();
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

  // Completes `seq`, claimed by the last Claim.
  void Complete(int64_t seq) {
    sqlite3_bind_int64(complete_, 1, seq);
    sqlite3_bind_blob(complete_, 2, last_token_, sizeof last_token_, SQLITE_STATIC);
    Done(complete_);
    if (sqlite3_changes(db_) != 1) Fail("complete: lock lost");
    if (spec_) {  // key: seq big-endian, then the token (the store's key leads the same way)
      unsigned char key[8 + sizeof last_token_];
      for (int i = 0; i < 8; ++i) key[i] = static_cast<unsigned char>(static_cast<uint64_t>(seq) >> (56 - 8 * i));
      std::memcpy(key + 8, last_token_, sizeof last_token_);
      sqlite3_bind_blob(receipt_, 1, key, sizeof key, SQLITE_TRANSIENT);
      sqlite3_bind_int64(receipt_, 2, Now() + 30 * 60 * 1000);
      Done(receipt_);
    }
  }

 private:
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
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

void SendOne(benchmark::State& state, const std::string& name, bool full, bool spec) {
  FloorDb db(FreshDir(name), full, spec);
  const std::string body = Body(kBody, 1);
  TimedLoop(state, 1, [&] { db.Insert(1, body); });  // autocommit: one statement, one commit
}

void SendBatch(benchmark::State& state, const std::string& name, bool full, bool spec) {
  const int64_t n = state.range(0);
  FloorDb db(FreshDir(name), full, spec);
  std::vector<std::string> bodies;
  for (int64_t i = 0; i < n; ++i) bodies.push_back(Body(kBody, i));
  TimedLoop(state, n, [&] {
    db.Begin();
    for (const std::string& b : bodies) db.Insert(1, b);
    db.Commit();
  });
}

void Cycle(benchmark::State& state, const std::string& name, bool full, bool spec) {
  FloorDb db(FreshDir(name), full, spec);
  const std::string body = Body(kBody, 1);
  TimedLoop(state, 1, [&] {
    db.Insert(1, body);
    std::vector<int64_t> seqs = db.Claim(1, 1);
    if (seqs.size() != 1) Die(name, Status::Internal("claim returned no message"));
    if (spec) db.Begin();  // the delete and its receipt commit together
    db.Complete(seqs[0]);
    if (spec) db.Commit();
  });
}

void Drain(benchmark::State& state, const std::string& name, bool full, bool spec) {
  const int64_t total = state.range(0), queues = state.range(1);
  FloorDb db(FreshDir(name), full, spec);
  Progress fill(name + " fill", total);
  for (int64_t q = 0; q < queues; ++q) {
    for (int64_t done = 0; done < total / queues;) {
      db.Begin();
      for (int64_t i = 0; i < 1'000 && done < total / queues; ++i, ++done) {
        db.Insert(q, Body(kBody, done));
      }
      db.Commit();
    }
    fill.Update((q + 1) * (total / queues));
  }
  Counters counters;
  counters.Start();
  int64_t drained = 0;
  for (auto _ : state) {
    drained = DrainRoundRobin(name, queues, total, [&](int64_t q) -> int64_t {
      std::vector<int64_t> seqs = db.Claim(q, 16);
      if (seqs.empty()) return 0;
      db.Begin();
      for (int64_t seq : seqs) db.Complete(seq);
      db.Commit();
      return static_cast<int64_t>(seqs.size());
    });
  }
  counters.Finish(state, drained);
}

}  // namespace

void RegisterFloorWorkloads(bool full, bool spec, const Scale& scale) {
  const std::string p =
      std::string(spec ? "floor_spec:" : "floor:") + (full ? "full" : "normal") + "/";
  const std::string label = std::string("durability=") + (full ? "full" : "normal") +
                            " synchronous=" + (full ? "FULL" : "NORMAL") + " journal=WAL";
  auto reg = [&](const std::string& name, auto fn) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), [fn, name, label](benchmark::State& s) {
      fn(s, name);
      s.SetLabel(label);
    });
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
    return b;
  };
  reg(p + "send_one", [full, spec](benchmark::State& s, const std::string& n_) { SendOne(s, n_, full, spec); })->MinTime(scale.min_time_s);
  reg(p + "send_batch", [full, spec](benchmark::State& s, const std::string& n_) { SendBatch(s, n_, full, spec); })
      ->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->MinTime(scale.min_time_s);
  reg(p + "cycle", [full, spec](benchmark::State& s, const std::string& n_) { Cycle(s, n_, full, spec); })->MinTime(scale.min_time_s);
  reg(p + "drain", [full, spec](benchmark::State& s, const std::string& n_) { Drain(s, n_, full, spec); })
      ->Args({scale.drain_total, scale.drain_queues})->Iterations(1);
}

}  // namespace mqlite::bench
