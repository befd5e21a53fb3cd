// Paired workloads: a store and its floor in one benchmark, taking turns.
//
// On a shared machine the speed of a sync (and of the whole box) drifts by
// tens of per cent within seconds, so a store and its floor measured in
// separate benchmarks — even interleaved repetitions of half a second each —
// can land on different speeds of the machine: two runs a minute apart gave
// one ratio as 1.02× and 0.47×. Here both sides run in the same benchmark in
// short turns (about kSliceSeconds each, in the order A B B A A B B A …, so a
// steady drift costs both sides alike), and each side's items and seconds
// are summed apart. The ratio of the two rates is the figure the report
// judges the store by; each side's own rate is recorded beside it.
//
//   <store>:<durability>/paired_send_one            one Send / one INSERT (put)
//   <store>:<durability>/paired_send_batch/100      a SendBatch of 100 / 100 in one commit
//   <store>:<durability>/paired_cycle               Send, Receive(1), Complete / the floor's three commits
//   <store>:<durability>/paired_drain/<total>/<q>   Receive(16) + CompleteBatch over q queues
//                                                   holding <total>, round-robin, until empty
//   <store>:<durability>/paired_big_table/<total>/<q>/<taken>
//                                                   sqliteq's big table: single receive +
//                                                   complete, round-robin over q queues holding
//                                                   <total> small JSON bodies, <taken> of them
//
// The engine is opened with default options (background maintenance on), as
// in the unpaired workloads; fills are not timed.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "bench.h"

namespace mqlite::bench {
namespace {

constexpr size_t kBody = 256;
constexpr double kSliceSeconds = 0.025;
using Steady = std::chrono::steady_clock;

}  // namespace

// Runs `a` and `b` in turns of about kSliceSeconds (at least one unit) in the
// order A B B A …, until each side has run `seconds` in all, or (seconds 0)
// until each is done, having taken about `items` (for the progress line).
void TakeTurns(Side& a, Side& b, double seconds, int64_t items, const std::string& name) {
  Side* order[4] = {&a, &b, &b, &a};
  Progress progress(name, 100);
  for (int turn = 0;; ++turn) {
    const bool a_over = a.done || (seconds > 0 && a.seconds >= seconds);
    const bool b_over = b.done || (seconds > 0 && b.seconds >= seconds);
    if (a_over && b_over) break;
    Side& s = *order[turn % 4];
    if (s.done || (seconds > 0 && s.seconds >= seconds)) continue;
    const IoCounters io = ReadIo();
    const auto start = Steady::now();
    double elapsed = 0;
    do {
      const int64_t n = s.unit();
      if (n == 0) {
        s.done = true;
        break;
      }
      s.items += n;
      elapsed = std::chrono::duration<double>(Steady::now() - start).count();
    } while (elapsed < kSliceSeconds);
    s.seconds += std::chrono::duration<double>(Steady::now() - start).count();
    s.bytes += static_cast<int64_t>(ReadIo().wchar - io.wchar);
    const double share = seconds > 0 ? std::min(a.seconds, b.seconds) / seconds
                                     : static_cast<double>(std::min(a.items, b.items)) /
                                           static_cast<double>(std::max<int64_t>(1, items));
    progress.Update(static_cast<int64_t>(100 * std::min(1.0, share)));
  }
}

double PairedSeconds(const Scale& scale) { return 4 * scale.min_time_s; }

namespace {

void Report(benchmark::State& state, const Side& store, const Side& floor) {
  auto rate = [](const Side& s) { return s.seconds > 0 ? s.items / s.seconds : 0.0; };
  auto per_item = [](const Side& s) {
    return s.items > 0 ? static_cast<double>(s.bytes) / s.items : 0.0;
  };
  state.counters["items_per_second"] = rate(store);
  state.counters["floor_items_per_second"] = rate(floor);
  state.counters["ratio"] = rate(floor) > 0 ? rate(store) / rate(floor) : 0.0;
  state.counters["bytes_written_per_item"] = per_item(store);
  state.counters["floor_bytes_written_per_item"] = per_item(floor);
  state.counters["seconds"] = store.seconds;
  state.counters["floor_seconds"] = floor.seconds;
}

// The engine side and the floor side of one paired benchmark, each on a
// fresh directory of its own.
struct Pair {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Floor> floor;
  std::function<void(const std::string&)> cleanup;
  std::string dir;

  Pair(const StoreSpec& spec, const FloorOpen& open_floor, const std::string& name)
      : cleanup(spec.cleanup), dir(FreshDir(name)) {
    auto store = spec.open(dir);
    if (!store) Die(name + ": open store", store.error());
    auto e = Engine::Open(std::move(*store));
    if (!e) Die(name + ": open engine", e.error());
    engine = std::move(*e);
    floor = open_floor(FreshDir(name + "_floor"));
  }
  ~Pair() {
    if (engine) (void)engine->Close();
    engine.reset();
    if (cleanup) cleanup(dir);
  }
  void Queue(const std::string& q) {
    QueueConfig c;
    c.name = q;
    Check("CreateQueue " + q, engine->CreateQueue(c).status());
  }
  int64_t ReceiveAndComplete(const std::string& name, const std::string& q, int max) {
    ReceiveOptions o;
    o.max_messages = max;
    auto got = engine->Receive(q, o);
    if (!got) Die(name, got.error());
    if (got->empty()) return 0;
    if (got->size() == 1) {
      Check(name, engine->Complete(q, (*got)[0].seq, (*got)[0].lock_token));
      return 1;
    }
    std::vector<SettleItem> items;
    for (const Message& m : *got) items.push_back({m.seq, m.lock_token});
    auto r = engine->CompleteBatch(q, items);
    if (!r) Die(name, r.error());
    for (const Status& s : *r) Check(name, s);
    return static_cast<int64_t>(got->size());
  }
  int64_t FloorClaimAndComplete(int64_t q, int max) {
    std::vector<int64_t> seqs = floor->Claim(q, max);
    if (seqs.empty()) return 0;
    if (seqs.size() == 1) {
      floor->Complete(seqs[0]);
      return 1;
    }
    floor->Begin();
    for (int64_t seq : seqs) floor->Complete(seq);
    floor->Commit();
    return static_cast<int64_t>(seqs.size());
  }
  // Fills `queues` queues with total/queues messages each, on both sides, in
  // commits of 1,000 (not timed).
  void Fill(const std::string& name, int64_t total, int64_t queues,
            const std::function<std::string(int64_t q, int64_t i)>& body) {
    Progress progress(name + " fill", 2 * total);
    int64_t done = 0;
    for (int64_t q = 0; q < queues; ++q) {
      const std::string queue = "q" + std::to_string(q);
      Queue(queue);
      for (int64_t i = 0; i < total / queues;) {
        const int64_t k = std::min<int64_t>(1'000, total / queues - i);
        std::vector<OutgoingMessage> batch(static_cast<size_t>(k));
        floor->Begin();
        for (int64_t j = 0; j < k; ++j) {
          batch[j].body = body(q, i + j);
          floor->Insert(q, batch[j].body);
        }
        floor->Commit();
        Check(name + " fill " + queue, engine->SendBatch(queue, batch).status());
        i += k;
        done += 2 * k;
        progress.Update(done);
      }
    }
  }
};


void PairedSendOne(benchmark::State& state, const std::string& name, const StoreSpec& spec,
                   const FloorOpen& open_floor, const Scale& scale) {
  Pair p(spec, open_floor, name);
  p.Queue("q");
  OutgoingMessage m;
  m.body = Body(kBody, 1);
  Side store{[&]() -> int64_t {
    Check(name, p.engine->Send("q", m).status());
    return 1;
  }};
  Side floor{[&]() -> int64_t {
    p.floor->Insert(1, m.body);
    return 1;
  }};
  for (auto _ : state) TakeTurns(store, floor, PairedSeconds(scale), 0, name);
  Report(state, store, floor);
}

void PairedSendBatch(benchmark::State& state, const std::string& name, const StoreSpec& spec,
                     const FloorOpen& open_floor, const Scale& scale) {
  const int64_t n = state.range(0);
  Pair p(spec, open_floor, name);
  p.Queue("q");
  std::vector<OutgoingMessage> batch(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) batch[i].body = Body(kBody, i);
  Side store{[&]() -> int64_t {
    Check(name, p.engine->SendBatch("q", batch).status());
    return n;
  }};
  Side floor{[&]() -> int64_t {
    p.floor->Begin();
    for (const OutgoingMessage& m : batch) p.floor->Insert(1, m.body);
    p.floor->Commit();
    return n;
  }};
  for (auto _ : state) TakeTurns(store, floor, PairedSeconds(scale), 0, name);
  Report(state, store, floor);
}

void PairedCycle(benchmark::State& state, const std::string& name, const StoreSpec& spec,
                 const FloorOpen& open_floor, const Scale& scale) {
  Pair p(spec, open_floor, name);
  p.Queue("q");
  OutgoingMessage m;
  m.body = Body(kBody, 1);
  Side store{[&]() -> int64_t {
    Check(name, p.engine->Send("q", m).status());
    if (p.ReceiveAndComplete(name, "q", 1) != 1) {
      Die(name, Status::Internal("receive returned no message"));
    }
    return 1;
  }};
  Side floor{[&]() -> int64_t {
    p.floor->Insert(1, m.body);
    if (p.FloorClaimAndComplete(1, 1) != 1) {
      Die(name, Status::Internal("the floor's claim returned no message"));
    }
    return 1;
  }};
  for (auto _ : state) TakeTurns(store, floor, PairedSeconds(scale), 0, name);
  Report(state, store, floor);
}

// Round-robin over the queues, `max` at a time, until a whole round takes
// nothing (then the unit answers 0), or `limit` items were taken.
std::function<int64_t()> RoundRobin(int64_t queues, int64_t limit,
                                    std::function<int64_t(int64_t q)> take) {
  struct St {
    int64_t q = 0, empty_in_a_row = 0, taken = 0;
  };
  auto st = std::make_shared<St>();
  return [=]() -> int64_t {
    while (st->taken < limit && st->empty_in_a_row < queues) {
      const int64_t q = st->q;
      st->q = (st->q + 1) % queues;
      const int64_t n = take(q);
      if (n == 0) {
        ++st->empty_in_a_row;
        continue;
      }
      st->empty_in_a_row = 0;
      st->taken += n;
      return n;
    }
    return 0;
  };
}

void PairedDrain(benchmark::State& state, const std::string& name, const StoreSpec& spec,
                 const FloorOpen& open_floor, const Scale&) {
  const int64_t total = state.range(0), queues = state.range(1);
  Pair p(spec, open_floor, name);
  p.Fill(name, total, queues, [](int64_t, int64_t i) { return Body(kBody, i); });
  Side store{RoundRobin(queues, total, [&](int64_t q) {
    return p.ReceiveAndComplete(name, "q" + std::to_string(q), 16);
  })};
  Side floor{RoundRobin(queues, total, [&](int64_t q) { return p.FloorClaimAndComplete(q, 16); })};
  for (auto _ : state) TakeTurns(store, floor, 0, total, name);
  if (store.items != total || floor.items != total) {
    Die(name, Status::Internal("drained " + std::to_string(store.items) + " (store) and " +
                               std::to_string(floor.items) + " (floor) of " +
                               std::to_string(total)));
  }
  Report(state, store, floor);
}

void PairedBigTable(benchmark::State& state, const std::string& name, const StoreSpec& spec,
                    const FloorOpen& open_floor, const Scale&) {
  const int64_t total = state.range(0), queues = state.range(1), taken = state.range(2);
  Pair p(spec, open_floor, name);
  p.Fill(name, total, queues, [&](int64_t q, int64_t i) { return SqliteqBody(q * total + i); });
  Side store{RoundRobin(queues, taken, [&](int64_t q) {
    return p.ReceiveAndComplete(name, "q" + std::to_string(q), 1);
  })};
  Side floor{RoundRobin(queues, taken, [&](int64_t q) { return p.FloorClaimAndComplete(q, 1); })};
  for (auto _ : state) TakeTurns(store, floor, 0, taken, name);
  if (store.items != taken || floor.items != taken) {
    Die(name, Status::Internal("took " + std::to_string(store.items) + " (store) and " +
                               std::to_string(floor.items) + " (floor) of " +
                               std::to_string(taken)));
  }
  Report(state, store, floor);
}

}  // namespace

void RegisterPairedWorkloads(const StoreSpec& spec, const std::string& floor_label,
                             FloorOpen open_floor, const Scale& scale, bool drain,
                             bool big_table) {
  using Fn = void (*)(benchmark::State&, const std::string&, const StoreSpec&, const FloorOpen&,
                      const Scale&);
  auto reg = [&](const std::string& workload, Fn fn) {
    const std::string name = spec.name + "/" + workload;
    auto* b = benchmark::RegisterBenchmark(
        name.c_str(), [fn, name, spec, open_floor, scale, floor_label](benchmark::State& s) {
          fn(s, name, spec, open_floor, scale);
          s.SetLabel(spec.label + "; floor " + floor_label);
        });
    return b->Unit(benchmark::kMillisecond)->Iterations(1);
  };
  reg("paired_send_one", PairedSendOne);
  reg("paired_send_batch", PairedSendBatch)->Arg(100);
  reg("paired_cycle", PairedCycle);
  if (drain) reg("paired_drain", PairedDrain)->Args({scale.drain_total, scale.drain_queues});
  if (big_table) {
    const SqliteqCounts c = SqliteqCountsFor(scale);
    reg("paired_big_table", PairedBigTable)
        ->Args({c.big_table, c.big_table_queues, c.big_table_taken});
  }
}

}  // namespace mqlite::bench
