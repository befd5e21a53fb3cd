// Shared pieces of mqlite-bench: the run's scale, the stores under test, and
// the per-benchmark counters (SPEC §11: the same workloads on every store;
// numbers in docs come from here).
#ifndef MQLITE_BENCH_BENCH_H_
#define MQLITE_BENCH_BENCH_H_

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/store.h"
#include "proc_stats.h"

namespace mqlite::bench {

// Sizes of the workloads. "full" is what docs/benchmarks.md reports; "smoke"
// runs every workload at a tiny size so the test suite can check the
// benchmark still works (its numbers mean nothing).
struct Scale {
  std::string name;
  double min_time_s;                    // time-based workloads
  int64_t drain_total, drain_queues;    // drain/<total>/<queues>
  int64_t e2e_per_producer;             // e2e/4x4: messages per producer
  int64_t claim_iterations;             // claims timed per claim_* workload
  std::vector<int64_t> claim_backlogs;  // claim_backlog/<n>
  int64_t blocked;                      // claim_blocked/<n>
  // Shared stores (SPEC §9): the engine (or floor client) counts the
  // shared_* workloads run with, and how long each time-bound one runs.
  std::vector<int64_t> shared_engines;  // shared_<workload>/<n>
  double shared_seconds;
  int64_t soak_cycles;                  // bloat_soak/<held|none>
  // sqliteq's workloads (its bench/run.ts) run their counts divided by this.
  int64_t sqliteq_divisor;
};
Scale FullScale();
Scale SmokeScale();

// One store configuration under test. `name` is "<store>:<durability>", the
// first component of every benchmark name; `label` is recorded beside every
// number it produces.
struct StoreSpec {
  std::string name;
  std::string label;
  // Opens the store on a fresh, empty directory.
  std::function<Result<std::unique_ptr<Store>>(const std::string& dir)> open;
  // outbox_tx's business write through the native handle: `prepare` once,
  // then `insert` row i inside a Tx. Empty when the store has no handle.
  std::function<Status(TxContext&)> prepare_business;
  std::function<Status(TxContext&, int64_t i)> insert_business;
  // Shared stores only (empty otherwise): opens one more handle on the store
  // `open` made in `dir`, for another engine (SPEC §9) ...
  std::function<Result<std::unique_ptr<Store>>(const std::string& dir)> reopen;
  // ... and removes what `open` made outside `dir` (a server-side schema)
  // once the workload is done.
  std::function<void(const std::string& dir)> cleanup;
};

// Where benchmark data lives (a disk-backed directory), set by main().
const std::string& DataRoot();
void SetDataRoot(std::string root);

// A fresh directory for one benchmark run: <root>/<name with '/' → '_'>,
// emptied first.
std::string FreshDir(const std::string& bench_name);

// Brackets the timed part of a benchmark and sets the counters every workload
// reports: bytes_written_per_item, disk_bytes_per_item, peak_rss_mb.
class Counters {
 public:
  Counters();  // resets the peak-RSS mark
  void Start();  // call right before the timed loop
  void Finish(benchmark::State& state, int64_t items);

 private:
  IoCounters start_;
};

// Aborts the benchmark run with a clear message (a benchmark that cannot do
// its work must not report numbers).
[[noreturn]] void Die(const std::string& what, const Status& s);
void Check(const std::string& what, const Status& s);

// Progress for long set-ups and runs, on stderr: "<what>: 30% (300000/1000000)".
class Progress {
 public:
  Progress(std::string what, int64_t total);
  void Update(int64_t done);

 private:
  std::string what_;
  int64_t total_;
  int next_pct_ = 10;
};

std::string Body(size_t bytes, int64_t salt);
// The body of message `i` in sqliteq's workloads: a small JSON object like
// the one its README sends (sqliteq serialises every body as JSON).
std::string SqliteqBody(int64_t i);

// sqliteq's four workloads (issue 13; its bench/run.ts), the same counts for
// the engine stores (workloads.cc) and the floors (floor_workloads.cc):
//   sqliteq_cycle/10000        send → receive → delete, one at a time
//   sqliteq_send/50000         single sends
//   sqliteq_big_table/100000/10  single receive + delete on a table of
//                              100,000 messages over 10 queues (filled
//                              untimed), 10,000 of them, round-robin
//   sqliteq_batch/100/100      100 sends of a batch of 100
struct SqliteqCounts {
  int64_t cycle, send, big_table, big_table_queues, big_table_taken, batches, batch;
};
SqliteqCounts SqliteqCountsFor(const Scale& scale);

// The timed loop of the simple workloads: runs `op` once per iteration
// between Counters::Start and Finish; `items_per_iteration` messages each.
template <typename Op>
void TimedLoop(benchmark::State& state, int64_t items_per_iteration, Op op) {
  Counters counters;
  counters.Start();
  for (auto _ : state) op();
  counters.Finish(state, state.iterations() * items_per_iteration);
}

// drain's loop, shared by the engine and the floor: visits queues 0..n-1 in
// turn, `take(q)` receiving and completing up to a batch from queue q and
// returning how many, until a whole round takes nothing. Returns the total
// taken; prints progress against `total`.
int64_t DrainRoundRobin(const std::string& name, int64_t queues, int64_t total,
                        const std::function<int64_t(int64_t q)>& take);

// Milliseconds since the Unix epoch (the floors' timestamps).
int64_t NowMs();
// Writes v big-endian into out[0..8): byte order is numeric order (LMDB keys).
inline void PutBigEndian(uint64_t v, void* out) {
  auto* p = static_cast<unsigned char*>(out);
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (56 - 8 * i));
}
uint64_t GetBigEndian(const void* in);

// Registers every workload for `spec`; `core_only` registers just send_one,
// send_batch, cycle, e2e and outbox_tx (the durability=full run).
void RegisterEngineWorkloads(const StoreSpec& spec, const Scale& scale, bool core_only);
// Registers sqliteq's workloads (SqliteqCounts) as <prefix>sqliteq_cycle/N,
// sqliteq_send/N, sqliteq_big_table/<total>/<queues>/<taken> and
// sqliteq_batch/<batches>/<size>, through `reg` (which names, labels and
// times them as its caller's other workloads), one function each — the
// engine stores' (workloads.cc) and the floors' (floor_workloads.cc) share
// the names, counts and bodies.
struct SqliteqWorkloadFns {
  std::function<void(benchmark::State&, const std::string&)> cycle, send, big_table, batch;
};
void RegisterSqliteqWorkloads(
    const std::string& prefix, const Scale& scale,
    const std::function<benchmark::internal::Benchmark*(
        const std::string&, std::function<void(benchmark::State&, const std::string&)>)>& reg,
    const SqliteqWorkloadFns& fns);
// Registers the shared-store workloads for `spec` (which must have `reopen`):
// shared_send/N, shared_cycle/N, shared_drain/<total>/<queues>/N and
// shared_e2e/N for each N in scale.shared_engines, each with N engines on one
// store, every engine on a store handle (and so a connection pool) of its own.
// `core_only` leaves out shared_drain.
void RegisterSharedWorkloads(const StoreSpec& spec, const Scale& scale, bool core_only);

// Runs `work(i, deadline)` on `n` threads released together, `deadline`
// being `seconds` after the release (time-bound workloads stop there);
// returns the seconds from the release until the last thread returned.
using SteadyTime = std::chrono::steady_clock::time_point;
double RunTogether(int64_t n, double seconds,
                   const std::function<void(int64_t i, SteadyTime deadline)>& work);

// The timed part of a time-bound shared workload (engines or floor
// clients): `op(i)` runs over and over on n threads released together until
// `seconds` have passed, each run returning how many items it finished. Sets
// the iteration time (the benchmark uses manual time) and the counters;
// returns the items.
int64_t RunFor(benchmark::State& state, int64_t n, double seconds,
               const std::function<int64_t(int64_t i)>& op);
// shared_drain's timed part: n threads released together, thread i visiting
// queues (i + k) % queues in turn, `take(i, q)` receiving and completing up
// to a batch of queue q and returning how many, until a whole round takes
// nothing. Dies unless `expected` messages were taken. Sets the iteration
// time and the counters.
void DrainTogether(benchmark::State& state, const std::string& name, int64_t n, int64_t queues,
                   int64_t expected, const std::function<int64_t(int64_t i, int64_t q)>& take);

// A floor: the fewest operations of one database that do the core workloads,
// the physical limit for the store built on it (floor.cc: raw SQL for the
// SQLite store; lmdb_floor.cc: raw LMDB for the LMDB store). Failures Die.
class Floor {
 public:
  virtual ~Floor() = default;
  // One write transaction around several Insert or Complete calls; outside
  // one, each Insert and Complete commits on its own.
  virtual void Begin() = 0;
  virtual void Commit() = 0;
  virtual void Insert(int64_t queue, const std::string& body) = 0;
  // Claims up to `max` messages of `queue` under one token and reads their
  // bodies, in its own commit; returns their seqs.
  virtual std::vector<int64_t> Claim(int64_t queue, int max) = 0;
  // Completes `seq`, which the last Claim returned.
  virtual void Complete(int64_t seq) = 0;
};
// Makes a Floor on a fresh directory.
using FloorOpen = std::function<std::unique_ptr<Floor>(const std::string& dir)>;
// Registers the floor workloads send_one, send_batch/{1,10,100,1000}, cycle
// and drain as `<prefix>/<workload>` (floor_workloads.cc), each on a Floor
// that `open` makes on a fresh directory.
void RegisterFloor(const std::string& prefix, const std::string& label, const Scale& scale,
                   FloorOpen open);
// The floors themselves: the raw-SQL one (floor.cc) and the raw-LMDB one
// (lmdb_floor.cc), opened with their store's settings at `durability`;
// `spec` adds the writes the SPEC obliges (floor_spec, lmdb_floor_spec).
std::unique_ptr<Floor> OpenSqlFloor(const std::string& dir, Durability durability, bool spec);
std::unique_ptr<Floor> OpenLmdbFloor(const std::string& dir, Durability durability, bool spec);
// One side of a pair (paired.cc): `unit` does one unit of the workload and
// returns the items it finished (0: this side is done).
struct Side {
  std::function<int64_t()> unit;
  int64_t items = 0;
  double seconds = 0;
  int64_t bytes = 0;  // written (/proc/self/io wchar) during its turns
  bool done = false;
};
// Runs `a` and `b` in turns of about 25 ms (at least one unit) in the order
// A B B A …, so a steady drift of the machine costs both sides alike, until
// each side has run `seconds` in all, or (seconds 0) until each is done,
// having taken about `items` (for the progress line).
void TakeTurns(Side& a, Side& b, double seconds, int64_t items, const std::string& name);
// What a time-bound pair runs a side: 4 × min_time_s (2 s at full scale).
double PairedSeconds(const Scale& scale);

// The paired workloads (paired.cc): `spec`'s store and the floor `open_floor`
// makes, in one benchmark each, taking turns in short slices, so the ratio of
// their rates is measured on the same seconds of the machine:
// <store>/paired_send_one, paired_send_batch/100, paired_cycle, and with
// `drain` paired_drain/<total>/<queues>, with `big_table`
// paired_big_table/<total>/<queues>/<taken> (sqliteq's shape).
void RegisterPairedWorkloads(const StoreSpec& spec, const std::string& floor_label,
                             FloorOpen open_floor, const Scale& scale, bool drain,
                             bool big_table);

// The labels recorded beside each store's numbers and its floor's.
// The SPEC §10 mapping each store uses (docs/sqlite-store.md,
// docs/lmdb-store.md), taken from the stores themselves so the floors open
// with exactly their settings.
const char* SqliteSynchronous(Durability d);  // "NORMAL", "FULL", "OFF"
unsigned LmdbEnvFlags(Durability d);          // MDB_NOTLS plus the sync flags
std::string SqliteLabel(Durability d);
std::string LmdbLabel(Durability d, const std::string& map);

// The raw-SQL floor (floor.cc), floor:<durability>; `spec` registers
// floor_spec, the floor plus the writes the SPEC obliges.
void RegisterFloorWorkloads(Durability durability, bool spec, const Scale& scale);
// The raw-LMDB floor (lmdb_floor.cc), lmdb_floor:<durability>; `spec`
// registers lmdb_floor_spec, the floor plus the writes the SPEC obliges.
void RegisterLmdbFloorWorkloads(Durability durability, bool spec, const Scale& scale);

#ifdef MQLITE_BENCH_POSTGRES
// The PostgreSQL store (postgres:<durability>) and its SKIP LOCKED floor
// (pg_floor:<durability>), both on the server at `url` (pg_bench.cc). Every
// workload gets a PostgreSQL schema of its own, dropped afterwards.
StoreSpec PostgresSpec(const std::string& url, Durability durability);
void RegisterPgFloorWorkloads(const std::string& url, Durability durability, const Scale& scale);
// The SKIP LOCKED floor itself, on a schema of its own named after `dir`.
std::unique_ptr<Floor> OpenPgFloor(const std::string& url, const std::string& dir,
                                   Durability durability);
// bloat_soak/held and bloat_soak/none on postgres:<durability>: cycles
// under a snapshot another session holds open, and without one.
void RegisterPgSoak(const std::string& url, Durability durability, const Scale& scale);
std::string PgServerVersion(const std::string& url);
#endif

}  // namespace mqlite::bench

#endif  // MQLITE_BENCH_BENCH_H_
