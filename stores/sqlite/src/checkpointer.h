// WAL checkpoints off the writer's thread (docs/sqlite-store.md, "Checkpoints").
//
// In WAL mode SQLite's automatic checkpoint runs inside the COMMIT that took
// the WAL past 1,000 pages, on the writer: at synchronous=NORMAL it syncs the
// WAL, copies its pages into the database and syncs the database, while every
// writer waits. Those two syncs are NORMAL's only syncs, and on the test
// machine they were about half of a single-threaded send/receive/complete
// cycle's time (the raw-SQL floor: 5.7k cycles/s at NORMAL, 11.6k at OFF).
//
// This class replaces that automatic checkpoint with two kinds:
//   * background: a thread with its own connection runs PASSIVE checkpoints
//     (they never block the writer, which keeps appending meanwhile) whenever
//     `background_frames` pages have been appended since its last one;
//   * inline: a PASSIVE checkpoint on the writer, right after the COMMIT that
//     took the WAL to `inline_frames` pages. SQLite rewinds the WAL (reuses
//     it from the start) only when a write transaction begins after a
//     checkpoint copied every page, which the background thread never
//     manages while the writer keeps committing; this one does (the writer
//     is the only writer). The background passes have copied and synced
//     most of it already. If the background thread holds the checkpoint lock
//     the inline one waits for the next commit, up to twice `inline_frames`,
//     where the writer waits for the background pass to end: the WAL never
//     exceeds 2 × `inline_frames` pages plus one transaction.
//   * low on space: while the WAL's file system has less than `spare_bytes`
//     free (checked with statvfs every `background_frames` pages appended),
//     the WAL is rewound as SQLite would: inline at `kAutomaticFrames` pages,
//     after any background pass ends. A WAL that may not rewind before it has
//     grown by 32 MiB would otherwise wedge a nearly full disk: every commit,
//     a settle too, must then grow it (docs/sqlite-store.md, "Full disk").
// And the size a rewound WAL file keeps (`PRAGMA journal_size_limit`, which
// SQLite applies in the first commit after a rewind): `kept_wal_bytes` while
// space is plentiful — more than the WAL reaches between two rewinds, so a
// rewind never truncates the file and the next pages never have to extend it
// again (truncating 32 MiB and regrowing it, every rewind, cost a quarter of
// the writer's time on the test machine); `low_wal_bytes` while space is low
// and once the checkpointer stops (SQLite's automatic checkpoint keeps the
// WAL near 4 MiB, and a nearly full disk gets the rest back).
// Same durability as SQLite's own checkpoint: the checkpointing connection
// uses the writer's synchronous level, and a checkpoint's failure is ignored
// as SQLite ignores an automatic checkpoint's (the pages stay in the WAL; the
// next pass retries).
//
// Thread-safety: the WAL hook runs on the writer's thread (inside its
// COMMIT); the background thread touches only its own connection.
#ifndef MQLITE_STORES_SQLITE_SRC_CHECKPOINTER_H_
#define MQLITE_STORES_SQLITE_SRC_CHECKPOINTER_H_

#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace mqlite::internal {

class WalCheckpointer {
 public:
  // SQLite's automatic checkpoint point, in WAL pages (its documented
  // default; the macro is private to sqlite3.c).
  static constexpr int kAutomaticFrames = 1000;

  struct Options {
    int background_frames = 1000;  // SQLite's default automatic checkpoint point
    int inline_frames = 8000;      // about 32 MiB of WAL at 4 KiB pages
    int64_t spare_bytes = int64_t{256} << 20;  // below this free, rewind at 1,000
    // What a rewound WAL file keeps: 64 MiB covers 2 × inline_frames pages
    // of 4 KiB (the most it reaches); 4 MiB when low on space.
    int64_t kept_wal_bytes = int64_t{64} << 20;
    int64_t low_wal_bytes = int64_t{4} << 20;
  };
  struct Counters {
    uint64_t background = 0;  // background checkpoints run
    uint64_t inline_ = 0;     // checkpoints run on the writer
    uint64_t failed = 0;      // of those, how many returned an error (ignored)
  };

  // Opens a second connection to `path` (an existing WAL database that
  // `writer` has open) at the writer's `synchronous` level, starts the
  // thread and installs the WAL hook on `writer`, which replaces SQLite's
  // automatic checkpoint. nullptr when the connection cannot be opened: the
  // writer keeps SQLite's automatic checkpoint.
  static std::unique_ptr<WalCheckpointer> Start(sqlite3* writer, const std::string& path,
                                                Options options);
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;
  // Stops the thread (after its current checkpoint), closes its connection
  // and gives `writer` back SQLite's automatic checkpoint. Call before
  // closing `writer`, from the thread that owns it.
  ~WalCheckpointer();

  Counters counters() const;

  // Call on the writer's thread after each write transaction ends, outside
  // any statement: sets the writer's journal_size_limit to what the last
  // space check asks for (kept_wal_bytes, or low_wal_bytes when low), if it
  // changed. Not from the WAL hook: that runs inside the COMMIT's step.
  void AfterCommit();

 private:
  WalCheckpointer(sqlite3* writer, sqlite3* own, std::string dir, Options options);
  static int Hook(void* self, sqlite3* db, const char* name, int frames);
  void OnCommit(sqlite3* db, const char* name, int frames);
  // Whether the WAL's file system is below spare_bytes free, checked again
  // once `background_frames` more pages were appended (writer only).
  bool LowOnSpace(int frames);
  // Blocks the writer until no background checkpoint is asked for or running.
  void WaitForBackground();
  void Loop();
  // Sets the writer's journal_size_limit (writer's thread, outside statements).
  void SetWalLimit(int64_t bytes);

  sqlite3* const writer_;
  sqlite3* const own_;
  const std::string dir_;  // the database's directory (statvfs)
  const Options options_;
  bool low_ = false;          // writer only
  int64_t wal_limit_ = -1;    // writer only: the journal_size_limit last set
  int next_space_check_ = 0;  // writer only: the WAL size for the next statvfs

  int last_frames_ = 0;  // the WAL's size at the last commit (writer only)
  // How many of the WAL's pages the background thread's last checkpoint had
  // copied (written by the thread; reset by the writer when it sees the WAL
  // rewound).
  std::atomic<int64_t> ckpt_done_{0};
  std::atomic<bool> running_{false};  // a background checkpoint is asked for or running; set under mu_
  std::atomic<uint64_t> n_background_{0}, n_inline_{0}, n_failed_{0};

  std::mutex mu_;
  std::condition_variable cv_;       // a request or stop, for the thread
  std::condition_variable idle_cv_;  // running_ cleared, for the writer
  bool requested_ = false;  // guarded by mu_
  bool stop_ = false;       // guarded by mu_
  std::thread thread_;
};

}  // namespace mqlite::internal

#endif  // MQLITE_STORES_SQLITE_SRC_CHECKPOINTER_H_
