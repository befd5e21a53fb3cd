// The floor workloads — send_one, send_batch, cycle and drain — written once
// against the Floor interface (bench.h) and run on every floor: the raw-SQL
// floor (floor.cc) and the raw-LMDB floor (lmdb_floor.cc). Their shape is the
// engine workloads' (workloads.cc): the same body size, batch sizes, claim
// batch and commit boundaries.
#include <string>
#include <vector>

#include "bench.h"

namespace mqlite::bench {
namespace {

constexpr size_t kBody = 256;
using Open = std::function<std::unique_ptr<Floor>(const std::string& dir)>;

void SendOne(benchmark::State& state, const std::string& name, const Open& open) {
  std::unique_ptr<Floor> db = open(FreshDir(name));
  const std::string body = Body(kBody, 1);
  TimedLoop(state, 1, [&] { db->Insert(1, body); });  // one message, one commit
}

void SendBatch(benchmark::State& state, const std::string& name, const Open& open) {
  const int64_t n = state.range(0);
  std::unique_ptr<Floor> db = open(FreshDir(name));
  std::vector<std::string> bodies;
  for (int64_t i = 0; i < n; ++i) bodies.push_back(Body(kBody, i));
  TimedLoop(state, n, [&] {
    db->Begin();
    for (const std::string& b : bodies) db->Insert(1, b);
    db->Commit();
  });
}

// Send, claim one, complete it: three commits.
void Cycle(benchmark::State& state, const std::string& name, const Open& open) {
  std::unique_ptr<Floor> db = open(FreshDir(name));
  const std::string body = Body(kBody, 1);
  TimedLoop(state, 1, [&] {
    db->Insert(1, body);
    std::vector<int64_t> seqs = db->Claim(1, 1);
    if (seqs.size() != 1) Die(name, Status::Internal("claim returned no message"));
    db->Complete(seqs[0]);
  });
}

// `total` messages over `queues` queues, filled in 1,000-message commits (not
// timed), then claimed up to 16 at a time round-robin, each claim's messages
// completed in one commit.
void Drain(benchmark::State& state, const std::string& name, const Open& open) {
  const int64_t total = state.range(0), queues = state.range(1);
  std::unique_ptr<Floor> db = open(FreshDir(name));
  Progress fill(name + " fill", total);
  for (int64_t q = 0; q < queues; ++q) {
    for (int64_t done = 0; done < total / queues;) {
      db->Begin();
      for (int64_t i = 0; i < 1'000 && done < total / queues; ++i, ++done) {
        db->Insert(q, Body(kBody, done));
      }
      db->Commit();
    }
    fill.Update((q + 1) * (total / queues));
  }
  Counters counters;
  counters.Start();
  int64_t drained = 0;
  for (auto _ : state) {
    drained = DrainRoundRobin(name, queues, total, [&](int64_t q) -> int64_t {
      std::vector<int64_t> seqs = db->Claim(q, 16);
      if (seqs.empty()) return 0;
      db->Begin();
      for (int64_t seq : seqs) db->Complete(seq);
      db->Commit();
      return static_cast<int64_t>(seqs.size());
    });
  }
  counters.Finish(state, drained);
}

// sqliteq's workloads (bench.h) with the fewest operations: the same counts
// and bodies as the engine stores', one commit per send, claim and complete.
void SqliteqCycle(benchmark::State& state, const std::string& name, const Open& open) {
  const int64_t n = state.range(0);
  std::unique_ptr<Floor> db = open(FreshDir(name));
  Counters counters;
  counters.Start();
  for (auto _ : state) {
    for (int64_t i = 0; i < n; ++i) {
      db->Insert(1, SqliteqBody(i));
      std::vector<int64_t> seqs = db->Claim(1, 1);
      if (seqs.size() != 1) Die(name, Status::Internal("claim returned no message"));
      db->Complete(seqs[0]);
    }
  }
  counters.Finish(state, n);
}

void SqliteqSend(benchmark::State& state, const std::string& name, const Open& open) {
  const int64_t n = state.range(0);
  std::unique_ptr<Floor> db = open(FreshDir(name));
  Counters counters;
  counters.Start();
  for (auto _ : state) {
    for (int64_t i = 0; i < n; ++i) db->Insert(1, SqliteqBody(i));
  }
  counters.Finish(state, n);
}

void SqliteqBigTable(benchmark::State& state, const std::string& name, const Open& open) {
  const int64_t total = state.range(0), queues = state.range(1), taken = state.range(2);
  std::unique_ptr<Floor> db = open(FreshDir(name));
  for (int64_t q = 0; q < queues; ++q) {
    db->Begin();
    for (int64_t i = 0; i < total / queues; ++i) db->Insert(q, SqliteqBody(q * total + i));
    db->Commit();
  }
  Counters counters;
  counters.Start();
  for (auto _ : state) {
    for (int64_t i = 0; i < taken; ++i) {
      std::vector<int64_t> seqs = db->Claim(i % queues, 1);
      if (seqs.size() != 1) Die(name, Status::Internal("claim returned no message"));
      db->Complete(seqs[0]);
    }
  }
  counters.Finish(state, taken);
}

void SqliteqBatch(benchmark::State& state, const std::string& name, const Open& open) {
  const int64_t batches = state.range(0), size = state.range(1);
  std::unique_ptr<Floor> db = open(FreshDir(name));
  Counters counters;
  counters.Start();
  for (auto _ : state) {
    for (int64_t b = 0; b < batches; ++b) {
      db->Begin();
      for (int64_t i = 0; i < size; ++i) db->Insert(1, SqliteqBody(b * size + i));
      db->Commit();
    }
  }
  counters.Finish(state, batches * size);
}

}  // namespace

void RegisterFloor(const std::string& prefix, const std::string& label, const Scale& scale,
                   FloorOpen open) {
  auto reg = [&](const std::string& workload,
                 void (*fn)(benchmark::State&, const std::string&, const Open&)) {
    const std::string name = prefix + "/" + workload;
    auto* b = benchmark::RegisterBenchmark(name.c_str(), [fn, name, label, open](benchmark::State& s) {
      fn(s, name, open);
      s.SetLabel(label);
    });
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
    return b;
  };
  reg("send_one", SendOne)->MinTime(scale.min_time_s);
  reg("send_batch", SendBatch)->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->MinTime(scale.min_time_s);
  reg("cycle", Cycle)->MinTime(scale.min_time_s);
  reg("drain", Drain)->Args({scale.drain_total, scale.drain_queues})->Iterations(1);
  auto bind = [open](void (*fn)(benchmark::State&, const std::string&, const Open&)) {
    return [open, fn](benchmark::State& s, const std::string& n_) { fn(s, n_, open); };
  };
  RegisterSqliteqWorkloads(
      prefix + "/", scale,
      [&](const std::string& name, std::function<void(benchmark::State&, const std::string&)> fn) {
        auto* b = benchmark::RegisterBenchmark(name.c_str(), [fn, name, label](benchmark::State& s) {
          fn(s, name);
          s.SetLabel(label);
        });
        return b->Unit(benchmark::kMicrosecond)->UseRealTime();
      },
      SqliteqWorkloadFns{bind(SqliteqCycle), bind(SqliteqSend), bind(SqliteqBigTable),
                         bind(SqliteqBatch)});
}

}  // namespace mqlite::bench
