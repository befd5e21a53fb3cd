// The PostgreSQL side of mqlite-bench (issue 12; SPEC §11): the store's
// spec (postgres:<durability>), its floor (pg_floor:<durability>) and the
// bloat soak. Everything runs on the server given by --pg-url, each workload
// in a PostgreSQL schema of its own (named after the workload, dropped
// first and afterwards).
//
// The floor is the fewest statements that do the core workloads on
// PostgreSQL: one connection per client, prepared statements with binary
// parameters, autocommit single statements, a message table with an
// identity seq, a partial claim index over claimable rows and a partial
// lease index over locked ones, a claim that is one UPDATE over a
// `FOR UPDATE SKIP LOCKED` sub-select, a complete that is one DELETE. No
// queue table, no groups, no receipts, no dedup, no NOTIFY, no savepoints:
// only what any SKIP LOCKED queue must do. The shared_* floor workloads run
// N such clients at once on one table: the floor the store's N engines are
// measured against.
#include <arpa/inet.h>
#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "mqlite/postgres.h"

namespace mqlite::bench {
namespace {

constexpr size_t kBody = 256;
using Steady = std::chrono::steady_clock;

// A PostgreSQL schema name for a workload's directory: its leaf, lowercased,
// anything but [a-z0-9_] made '_', prefixed "bench_"; at most 63 bytes (a
// long one keeps a hash of the whole so two never collide).
std::string SchemaFor(const std::string& dir) {
  std::string leaf = std::filesystem::path(dir).filename().string();
  std::string s = "bench_";
  for (char c : leaf) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    s += ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) ? c : '_';
  }
  if (s.size() > 63) {
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(s));
    s = s.substr(0, 46) + "_" + hash;
  }
  return s;
}

// A plain libpq session for the floor and the bench's own set-up; failures Die.
class Session {
 public:
  explicit Session(const std::string& url) : conn_(PQconnectdb(url.c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) Fail("connect");
  }
  ~Session() { PQfinish(conn_); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  PGconn* raw() { return conn_; }

  // Runs `sql` (no parameters) and returns the first column of the first row
  // ("" when there is none).
  std::string Exec(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    Ok(r, sql);
    std::string v = PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "";
    PQclear(r);
    return v;
  }
  void Prepare(const char* name, const std::string& sql) {
    PGresult* r = PQprepare(conn_, name, sql.c_str(), 0, nullptr);
    Ok(r, sql);
    PQclear(r);
  }
  // Runs a prepared statement with binary parameters and binary results;
  // the caller PQclears the result.
  PGresult* Run(const char* name, const std::vector<std::string_view>& params) {
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    for (std::string_view p : params) {
      values.push_back(p.data());
      lengths.push_back(static_cast<int>(p.size()));
      formats.push_back(1);
    }
    PGresult* r = PQexecPrepared(conn_, name, static_cast<int>(params.size()), values.data(),
                                 lengths.data(), formats.data(), 1);
    Ok(r, name);
    return r;
  }
  [[noreturn]] void Fail(const std::string& what) {
    Die("postgres: " + what, Status::Unavailable(PQerrorMessage(conn_)));
  }

 private:
  void Ok(PGresult* r, const std::string& what) {
    const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      const std::string msg = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
      PQclear(r);
      Die("postgres: " + what, Status::Internal(msg));
    }
  }
  PGconn* conn_;
};

void DropSchema(const std::string& url, const std::string& schema) {
  Session s(url);
  s.Exec("SET client_min_messages = warning");
  s.Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
}

std::string Int8(int64_t v) {
  std::string out(8, '\0');
  PutBigEndian(static_cast<uint64_t>(v), out.data());
  return out;
}

const char* SynchronousCommit(Durability d) {
  return d == Durability::kProcessOnly ? "off" : "on";
}

std::string PgLabel(Durability d) {
  return "durability=" + std::string(DurabilityName(d)) +
         " synchronous_commit=" + SynchronousCommit(d);
}

class PgFloor final : public Floor {
 public:
  // `create`: drops and makes the schema (the first client); the others
  // join it. The creator drops the schema when it goes.
  PgFloor(const std::string& url, std::string schema, Durability durability, bool create)
      : url_(url), schema_(std::move(schema)), owner_(create), session_(url) {
    session_.Exec("SET client_min_messages = warning");
    session_.Exec(std::string("SET synchronous_commit = ") + SynchronousCommit(durability));
    if (create) {
      session_.Exec("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE");
      session_.Exec("CREATE SCHEMA " + schema_);
      session_.Exec("CREATE TABLE " + schema_ +
                    ".msgs (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                    " queue_id bigint NOT NULL, state smallint NOT NULL, priority smallint NOT NULL,"
                    " enqueued_at bigint NOT NULL, delivery_count integer NOT NULL,"
                    " locked_until bigint NOT NULL, lock_token bytea, body bytea NOT NULL)");
      session_.Exec("CREATE INDEX msgs_claim ON " + schema_ +
                    ".msgs (queue_id, priority DESC, seq) WHERE state = 0");
      session_.Exec("CREATE INDEX msgs_lease ON " + schema_ +
                    ".msgs (queue_id, locked_until) WHERE state = 1");
    }
    const std::string t = schema_ + ".msgs";
    session_.Prepare("ins", "INSERT INTO " + t +
                                " (queue_id, state, priority, enqueued_at, delivery_count,"
                                " locked_until, body) VALUES ($1::bigint, 0, 0, $2::bigint, 0, 0,"
                                " $3::bytea)");
    session_.Prepare("claim",
                     "UPDATE " + t + " m SET state = 1, lock_token = $2::bytea,"
                     " locked_until = $3::bigint, delivery_count = m.delivery_count + 1"
                     " FROM (SELECT seq FROM " + t + " WHERE queue_id = $1::bigint AND state = 0"
                     " ORDER BY priority DESC, seq LIMIT $4::bigint FOR UPDATE SKIP LOCKED) c"
                     " WHERE m.seq = c.seq RETURNING m.seq, m.body");
    session_.Prepare("complete", "DELETE FROM " + t +
                                     " WHERE seq = $1::bigint AND state = 1 AND lock_token = $2::bytea");
    std::random_device rd;
    client_ = (static_cast<uint64_t>(rd()) << 32) | rd();
  }
  ~PgFloor() override {
    if (owner_) session_.Exec("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE");
  }

  void Begin() override { session_.Exec("BEGIN"); }
  void Commit() override { session_.Exec("COMMIT"); }

  void Insert(int64_t queue, const std::string& body) override {
    const std::string q = Int8(queue), now = Int8(NowMs());
    PQclear(session_.Run("ins", {q, now, body}));
  }

  std::vector<int64_t> Claim(int64_t queue, int max) override {
    const int64_t now = NowMs();
    std::string token = Int8(static_cast<int64_t>(client_)) + Int8(++token_counter_);
    const std::string q = Int8(queue), until = Int8(now + 30'000), limit = Int8(max);
    PGresult* r = session_.Run("claim", {q, token, until, limit});
    std::vector<int64_t> seqs;
    for (int i = 0; i < PQntuples(r); ++i) {
      seqs.push_back(static_cast<int64_t>(GetBigEndian(PQgetvalue(r, i, 0))));
      body_bytes_ += PQgetlength(r, i, 1);  // read the body, as a consumer would
    }
    PQclear(r);
    last_token_ = std::move(token);
    return seqs;
  }

  void Complete(int64_t seq) override {
    const std::string s = Int8(seq);
    PGresult* r = session_.Run("complete", {s, last_token_});
    const bool one = std::strcmp(PQcmdTuples(r), "1") == 0;
    PQclear(r);
    if (!one) session_.Fail("complete: lock lost");
  }

 private:
  std::string url_, schema_;
  bool owner_;
  Session session_;
  uint64_t client_ = 0;
  int64_t token_counter_ = 0;
  std::string last_token_;
  int64_t body_bytes_ = 0;
};

// N floor clients on one fresh schema; the creator (index 0) is destroyed
// last, dropping the schema.
struct FloorClients {
  std::vector<std::unique_ptr<PgFloor>> clients;
  FloorClients(const std::string& url, const std::string& name, Durability d, int64_t n) {
    const std::string schema = SchemaFor(FreshDir(name));
    for (int64_t i = 0; i < n; ++i) {
      clients.push_back(std::make_unique<PgFloor>(url, schema, d, i == 0));
    }
  }
  ~FloorClients() {
    while (!clients.empty()) clients.pop_back();
  }
  PgFloor& operator[](int64_t i) { return *clients[static_cast<size_t>(i)]; }
};

void FloorSharedSend(benchmark::State& state, const std::string& name, const std::string& url,
                     Durability d, double seconds) {
  const int64_t n = state.range(0);
  FloorClients db(url, name, d, n);
  const std::string body = Body(kBody, 1);
  RunFor(state, n, seconds, [&](int64_t i) -> int64_t {
    db[i].Insert(1, body);
    return 1;
  });
}

void FloorSharedCycle(benchmark::State& state, const std::string& name, const std::string& url,
                      Durability d, double seconds) {
  const int64_t n = state.range(0);
  FloorClients db(url, name, d, n);
  const std::string body = Body(kBody, 1);
  RunFor(state, n, seconds, [&](int64_t i) -> int64_t {
    db[i].Insert(1, body);
    std::vector<int64_t> seqs;
    // Another client may hold the only claimable message for a moment.
    while (seqs.empty()) seqs = db[i].Claim(1, 1);
    db[i].Complete(seqs[0]);
    return 1;
  });
}

void FloorSharedDrain(benchmark::State& state, const std::string& name, const std::string& url,
                      Durability d) {
  const int64_t total = state.range(0), queues = state.range(1), n = state.range(2);
  FloorClients db(url, name, d, n);
  Progress fill(name + " fill", total);
  for (int64_t q = 0; q < queues; ++q) {
    for (int64_t done = 0; done < total / queues;) {
      db[0].Begin();
      for (int64_t i = 0; i < 1'000 && done < total / queues; ++i, ++done) {
        db[0].Insert(q, Body(kBody, done));
      }
      db[0].Commit();
    }
    fill.Update((q + 1) * (total / queues));
  }
  DrainTogether(state, name, n, queues, total / queues * queues,
                [&](int64_t i, int64_t q) -> int64_t {
                  std::vector<int64_t> seqs = db[i].Claim(q, 16);
                  if (seqs.empty()) return 0;
                  db[i].Begin();
                  for (int64_t seq : seqs) db[i].Complete(seq);
                  db[i].Commit();
                  return static_cast<int64_t>(seqs.size());
                });
}

// bloat_soak/<held|none>: soak_cycles cycles (Send, Receive max 1,
// Complete) on one engine while another session holds a REPEATABLE READ
// snapshot open from the start ("held") or not ("none"). With the snapshot
// held, nothing the cycles delete can be pruned, so the claim walks ever more
// dead index entries. Reports the claim time of the first and the last tenth
// of the cycles, the messages table's dead tuples afterwards
// (pg_stat_user_tables, read after the engine closed so its sessions'
// statistics are flushed) and its growth (table and indexes) per cycle.
void BloatSoak(benchmark::State& state, const std::string& name, const StoreSpec& spec,
               const std::string& url, int64_t cycles, bool held) {
  const std::string dir = FreshDir(name);
  const std::string schema = SchemaFor(dir);
  auto store = spec.open(dir);
  if (!store) Die(name + ": open store", store.error());
  EngineOptions options;
  auto engine = Engine::Open(std::move(*store), options);
  if (!engine) Die(name + ": open engine", engine.error());
  Engine& e = **engine;
  QueueConfig c;
  c.name = "q";
  Check(name, e.CreateQueue(c).status());
  Session observer(url), holder(url);
  const std::string size_sql = "SELECT pg_total_relation_size('" + schema + ".messages')";
  if (held) {
    holder.Exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
    holder.Exec("SELECT count(*) FROM " + schema + ".messages");  // takes the snapshot
  }
  const int64_t size_before = std::stoll(observer.Exec(size_sql));
  OutgoingMessage m;
  m.body = Body(kBody, 1);
  const int64_t tenth = std::max<int64_t>(1, cycles / 10);
  double first_s = 0, last_s = 0, all_s = 0;
  Counters counters;
  counters.Start();
  for (auto _ : state) {
    Progress progress(name, cycles);
    for (int64_t i = 0; i < cycles; ++i) {
      Check(name, e.Send("q", m).status());
      ReceiveOptions o;
      o.max_messages = 1;
      const auto t0 = Steady::now();
      auto got = e.Receive("q", o);
      const double s = std::chrono::duration<double>(Steady::now() - t0).count();
      if (!got || got->size() != 1) Die(name, got ? Status::Internal("no message") : got.error());
      Check(name, e.Complete("q", (*got)[0].seq, (*got)[0].lock_token));
      all_s += s;
      if (i < tenth) first_s += s;
      if (i >= cycles - tenth) last_s += s;
      progress.Update(i + 1);
    }
  }
  counters.Finish(state, cycles);
  const int64_t size_after = std::stoll(observer.Exec(size_sql));
  (void)e.Close();
  engine->reset();
  // The closed engine's sessions flush their statistics as they exit.
  const std::string dead_sql = "SELECT n_dead_tup FROM pg_stat_user_tables WHERE schemaname = '" +
                               schema + "' AND relname = 'messages'";
  std::string dead = observer.Exec(dead_sql);
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    observer.Exec("SELECT pg_stat_clear_snapshot()");
    const std::string again = observer.Exec(dead_sql);
    if (again == dead && i >= 2) break;
    dead = again;
  }
  if (held) holder.Exec("ROLLBACK");
  state.counters["claim_us"] = all_s * 1e6 / static_cast<double>(cycles);
  state.counters["claim_us_first_tenth"] = first_s * 1e6 / static_cast<double>(tenth);
  state.counters["claim_us_last_tenth"] = last_s * 1e6 / static_cast<double>(tenth);
  state.counters["dead_tuples"] = dead.empty() ? -1 : std::stod(dead);
  state.counters["table_growth_bytes_per_cycle"] =
      static_cast<double>(size_after - size_before) / static_cast<double>(cycles);
  if (spec.cleanup) spec.cleanup(dir);
}

}  // namespace

StoreSpec PostgresSpec(const std::string& url, Durability durability) {
  StoreSpec s;
  s.name = "postgres:" + std::string(DurabilityName(durability));
  s.label = PgLabel(durability);
  auto options = [url, durability](const std::string& dir) {
    PostgresOptions o;
    o.url = url;
    o.schema = SchemaFor(dir);
    o.durability = durability;
    return o;
  };
  // The business hooks see only the Tx; they find the schema of the
  // workload running now (workloads run one at a time) here.
  auto current = std::make_shared<std::string>();
  s.open = [url, options, current](const std::string& dir) {
    *current = SchemaFor(dir);
    DropSchema(url, *current);
    return OpenPostgresStore(options(dir));
  };
  s.reopen = [options](const std::string& dir) { return OpenPostgresStore(options(dir)); };
  s.cleanup = [url](const std::string& dir) { DropSchema(url, SchemaFor(dir)); };
  auto exec = [current](TxContext& tx, const std::string& sql, const char* what) -> Status {
    MQLITE_ASSIGN_OR_RETURN(PGconn * c, PostgresHandle(tx));
    PGresult* r = PQexec(c, sql.c_str());
    const bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) return Status::Internal(std::string(what) + ": " + PQerrorMessage(c));
    return Status::OK();
  };
  s.prepare_business = [exec, current](TxContext& tx) {
    return exec(tx, "CREATE TABLE " + *current + ".orders (id bigint PRIMARY KEY, item bytea NOT NULL)",
                "create orders");
  };
  // What an application does: one parameterised INSERT in the Tx.
  s.insert_business = [current](TxContext& tx, int64_t i) -> Status {
    MQLITE_ASSIGN_OR_RETURN(PGconn * c, PostgresHandle(tx));
    const std::string sql = "INSERT INTO " + *current + ".orders (id, item) VALUES ($1, 'widget')";
    const std::string id = std::to_string(i);
    const char* values[1] = {id.c_str()};
    PGresult* r = PQexecParams(c, sql.c_str(), 1, nullptr, values, nullptr, nullptr, 0);
    const bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) return Status::Internal(std::string("insert order: ") + PQerrorMessage(c));
    return Status::OK();
  };
  return s;
}

std::unique_ptr<Floor> OpenPgFloor(const std::string& url, const std::string& dir,
                                   Durability d) {
  return std::make_unique<PgFloor>(url, SchemaFor(dir), d, true);
}

void RegisterPgFloorWorkloads(const std::string& url, Durability d, const Scale& scale) {
  const std::string prefix = "pg_floor:" + std::string(DurabilityName(d));
  const std::string label = PgLabel(d);
  RegisterFloor(prefix, label, scale,
                [url, d](const std::string& dir) { return OpenPgFloor(url, dir, d); });
  auto reg = [&](const std::string& name, auto fn) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), [fn, name, label](benchmark::State& s) {
      fn(s, name);
      s.SetLabel(label);
    });
    return b->Unit(benchmark::kMicrosecond)->UseManualTime()->Iterations(1);
  };
  const double secs = scale.shared_seconds;
  for (int64_t n : scale.shared_engines) {
    reg(prefix + "/shared_send", [url, d, secs](benchmark::State& s, const std::string& n_) {
      FloorSharedSend(s, n_, url, d, secs);
    })->Arg(n);
    reg(prefix + "/shared_cycle", [url, d, secs](benchmark::State& s, const std::string& n_) {
      FloorSharedCycle(s, n_, url, d, secs);
    })->Arg(n);
    if (d != Durability::kNormal) continue;
    reg(prefix + "/shared_drain",
        [url, d](benchmark::State& s, const std::string& n_) { FloorSharedDrain(s, n_, url, d); })
        ->Args({scale.drain_total, scale.drain_queues, n});
  }
}

void RegisterPgSoak(const std::string& url, Durability d, const Scale& scale) {
  const StoreSpec spec = PostgresSpec(url, d);
  for (bool held : {true, false}) {
    const std::string name = spec.name + "/bloat_soak/" + (held ? "held" : "none");
    auto* b = benchmark::RegisterBenchmark(
        name.c_str(), [spec, url, name, held, cycles = scale.soak_cycles](benchmark::State& s) {
          BloatSoak(s, name, spec, url, cycles, held);
          s.SetLabel(spec.label);
        });
    b->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(1);
  }
}

std::string PgServerVersion(const std::string& url) {
  Session s(url);
  return s.Exec("SHOW server_version");
}

}  // namespace mqlite::bench
