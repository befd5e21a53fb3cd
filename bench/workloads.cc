// The workloads, written once against the public Engine API and registered
// for every store (SPEC §11). Names are stable: docs/benchmarks.md and the
// report key on them.
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"

namespace mqlite::bench {
namespace {

constexpr size_t kBody = 256;
using Steady = std::chrono::steady_clock;

Engine* OpenEngine(Result<std::unique_ptr<Store>> store, const std::string& what,
                   EngineOptions options, std::unique_ptr<Engine>& out) {
  if (!store) Die(what + ": open store", store.error());
  auto e = Engine::Open(std::move(*store), options);
  if (!e) Die(what + ": open engine", e.error());
  out = std::move(*e);
  return out.get();
}

void CreateQueue(Engine* engine, const std::string& name, QueueConfig c = {}) {
  c.name = name;
  Check("CreateQueue " + name, engine->CreateQueue(c).status());
}

// Sends `n` messages (256 B) in batches of 1,000, with progress.
void Fill(Engine* engine, const std::string& queue, int64_t n, const std::string& what,
          std::optional<std::string> group = std::nullopt) {
  Progress progress(what, n);
  std::vector<OutgoingMessage> batch;
  for (int64_t done = 0; done < n;) {
    const int64_t k = std::min<int64_t>(1'000, n - done);
    batch.assign(static_cast<size_t>(k), OutgoingMessage{});
    for (int64_t i = 0; i < k; ++i) {
      batch[i].body = Body(kBody, done + i);
      batch[i].group_id = group;
    }
    Check("fill " + queue, engine->SendBatch(queue, batch).status());
    done += k;
    progress.Update(done);
  }
}

std::vector<Message> ReceiveOrDie(Engine* engine, const std::string& queue, int max,
                                  int64_t wait_ms = 0) {
  ReceiveOptions o;
  o.max_messages = max;
  o.wait_ms = wait_ms;
  auto r = engine->Receive(queue, o);
  if (!r) Die("Receive " + queue, r.error());
  return std::move(*r);
}

// Completes every message of `got` with one CompleteBatch; returns how many.
int64_t CompleteAll(Engine* engine, const std::string& queue, const std::vector<Message>& got,
                    const std::string& name) {
  if (got.empty()) return 0;
  std::vector<SettleItem> items;
  items.reserve(got.size());
  for (const Message& m : got) items.push_back({m.seq, m.lock_token});
  auto r = engine->CompleteBatch(queue, items);
  if (!r) Die(name, r.error());
  for (const Status& st : *r) Check(name + " complete", st);
  return static_cast<int64_t>(got.size());
}

// A store and an engine on a fresh directory, closed (and the store's
// server-side remains cleaned up) at scope exit.
struct Env {
  std::unique_ptr<Engine> engine;
  std::string dir;
  std::function<void(const std::string&)> cleanup;

  Env(const StoreSpec& spec, const std::string& bench_name, EngineOptions options = {})
      : dir(FreshDir(bench_name)), cleanup(spec.cleanup) {
    OpenEngine(spec.open(dir), bench_name, options, engine);
  }
  ~Env() {
    if (engine) (void)engine->Close();
    engine.reset();
    if (cleanup) cleanup(dir);
  }
  Engine* operator->() { return engine.get(); }

  void Queue(const std::string& name, QueueConfig c = {}) { CreateQueue(engine.get(), name, c); }
  void Fill(const std::string& queue, int64_t n, const std::string& what,
            std::optional<std::string> group = std::nullopt) {
    bench::Fill(engine.get(), queue, n, what, std::move(group));
  }
  std::vector<Message> Receive(const std::string& queue, int max, int64_t wait_ms = 0) {
    return ReceiveOrDie(engine.get(), queue, max, wait_ms);
  }
};

// `n` engines on one shared store (SPEC §9): the first on what spec.open
// makes in a fresh directory, the others each on a handle of its own from
// spec.reopen. Closed, and cleaned up, at scope exit.
struct SharedEnv {
  std::vector<std::unique_ptr<Engine>> engines;
  std::string dir;
  std::function<void(const std::string&)> cleanup;

  SharedEnv(const StoreSpec& spec, const std::string& bench_name, int64_t n,
            EngineOptions options = {})
      : dir(FreshDir(bench_name)), cleanup(spec.cleanup) {
    engines.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      OpenEngine(i == 0 ? spec.open(dir) : spec.reopen(dir),
                 bench_name + " engine " + std::to_string(i), options, engines[i]);
    }
  }
  ~SharedEnv() {
    for (auto& e : engines) (void)e->Close();
    engines.clear();
    if (cleanup) cleanup(dir);
  }
  Engine* operator[](int64_t i) { return engines[static_cast<size_t>(i)].get(); }
};

OutgoingMessage Msg(size_t bytes, int64_t salt) {
  OutgoingMessage m;
  m.body = Body(bytes, salt);
  return m;
}

void SendOne(benchmark::State& state, const std::string& name, const StoreSpec& spec,
             size_t body_bytes) {
  Env env(spec, name);
  env.Queue("q");
  const OutgoingMessage m = Msg(body_bytes, 1);
  TimedLoop(state, 1, [&] { Check(name, env->Send("q", m).status()); });
}

void SendBatch(benchmark::State& state, const std::string& name, const StoreSpec& spec) {
  const int64_t n = state.range(0);
  Env env(spec, name);
  env.Queue("q");
  std::vector<OutgoingMessage> batch;
  for (int64_t i = 0; i < n; ++i) batch.push_back(Msg(kBody, i));
  TimedLoop(state, n, [&] { Check(name, env->SendBatch("q", batch).status()); });
}

void Cycle(benchmark::State& state, const std::string& name, const StoreSpec& spec) {
  Env env(spec, name);
  env.Queue("q");
  const OutgoingMessage m = Msg(kBody, 1);
  TimedLoop(state, 1, [&] {
    Check(name, env->Send("q", m).status());
    std::vector<Message> got = env.Receive("q", 1);
    if (got.size() != 1) Die(name, Status::Internal("receive returned no message"));
    Check(name, env->Complete("q", got[0].seq, got[0].lock_token));
  });
}

void Drain(benchmark::State& state, const std::string& name, const StoreSpec& spec) {
  const int64_t total = state.range(0), queues = state.range(1);
  Env env(spec, name);
  std::vector<std::string> names;
  for (int64_t q = 0; q < queues; ++q) {
    names.push_back("q" + std::to_string(q));
    env.Queue(names.back());
  }
  Progress fill(name + " fill", total);
  for (int64_t q = 0; q < queues; ++q) {
    env.Fill(names[q], total / queues, name + " fill " + names[q]);
    fill.Update((q + 1) * (total / queues));
  }
  Counters counters;
  counters.Start();
  int64_t drained = 0;
  for (auto _ : state) {
    drained = DrainRoundRobin(name, queues, total, [&](int64_t q) -> int64_t {
      return CompleteAll(env.engine.get(), names[q], env.Receive(names[q], 16), name);
    });
  }
  counters.Finish(state, drained);
}

void EndToEnd(benchmark::State& state, const std::string& name, const StoreSpec& spec,
              int producers, int consumers, int64_t per_producer, int group_commit_max) {
  const int64_t total = per_producer * producers;
  EngineOptions options;
  options.group_commit_max = group_commit_max;
  Env env(spec, name, options);
  env.Queue("q");
  Counters counters;
  counters.Start();
  std::atomic<int64_t> consumed{0};
  std::atomic<int64_t> receives{0}, empty_receives{0};
  std::mutex progress_mu;
  for (auto _ : state) {
    Progress progress(name, total);
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        const OutgoingMessage m = Msg(kBody, p);
        for (int64_t i = 0; i < per_producer; ++i) {
          auto r = env->Send("q", m);
          if (!r) Die(name + " send", r.error());
        }
      });
    }
    for (int c = 0; c < consumers; ++c) {
      threads.emplace_back([&] {
        while (consumed.load() < total) {
          std::vector<Message> got = env.Receive("q", 16, 100);
          ++receives;
          if (got.empty()) ++empty_receives;
          for (const Message& m : got) {
            Check(name + " complete", env->Complete("q", m.seq, m.lock_token));
          }
          const int64_t now = consumed.fetch_add(static_cast<int64_t>(got.size())) +
                              static_cast<int64_t>(got.size());
          if (!got.empty()) {
            std::lock_guard<std::mutex> l(progress_mu);
            progress.Update(now);
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  counters.Finish(state, consumed.load());
  // How the consumers fared: messages per Receive, and the share of
  // Receives that came back empty (a long-poll woken for a message another
  // consumer took).
  state.counters["msgs_per_receive"] =
      static_cast<double>(consumed.load()) / static_cast<double>(std::max<int64_t>(1, receives));
  state.counters["empty_receive_share"] =
      static_cast<double>(empty_receives) / static_cast<double>(std::max<int64_t>(1, receives));
}

// The backlog the claim-cost targets divide by (claim_backlog/1000), and
// that claim_blocked/B keeps behind its blocked group.
constexpr int64_t kClaimBaseBacklog = 1'000;

// claim_backlog/N and claim_blocked/B: the time of one Receive(max 1),
// measured alone (manual time); completing the claimed message and refilling
// the backlog are outside the timed window. One ClaimRig is one such queue on
// a store of its own.
class ClaimRig {
 public:
  ClaimRig(const StoreSpec& spec, const std::string& name, int64_t backlog, int64_t blocked)
      : env_(spec, name), name_(name) {
    QueueConfig c;
    c.lock_duration_ms = 3'600'000;  // the blocked head stays locked throughout
    env_.Queue("q", c);
    if (blocked > 0) {
      env_.Fill("q", blocked, name + " blocked group", "blocked");
      std::vector<Message> head = env_.Receive("q", 1);
      if (head.size() != 1 || head[0].group_id != "blocked") {
        Die(name, Status::Internal("could not lock the blocked group's head"));
      }
    }
    env_.Fill("q", backlog, name + " backlog");
    chunk_ = std::min<int64_t>(backlog, 500);
    for (int64_t i = 0; i < chunk_; ++i) refill_.push_back(Msg(kBody, i));
  }

  // One timed claim (its seconds), then its Complete and, once a chunk has
  // been taken, a refill of that chunk, so the backlog stays where it was.
  double ClaimOnce() {
    const auto t0 = Steady::now();
    std::vector<Message> got = env_.Receive("q", 1);
    const double s = std::chrono::duration<double>(Steady::now() - t0).count();
    if (got.size() != 1 || got[0].group_id) {
      Die(name_, Status::Internal("claim did not return one ungrouped message"));
    }
    Check(name_, env_->Complete("q", got[0].seq, got[0].lock_token));
    if (++since_refill_ == chunk_) {
      Check(name_ + " refill", env_->SendBatch("q", refill_).status());
      since_refill_ = 0;
    }
    return s;
  }

 private:
  Env env_;
  std::string name_;
  int64_t chunk_ = 0;
  std::vector<OutgoingMessage> refill_;
  int64_t since_refill_ = 0;
};

void Claim(benchmark::State& state, const std::string& name, const StoreSpec& spec, int64_t backlog, int64_t blocked) {
  ClaimRig rig(spec, name, backlog, blocked);
  Counters counters;
  counters.Start();
  double claim_s = 0;
  for (auto _ : state) {
    const double s = rig.ClaimOnce();
    state.SetIterationTime(s);
    claim_s += s;
  }
  counters.Finish(state, state.iterations());
  state.counters["claim_us"] = claim_s * 1e6 / static_cast<double>(state.iterations());
}

// claim_paired/N and claim_blocked_paired/B: the claim pins measured the way
// the floor targets are (paired.cc). claim_backlog/1000's queue and
// claim_backlog/N's (or claim_blocked/B's) each on a store of its own, taking
// turns of about 25 ms in one benchmark until each side has run `seconds`:
// an fsync-bound claim (PostgreSQL at synchronous_commit=on) rides the
// disk's drift, which two benchmarks a minute apart see differently.
// claim_us is the big side's mean claim, base_claim_us the 1,000 side's;
// ratio = claim_us ÷ base_claim_us.
void PairedClaim(benchmark::State& state, const std::string& name, const StoreSpec& spec,
                 int64_t backlog, int64_t blocked, double seconds) {
  ClaimRig base(spec, name + " base", kClaimBaseBacklog, 0);
  ClaimRig big(spec, name, backlog, blocked);
  double base_s = 0, big_s = 0;
  Side base_side{[&]() -> int64_t {
    base_s += base.ClaimOnce();
    return 1;
  }};
  Side big_side{[&]() -> int64_t {
    big_s += big.ClaimOnce();
    return 1;
  }};
  for (auto _ : state) {
    TakeTurns(big_side, base_side, seconds, 0, name);
    state.SetIterationTime(big_s);
  }
  auto mean_us = [](double s, int64_t n) {
    return s * 1e6 / static_cast<double>(std::max<int64_t>(1, n));
  };
  const double big_us = mean_us(big_s, big_side.items);
  const double base_us = mean_us(base_s, base_side.items);
  state.counters["claim_us"] = big_us;
  state.counters["base_claim_us"] = base_us;
  state.counters["ratio"] = base_us > 0 ? big_us / base_us : 0.0;
  state.counters["claims"] = static_cast<double>(big_side.items);
  state.counters["base_claims"] = static_cast<double>(base_side.items);
  state.counters["items_per_second"] =
      big_s > 0 ? static_cast<double>(big_side.items) / big_s : 0.0;
}

void OutboxTx(benchmark::State& state, const std::string& name, const StoreSpec& spec) {
  Env env(spec, name);
  env.Queue("q");
  if (spec.prepare_business) {
    Check("prepare business table", env->Tx([&](TxContext& tx) { return spec.prepare_business(tx); }));
  }
  const OutgoingMessage m = Msg(kBody, 1);
  int64_t i = 0;
  TimedLoop(state, 1, [&] {
    Check(name, env->Tx([&](TxContext& tx) -> Status {
      if (spec.insert_business) MQLITE_RETURN_IF_ERROR(spec.insert_business(tx, i));
      return tx.Send("q", m).status();
    }));
    ++i;
  });
}

void RenewBatch(benchmark::State& state, const std::string& name, const StoreSpec& spec) {
  const int64_t n = state.range(0);
  Env env(spec, name);
  QueueConfig c;
  c.lock_duration_ms = 3'600'000;
  env.Queue("q", c);
  env.Fill("q", n, name + " fill");
  std::vector<SettleItem> items;
  while (static_cast<int64_t>(items.size()) < n) {
    for (const Message& m : env.Receive("q", 256)) items.push_back({m.seq, m.lock_token});
  }
  TimedLoop(state, n, [&] {
    auto r = env->RenewBatch("q", items);
    if (!r) Die(name, r.error());
    for (const RenewOutcome& o : *r) Check(name, o.status);
  });
}

// One 256 B message per thread of a shared workload.
std::vector<OutgoingMessage> MessagesFor(int64_t threads) {
  std::vector<OutgoingMessage> out;
  for (int64_t i = 0; i < threads; ++i) out.push_back(Msg(kBody, i));
  return out;
}

// shared_send/N: N engines, one thread each, sending one message per call
// into one queue for scale.shared_seconds.
void SharedSend(benchmark::State& state, const std::string& name, const StoreSpec& spec,
                double seconds) {
  const int64_t n = state.range(0);
  SharedEnv env(spec, name, n);
  CreateQueue(env[0], "q");
  const std::vector<OutgoingMessage> msgs = MessagesFor(n);
  RunFor(state, n, seconds, [&](int64_t i) -> int64_t {
    Check(name, env[i]->Send("q", msgs[static_cast<size_t>(i)]).status());
    return 1;
  });
}

// shared_cycle/N: N engines, one thread each, each doing the cycle (Send,
// Receive max 1, Complete) on one shared queue for scale.shared_seconds. A
// thread may find the message it just sent taken by another engine; it then
// takes whichever comes next.
void SharedCycle(benchmark::State& state, const std::string& name, const StoreSpec& spec,
                 double seconds) {
  const int64_t n = state.range(0);
  SharedEnv env(spec, name, n);
  CreateQueue(env[0], "q");
  const std::vector<OutgoingMessage> msgs = MessagesFor(n);
  RunFor(state, n, seconds, [&](int64_t i) -> int64_t {
    Check(name, env[i]->Send("q", msgs[static_cast<size_t>(i)]).status());
    std::vector<Message> got;
    while (got.empty()) got = ReceiveOrDie(env[i], "q", 1, 1'000);
    Check(name, env[i]->Complete("q", got[0].seq, got[0].lock_token));
    return 1;
  });
}

// shared_drain/<total>/<queues>/N: drain's backlog (filled untimed), drained
// by N engines at once, one thread each, each starting its round-robin at a
// different queue.
void SharedDrain(benchmark::State& state, const std::string& name, const StoreSpec& spec) {
  const int64_t total = state.range(0), queues = state.range(1), n = state.range(2);
  SharedEnv env(spec, name, n);
  std::vector<std::string> names;
  Progress fill(name + " fill", total);
  for (int64_t q = 0; q < queues; ++q) {
    names.push_back("q" + std::to_string(q));
    CreateQueue(env[0], names.back());
    Fill(env[0], names.back(), total / queues, name + " fill " + names.back());
    fill.Update((q + 1) * (total / queues));
  }
  DrainTogether(state, name, n, queues, total / queues * queues,
                [&](int64_t i, int64_t q) -> int64_t {
                  const std::string& queue = names[static_cast<size_t>(q)];
                  return CompleteAll(env[i], queue, ReceiveOrDie(env[i], queue, 16), name);
                });
}

// shared_e2e/N: N engines, each with 2 producer threads sending one message
// per call and 2 consumer threads receiving up to 16 (long-poll) and
// settling each batch with one CompleteBatch, all on one queue, for
// scale.shared_seconds; items = messages completed. The shape a service
// gives a shared store: several engines, several callers in each, so group
// commit and batch claims have work to merge.
void SharedEndToEnd(benchmark::State& state, const std::string& name, const StoreSpec& spec,
                    double seconds) {
  const int64_t n = state.range(0);
  SharedEnv env(spec, name, n);
  CreateQueue(env[0], "q");
  const std::vector<OutgoingMessage> msgs = MessagesFor(4 * n);
  std::atomic<int64_t> receives{0};
  const int64_t completed = RunFor(state, 4 * n, seconds, [&](int64_t t) -> int64_t {
    Engine* e = env[t / 4];
    if (t % 4 < 2) {  // producer
      Check(name + " send", e->Send("q", msgs[static_cast<size_t>(t)]).status());
      return 0;
    }
    receives.fetch_add(1, std::memory_order_relaxed);
    return CompleteAll(e, "q", ReceiveOrDie(e, "q", 16, 100), name);
  });
  state.counters["msgs_per_receive"] =
      static_cast<double>(completed) / static_cast<double>(std::max<int64_t>(1, receives));
}

// sqliteq's workloads (bench.h), on an engine opened as a user would:
// default options, background maintenance on. Fixed counts, one timed run.
void SqliteqCycle(benchmark::State& state, const std::string& name, const StoreSpec& spec) {
  const int64_t n = state.range(0);
  Env env(spec, name);
  env.Queue("emails");
  Counters counters;
  counters.Start();
  for (auto _ : state) {
    for (int64_t i = 0; i < n; ++i) {
      Check(name, env->Send("emails", OutgoingMessage{.body = SqliteqBody(i)}).status());
      std::vector<Message> got = env.Receive("emails", 1);
      if (got.size() != 1) Die(name, Status::Internal("receive returned no message"));
      Check(name, env->Complete("emails", got[0].seq, got[0].lock_token));
    }
  }
  counters.Finish(state, n);
}

void SqliteqSend(benchmark::State& state, const std::string& name, const StoreSpec& spec) {
  const int64_t n = state.range(0);
  Env env(spec, name);
  env.Queue("emails");
  Counters counters;
  counters.Start();
  for (auto _ : state) {
    for (int64_t i = 0; i < n; ++i) {
      Check(name, env->Send("emails", OutgoingMessage{.body = SqliteqBody(i)}).status());
    }
  }
  counters.Finish(state, n);
}

void SqliteqBigTable(benchmark::State& state, const std::string& name, const StoreSpec& spec) {
  const int64_t total = state.range(0), queues = state.range(1), taken = state.range(2);
  Env env(spec, name);
  std::vector<std::string> names;
  Progress fill(name + " fill", total);
  for (int64_t q = 0; q < queues; ++q) {
    names.push_back("q" + std::to_string(q));
    env.Queue(names.back());
    std::vector<OutgoingMessage> batch;
    for (int64_t i = 0; i < total / queues; ++i) {
      batch.push_back(OutgoingMessage{.body = SqliteqBody(q * total + i)});
      if (batch.size() == 1'000 || i + 1 == total / queues) {
        Check(name + " fill", env->SendBatch(names.back(), batch).status());
        batch.clear();
      }
    }
    fill.Update((q + 1) * (total / queues));
  }
  Counters counters;
  counters.Start();
  for (auto _ : state) {
    for (int64_t i = 0; i < taken; ++i) {
      const std::string& queue = names[static_cast<size_t>(i % queues)];
      std::vector<Message> got = env.Receive(queue, 1);
      if (got.size() != 1) Die(name, Status::Internal("receive returned no message"));
      Check(name, env->Complete(queue, got[0].seq, got[0].lock_token));
    }
  }
  counters.Finish(state, taken);
}

void SqliteqBatch(benchmark::State& state, const std::string& name, const StoreSpec& spec) {
  const int64_t batches = state.range(0), size = state.range(1);
  Env env(spec, name);
  env.Queue("emails");
  Counters counters;
  counters.Start();
  for (auto _ : state) {
    for (int64_t b = 0; b < batches; ++b) {
      std::vector<OutgoingMessage> batch;
      for (int64_t i = 0; i < size; ++i) batch.push_back({.body = SqliteqBody(b * size + i)});
      Check(name, env->SendBatch("emails", batch).status());
    }
  }
  counters.Finish(state, batches * size);
}

}  // namespace

void RegisterSqliteqWorkloads(
    const std::string& prefix, const Scale& scale,
    const std::function<benchmark::internal::Benchmark*(
        const std::string&, std::function<void(benchmark::State&, const std::string&)>)>& reg,
    const SqliteqWorkloadFns& fns) {
  const SqliteqCounts c = SqliteqCountsFor(scale);
  reg(prefix + "sqliteq_cycle", fns.cycle)->Arg(c.cycle)->Iterations(1);
  reg(prefix + "sqliteq_send", fns.send)->Arg(c.send)->Iterations(1);
  reg(prefix + "sqliteq_big_table", fns.big_table)
      ->Args({c.big_table, c.big_table_queues, c.big_table_taken})
      ->Iterations(1);
  reg(prefix + "sqliteq_batch", fns.batch)->Args({c.batches, c.batch})->Iterations(1);
}

void RegisterEngineWorkloads(const StoreSpec& spec, const Scale& scale, bool core_only) {
  const std::string p = spec.name + "/";
  // Wall-clock rates (real time) everywhere; the claim workloads time each
  // claim themselves (manual time).
  auto reg = [&](const std::string& name, auto fn, bool manual_time = false) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), [fn, name, label = spec.label](benchmark::State& s) {
      fn(s, name);
      s.SetLabel(label);
    });
    b->Unit(benchmark::kMicrosecond);
    if (manual_time) {
      b->UseManualTime();
    } else {
      b->UseRealTime();
    }
    return b;
  };
  reg(p + "send_one", [spec](benchmark::State& s, const std::string& n_) { SendOne(s, n_, spec, kBody); })
      ->MinTime(scale.min_time_s);
  reg(p + "send_batch", [spec](benchmark::State& s, const std::string& n_) { SendBatch(s, n_, spec); })
      ->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->MinTime(scale.min_time_s);
  reg(p + "cycle", [spec](benchmark::State& s, const std::string& n_) { Cycle(s, n_, spec); })->MinTime(scale.min_time_s);
  // At durability=full every commit waits for the disk: a quarter of the
  // messages keeps the ungrouped run under a minute.
  const int64_t e2e_n = core_only ? scale.e2e_per_producer / 4 : scale.e2e_per_producer;
  reg(p + "e2e/4x4", [spec, e2e_n](benchmark::State& s, const std::string& n_) {
    EndToEnd(s, n_, spec, 4, 4, e2e_n, EngineOptions{}.group_commit_max);
  })->Iterations(1);
  // The same with group commit off: what coalescing buys (SPEC §9).
  reg(p + "e2e_nogroup/4x4", [spec, e2e_n](benchmark::State& s, const std::string& n_) {
    EndToEnd(s, n_, spec, 4, 4, e2e_n, 1);
  })->Iterations(1);
  reg(p + "outbox_tx", [spec](benchmark::State& s, const std::string& n_) { OutboxTx(s, n_, spec); })
      ->MinTime(scale.min_time_s);
  if (core_only) return;
  reg(p + "drain", [spec](benchmark::State& s, const std::string& n_) { Drain(s, n_, spec); })
      ->Args({scale.drain_total, scale.drain_queues})->Iterations(1);
  for (int64_t backlog : scale.claim_backlogs) {
    reg(p + "claim_backlog/" + std::to_string(backlog),
        [spec, backlog](benchmark::State& s, const std::string& n_) { Claim(s, n_, spec, backlog, 0); },
        true)
        ->Iterations(scale.claim_iterations);
  }
  reg(p + "claim_blocked/" + std::to_string(scale.blocked),
      [spec, blocked = scale.blocked](benchmark::State& s, const std::string& n_) { Claim(s, n_, spec, kClaimBaseBacklog, blocked); },
      true)
      ->Iterations(scale.claim_iterations);
  // The same pins, each against claim_backlog/1000 in turns (PairedClaim),
  // as long a side as the paired floor workloads run.
  const double pair_s = PairedSeconds(scale);
  for (int64_t backlog : scale.claim_backlogs) {
    if (backlog <= kClaimBaseBacklog) continue;
    reg(p + "claim_paired/" + std::to_string(backlog),
        [spec, backlog, pair_s](benchmark::State& s, const std::string& n_) {
          PairedClaim(s, n_, spec, backlog, 0, pair_s);
        },
        true)
        ->Iterations(1);
  }
  reg(p + "claim_blocked_paired/" + std::to_string(scale.blocked),
      [spec, blocked = scale.blocked, pair_s](benchmark::State& s, const std::string& n_) {
        PairedClaim(s, n_, spec, kClaimBaseBacklog, blocked, pair_s);
      },
      true)
      ->Iterations(1);
  reg(p + "renew_batch", [spec](benchmark::State& s, const std::string& n_) { RenewBatch(s, n_, spec); })
      ->Arg(512)->MinTime(scale.min_time_s);
  for (size_t bytes : {64, 256, 1024, 4096, 16384}) {
    reg(p + "send_body/" + std::to_string(bytes),
        [spec, bytes](benchmark::State& s, const std::string& n_) { SendOne(s, n_, spec, bytes); })
        ->MinTime(scale.min_time_s);
  }
  auto bind = [spec](void (*fn)(benchmark::State&, const std::string&, const StoreSpec&)) {
    return [spec, fn](benchmark::State& s, const std::string& n_) { fn(s, n_, spec); };
  };
  RegisterSqliteqWorkloads(
      p, scale,
      [&](const std::string& name, std::function<void(benchmark::State&, const std::string&)> fn) {
        return reg(name, fn);
      },
      SqliteqWorkloadFns{bind(SqliteqCycle), bind(SqliteqSend), bind(SqliteqBigTable),
                         bind(SqliteqBatch)});
}

void RegisterSharedWorkloads(const StoreSpec& spec, const Scale& scale, bool core_only) {
  const std::string p = spec.name + "/";
  auto reg = [&](const std::string& name, auto fn) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), [fn, name, label = spec.label](benchmark::State& s) {
      fn(s, name);
      s.SetLabel(label);
    });
    return b->Unit(benchmark::kMicrosecond)->UseManualTime()->Iterations(1);
  };
  const double secs = scale.shared_seconds;
  for (int64_t n : scale.shared_engines) {
    reg(p + "shared_send", [spec, secs](benchmark::State& s, const std::string& n_) {
      SharedSend(s, n_, spec, secs);
    })->Arg(n);
    reg(p + "shared_cycle", [spec, secs](benchmark::State& s, const std::string& n_) {
      SharedCycle(s, n_, spec, secs);
    })->Arg(n);
    reg(p + "shared_e2e", [spec, secs](benchmark::State& s, const std::string& n_) {
      SharedEndToEnd(s, n_, spec, secs);
    })->Arg(n);
    if (core_only) continue;
    reg(p + "shared_drain",
        [spec](benchmark::State& s, const std::string& n_) { SharedDrain(s, n_, spec); })
        ->Args({scale.drain_total, scale.drain_queues, n});
  }
}

}  // namespace mqlite::bench
