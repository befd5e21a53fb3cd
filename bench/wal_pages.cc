// mqlite-wal-pages: which B-trees a drain's commits write, on the SQLite store.
//
// Fills `--queues` queues with `--per-queue` messages each (256-byte bodies,
// batches of 1,000), then drains them round-robin — Receive of `--batch`,
// then one CompleteBatch — the shape of the bench's drain workload. After
// every commit it reads the frames the WAL gained (a frame is one B-tree page
// written; at synchronous=NORMAL that is what a commit costs) and, for the
// calls in the middle fifth of the drain, names each frame's page by its
// owner in `dbstat` right after that commit. Prints pages per call by B-tree,
// as a Markdown table. docs/sqlite-store.md quotes its output.
//
//   mqlite-wal-pages --dir=DIR [--queues=10] [--per-queue=10000] [--batch=16]
//
// DIR must not exist or be empty; the database is left there.
#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/sqlite.h"

namespace {

using namespace mqlite;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "mqlite-wal-pages: %s\n", what.c_str());
  std::exit(2);
}

uint32_t Be32(const unsigned char* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

// Follows the WAL file: Next() returns the page numbers of the frames
// appended since the last call. A checkpoint that restarts the WAL changes
// the header's salts; frames are then read from the start again.
class WalReader {
 public:
  explicit WalReader(std::string path) : path_(std::move(path)) {}

  std::vector<uint32_t> Next() {
    std::vector<uint32_t> pages;
    FILE* f = std::fopen(path_.c_str(), "rb");
    if (f == nullptr) return pages;  // no WAL yet
    unsigned char h[32];
    if (std::fread(h, 1, sizeof h, f) == sizeof h) {
      const uint32_t page_size = Be32(h + 8), s0 = Be32(h + 16), s1 = Be32(h + 20);
      if (s0 != salt_[0] || s1 != salt_[1]) {
        salt_[0] = s0;
        salt_[1] = s1;
        offset_ = 32;
      }
      for (;;) {
        unsigned char fh[24];
        if (std::fseek(f, offset_, SEEK_SET) != 0 || std::fread(fh, 1, sizeof fh, f) != sizeof fh) {
          break;
        }
        if (Be32(fh + 8) != s0 || Be32(fh + 12) != s1) break;  // a stale frame
        pages.push_back(Be32(fh));
        offset_ += 24 + static_cast<long>(page_size);
      }
    }
    std::fclose(f);
    return pages;
  }

 private:
  std::string path_;
  long offset_ = 32;
  uint32_t salt_[2] = {0, 0};
};

// Names pages by their owner: "<btree>" for a leaf, "<btree> (interior)",
// page 1 (the file header: free-page count, change counter), "pointer map"
// (auto_vacuum), or "free / freed" for a page no B-tree owns after the commit.
class PageOwners {
 public:
  explicit PageOwners(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      Fail("open " + path + " read-only: " + sqlite3_errmsg(db_));
    }
    // A pointer-map page every usable/5 + 1 pages from page 2 (no reserved
    // bytes in mqlite's files, so usable = the page size).
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, "PRAGMA page_size", -1, &st, nullptr) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
      Fail(std::string("PRAGMA page_size: ") + sqlite3_errmsg(db_));
    }
    ptrmap_stride_ = static_cast<uint32_t>(sqlite3_column_int(st, 0)) / 5 + 1;
    sqlite3_finalize(st);
  }
  ~PageOwners() { sqlite3_close(db_); }

  std::map<std::string, long> Attribute(const std::vector<uint32_t>& pages) {
    std::map<uint32_t, std::string> owner;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, "SELECT pageno, name, pagetype FROM dbstat", -1, &st, nullptr) !=
        SQLITE_OK) {
      Fail(std::string("dbstat (SQLite built without SQLITE_ENABLE_DBSTAT_VTAB?): ") +
           sqlite3_errmsg(db_));
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
      const std::string name = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
      const std::string type = reinterpret_cast<const char*>(sqlite3_column_text(st, 2));
      owner[static_cast<uint32_t>(sqlite3_column_int64(st, 0))] =
          type == "leaf" ? name : name + " (interior)";
    }
    sqlite3_finalize(st);
    std::map<std::string, long> out;
    for (uint32_t p : pages) {
      auto it = owner.find(p);
      if (p == 1) {
        ++out["page 1 (file header)"];  // also sqlite_schema's root
      } else if (it != owner.end()) {
        ++out[it->second];
      } else if (p >= 2 && (p - 2) % ptrmap_stride_ == 0) {
        ++out["pointer map"];
      } else {
        ++out["free / freed"];
      }
    }
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
  uint32_t ptrmap_stride_ = 0;
};

long ParseCount(const char* arg, const char* flag, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(arg, &end, 10);
  if (*arg == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi) {
    Fail(std::string(flag) + " wants a whole number in [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "], got '" + arg + "'");
  }
  return v;
}

template <typename T>
T OrDie(Result<T> r, const std::string& what) {
  if (!r) Fail(what + ": " + r.error().ToString());
  return std::move(*r);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  long queues = 10, per_queue = 10'000, batch = 16;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const std::string prefix = std::string(flag) + "=";
      return a.rfind(prefix, 0) == 0 ? argv[i] + prefix.size() : nullptr;
    };
    if (const char* v = value("--dir")) {
      dir = v;
    } else if (const char* v = value("--queues")) {
      queues = ParseCount(v, "--queues", 1, 1'000);
    } else if (const char* v = value("--per-queue")) {
      per_queue = ParseCount(v, "--per-queue", 1, 10'000'000);
    } else if (const char* v = value("--batch")) {
      batch = ParseCount(v, "--batch", 1, 256);
    } else {
      Fail("unknown argument '" + a +
           "'; usage: mqlite-wal-pages --dir=DIR [--queues=N] [--per-queue=N] [--batch=N]");
    }
  }
  if (dir.empty()) Fail("--dir=DIR is required (a new or empty directory)");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_empty(dir, ec)) Fail("--dir '" + dir + "' must be a new or empty directory");
  const std::string path = dir + "/queue.db";

  EngineOptions options;
  options.background_maintenance = false;  // only the drain's own commits
  auto engine = OrDie(Engine::Open(OrDie(OpenSqliteStore({.path = path}), "open " + path), options),
                      "open engine");
  WalReader wal(path + "-wal");
  std::vector<std::string> names;
  for (long q = 0; q < queues; ++q) {
    names.push_back("q" + std::to_string(q));
    QueueConfig c;
    c.name = names.back();
    OrDie(engine->CreateQueue(c), "CreateQueue " + c.name);
  }
  std::string body(256, 'x');
  for (long q = 0; q < queues; ++q) {
    for (long done = 0; done < per_queue;) {
      const long k = std::min(1'000L, per_queue - done);
      std::vector<OutgoingMessage> msgs(static_cast<size_t>(k));
      for (long i = 0; i < k; ++i) {
        msgs[i].body = body;
        std::snprintf(msgs[i].body.data(), 24, "%ld-%ld", q, done + i);
      }
      OrDie(engine->SendBatch(names[q], msgs), "fill " + names[q]);
      done += k;
    }
    std::fprintf(stderr, "  filled %s (%ld of %ld queues)\n", names[q].c_str(), q + 1, queues);
  }
  (void)wal.Next();

  PageOwners owners(path);
  const long total = queues * per_queue, lo = total * 2 / 5, hi = total * 3 / 5;
  struct Tally {
    long calls = 0, frames = 0;
    std::map<std::string, long> by_tree;
  } tally[2];  // Receive, CompleteBatch
  long drained = 0, next_pct = 10;
  for (bool any = true; any;) {
    any = false;
    for (const std::string& q : names) {
      ReceiveOptions ro;
      ro.max_messages = static_cast<int>(batch);
      std::vector<Message> got = OrDie(engine->Receive(q, ro), "Receive " + q);
      const bool sample = drained >= lo && drained < hi && !got.empty();
      std::vector<uint32_t> pages = wal.Next();
      if (got.empty()) continue;
      any = true;
      auto count = [&](Tally& t, const std::vector<uint32_t>& p) {
        ++t.calls;
        t.frames += static_cast<long>(p.size());
        for (auto& [tree, n] : owners.Attribute(p)) t.by_tree[tree] += n;
      };
      if (sample) count(tally[0], pages);
      std::vector<SettleItem> items;
      for (const Message& m : got) items.push_back({m.seq, m.lock_token});
      for (const Status& s : OrDie(engine->CompleteBatch(q, items), "CompleteBatch " + q)) {
        if (!s.ok()) Fail("CompleteBatch " + q + ": " + s.ToString());
      }
      pages = wal.Next();
      if (sample) count(tally[1], pages);
      drained += static_cast<long>(got.size());
      while (next_pct <= 100 && drained * 100 >= total * next_pct) {
        std::fprintf(stderr, "  drained %ld%% (%ld/%ld)\n", next_pct, drained, total);
        next_pct += 10;
      }
    }
  }
  if (Status s = engine->Close(); !s.ok()) Fail("close: " + s.ToString());
  if (drained != total) Fail("drained " + std::to_string(drained) + " of " + std::to_string(total));
  if (tally[0].calls == 0 || tally[1].calls == 0) Fail("no call fell in the sampled window");

  std::printf("Pages written per call, by B-tree, over the %ld Receive and %ld CompleteBatch calls "
              "in the middle fifth of a round-robin drain of %ld queues x %ld messages, %ld per "
              "batch:\n\n",
              tally[0].calls, tally[1].calls, queues, per_queue, batch);
  std::map<std::string, bool> trees;
  for (const Tally& t : tally) {
    for (auto& [tree, n] : t.by_tree) trees[tree] = true;
  }
  std::printf("| B-tree | Receive | CompleteBatch |\n|---|---|---|\n");
  for (auto& [tree, unused] : trees) {
    std::printf("| %s |", tree.c_str());
    for (const Tally& t : tally) {
      auto it = t.by_tree.find(tree);
      std::printf(" %.2f |", it == t.by_tree.end() ? 0.0 : double(it->second) / double(t.calls));
    }
    std::printf("\n");
  }
  std::printf("| **all** | %.2f | %.2f |\n", double(tally[0].frames) / double(tally[0].calls),
              double(tally[1].frames) / double(tally[1].calls));
  return 0;
}
