#include <lmdb.h>
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "bench.h"
#include "probe.h"   // stores/lmdb/src: the store's environment flags
#include "schema.h"  // stores/sqlite/src: the store's synchronous level

namespace mqlite::bench {

Scale FullScale() {
  return Scale{"full", 0.5, 100'000, 10, 10'000, 2'000, {1, 1'000, 100'000, 1'000'000}, 20'000,
               {1, 4, 8}, 3.0, 5'000, 1};
}

Scale SmokeScale() {
  return Scale{"smoke", 0.01, 2'000, 10, 200, 50, {1, 1'000, 10'000}, 2'000, {1, 4}, 0.2, 200, 100};
}

namespace {
std::string& Root() {
  static std::string root;
  return root;
}
}  // namespace

const std::string& DataRoot() { return Root(); }
void SetDataRoot(std::string root) { Root() = std::move(root); }

std::string FreshDir(const std::string& bench_name) {
  std::string leaf = bench_name;
  for (char& c : leaf) {
    if (c == '/' || c == ':') c = '_';
  }
  std::filesystem::path dir = std::filesystem::path(DataRoot()) / leaf;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) Die("creating " + dir.string(), Status::Internal(ec.message()));
  return dir.string();
}

Counters::Counters() {
  // Give memory freed by earlier workloads back to the OS first, so the
  // high-water mark is this workload's, not what malloc kept cached.
  malloc_trim(0);
  ResetPeakRss();
}

void Counters::Start() { start_ = ReadIo(); }

void Counters::Finish(benchmark::State& state, int64_t items) {
  const IoCounters end = ReadIo();
  const double n = items > 0 ? static_cast<double>(items) : 1.0;
  state.SetItemsProcessed(items);
  state.counters["bytes_written_per_item"] = static_cast<double>(end.wchar - start_.wchar) / n;
  state.counters["disk_bytes_per_item"] =
      static_cast<double>(end.write_bytes - start_.write_bytes) / n;
  state.counters["peak_rss_mb"] = PeakRssMB();
}

void Die(const std::string& what, const Status& s) {
  std::cerr << "mqlite-bench: " << what << ": " << s.ToString() << std::endl;
  std::exit(2);
}

void Check(const std::string& what, const Status& s) {
  if (!s.ok()) Die(what, s);
}

Progress::Progress(std::string what, int64_t total) : what_(std::move(what)), total_(total) {}

void Progress::Update(int64_t done) {
  if (total_ < 10'000) return;  // short steps need no progress line
  while (next_pct_ <= 100 && done * 100 >= total_ * next_pct_) {
    std::fprintf(stderr, "  %s: %d%% (%lld/%lld)\n", what_.c_str(), next_pct_,
                 static_cast<long long>(done), static_cast<long long>(total_));
    next_pct_ += 10;
  }
}

int64_t DrainRoundRobin(const std::string& name, int64_t queues, int64_t total,
                        const std::function<int64_t(int64_t q)>& take) {
  Progress progress(name, total);
  int64_t drained = 0;
  for (bool any = true; any;) {
    any = false;
    for (int64_t q = 0; q < queues; ++q) {
      const int64_t n = take(q);
      if (n == 0) continue;
      any = true;
      drained += n;
      progress.Update(drained);
    }
  }
  if (drained != total) {
    Die(name, Status::Internal("drained " + std::to_string(drained) + " of " +
                               std::to_string(total) + " messages"));
  }
  return drained;
}

double RunTogether(int64_t n, double seconds,
                   const std::function<void(int64_t i, SteadyTime deadline)>& work) {
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  SteadyTime start, deadline;
  std::vector<std::thread> threads;
  for (int64_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      SteadyTime d;
      {
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return go; });
        d = deadline;
      }
      work(i, d);
    });
  }
  {
    std::lock_guard<std::mutex> l(mu);
    start = std::chrono::steady_clock::now();
    deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(seconds));
    go = true;
  }
  cv.notify_all();
  for (std::thread& t : threads) t.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int64_t RunFor(benchmark::State& state, int64_t n, double seconds,
               const std::function<int64_t(int64_t i)>& op) {
  std::atomic<int64_t> items{0};
  Counters counters;
  counters.Start();
  for (auto _ : state) {
    state.SetIterationTime(RunTogether(n, seconds, [&](int64_t i, SteadyTime deadline) {
      while (std::chrono::steady_clock::now() < deadline) {
        items.fetch_add(op(i), std::memory_order_relaxed);
      }
    }));
  }
  counters.Finish(state, items.load());
  return items.load();
}

void DrainTogether(benchmark::State& state, const std::string& name, int64_t n, int64_t queues,
                   int64_t expected, const std::function<int64_t(int64_t i, int64_t q)>& take) {
  std::atomic<int64_t> drained{0};
  Counters counters;
  counters.Start();
  for (auto _ : state) {
    state.SetIterationTime(RunTogether(n, 0, [&](int64_t i, SteadyTime) {
      for (bool any = true; any;) {
        any = false;
        for (int64_t k = 0; k < queues; ++k) {
          const int64_t got = take(i, (i + k) % queues);
          if (got == 0) continue;
          any = true;
          drained.fetch_add(got, std::memory_order_relaxed);
        }
      }
    }));
  }
  if (drained.load() != expected) {
    Die(name, Status::Internal("drained " + std::to_string(drained.load()) + " of " +
                               std::to_string(expected) + " messages"));
  }
  counters.Finish(state, drained.load());
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t GetBigEndian(const void* in) {
  const auto* p = static_cast<const unsigned char*>(in);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

const char* SqliteSynchronous(Durability d) { return internal::SynchronousLevel(d); }

unsigned LmdbEnvFlags(Durability d) { return lmdb_internal::EnvFlagsFor(d); }

std::string SqliteLabel(Durability d) {
  return "durability=" + std::string(DurabilityName(d)) + " synchronous=" + SqliteSynchronous(d) +
         " journal=WAL";
}

std::string LmdbLabel(Durability d, const std::string& map) {
  const unsigned f = LmdbEnvFlags(d);
  return "durability=" + std::string(DurabilityName(d)) + " flags=MDB_NOTLS" +
         ((f & MDB_NOMETASYNC) ? "|MDB_NOMETASYNC" : "") + ((f & MDB_NOSYNC) ? "|MDB_NOSYNC" : "") +
         " map=" + map;
}

std::string SqliteqBody(int64_t i) {
  return R"({"to":"user@example.com","subject":"Hello","n":)" + std::to_string(i) + "}";
}

SqliteqCounts SqliteqCountsFor(const Scale& scale) {
  const int64_t d = scale.sqliteq_divisor;
  return SqliteqCounts{10'000 / d, 50'000 / d, 100'000 / d, 10, 10'000 / d, 100 / d, 100};
}

std::string Body(size_t bytes, int64_t salt) {
  std::string b(bytes, 'x');
  uint64_t x = static_cast<uint64_t>(salt) * 0x9E3779B97F4A7C15ULL + 1;
  for (char& c : b) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>('a' + x % 26);
  }
  return b;
}

}  // namespace mqlite::bench
