#include "checkpointer.h"

#include <sys/statvfs.h>

#include <filesystem>
#include <string>
#include <utility>

namespace mqlite::internal {

std::unique_ptr<WalCheckpointer> WalCheckpointer::Start(sqlite3* writer, const std::string& path,
                                                        Options options) {
  // The checkpoint syncs as its connection's level says: the writer's.
  int synchronous = -1;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(writer, "PRAGMA synchronous", -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    synchronous = sqlite3_column_int(st, 0);
  }
  sqlite3_finalize(st);
  if (synchronous < 0) return nullptr;
  sqlite3* own = nullptr;
  if (sqlite3_open_v2(path.c_str(), &own, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    sqlite3_close_v2(own);
    return nullptr;
  }
  // Two connections on one WAL can find each other's locks held for a
  // moment (seen under ThreadSanitizer as SQLITE_BUSY on a writer without a
  // busy timeout): both wait such moments out, as the store's writer does.
  sqlite3_busy_timeout(own, 5000);
  const std::string pragma = "PRAGMA synchronous = " + std::to_string(synchronous);
  if (sqlite3_exec(own, pragma.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    sqlite3_close_v2(own);
    return nullptr;
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::string dir = parent.empty() ? std::string(".") : parent.string();
  std::unique_ptr<WalCheckpointer> c(new WalCheckpointer(writer, own, std::move(dir), options));
  c->thread_ = std::thread([p = c.get()] { p->Loop(); });
  // Replaces the automatic checkpoint (sqlite3_wal_autocheckpoint is itself
  // a WAL hook).
  sqlite3_wal_hook(writer, &WalCheckpointer::Hook, c.get());
  c->SetWalLimit(options.kept_wal_bytes);
  return c;
}

WalCheckpointer::WalCheckpointer(sqlite3* writer, sqlite3* own, std::string dir, Options options)
    : writer_(writer), own_(own), dir_(std::move(dir)), options_(options) {}

WalCheckpointer::~WalCheckpointer() {
  sqlite3_wal_autocheckpoint(writer_, kAutomaticFrames);
  SetWalLimit(options_.low_wal_bytes);
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
  sqlite3_close_v2(own_);
}

void WalCheckpointer::SetWalLimit(int64_t bytes) {
  if (bytes == wal_limit_) return;
  const std::string pragma = "PRAGMA journal_size_limit = " + std::to_string(bytes);
  // Only sets a number on the connection; if it fails the old limit stays,
  // and the next call tries again.
  if (sqlite3_exec(writer_, pragma.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK) {
    wal_limit_ = bytes;
  }
}

void WalCheckpointer::AfterCommit() {
  SetWalLimit(low_ ? options_.low_wal_bytes : options_.kept_wal_bytes);
}

WalCheckpointer::Counters WalCheckpointer::counters() const {
  return Counters{n_background_.load(), n_inline_.load(), n_failed_.load()};
}

int WalCheckpointer::Hook(void* self, sqlite3* db, const char* name, int frames) {
  static_cast<WalCheckpointer*>(self)->OnCommit(db, name, frames);
  return SQLITE_OK;  // a commit never fails because of its checkpoint
}

bool WalCheckpointer::LowOnSpace(int frames) {
  if (frames < next_space_check_) return low_;
  next_space_check_ = frames + options_.background_frames;
  struct statvfs vs;
  if (::statvfs(dir_.c_str(), &vs) == 0) {
    low_ = static_cast<int64_t>(vs.f_bavail) * static_cast<int64_t>(vs.f_frsize) <
           options_.spare_bytes;
  }
  return low_;
}

void WalCheckpointer::WaitForBackground() {
  std::unique_lock<std::mutex> l(mu_);
  idle_cv_.wait(l, [&] { return !running_.load(); });
}

void WalCheckpointer::OnCommit(sqlite3* db, const char* name, int frames) {
  if (frames < last_frames_) {
    // Rewound: what the background thread last copied was the old WAL's.
    ckpt_done_.store(0, std::memory_order_relaxed);
    next_space_check_ = 0;
  }
  last_frames_ = frames;
  const bool low = frames >= kAutomaticFrames && LowOnSpace(frames);
  const int inline_at = low ? kAutomaticFrames : options_.inline_frames;
  if (frames >= inline_at) {
    if (low || frames >= 2 * inline_at) WaitForBackground();
    // Busy while the background thread is mid-checkpoint: the next commit
    // tries again.
    const int rc = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    if (rc != SQLITE_BUSY) {
      n_inline_.fetch_add(1, std::memory_order_relaxed);
      if (rc != SQLITE_OK) n_failed_.fetch_add(1, std::memory_order_relaxed);
    }
    return;
  }
  const int64_t copied = ckpt_done_.load(std::memory_order_relaxed);
  if (frames - copied < options_.background_frames || running_.load()) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (running_.load()) return;  // already asked for
    running_.store(true);
    requested_ = true;
  }
  cv_.notify_one();
}

void WalCheckpointer::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return requested_ || stop_; });
    if (stop_) return;
    requested_ = false;
    l.unlock();
    int done = 0;
    const int rc =
        sqlite3_wal_checkpoint_v2(own_, "main", SQLITE_CHECKPOINT_PASSIVE, nullptr, &done);
    if (rc == SQLITE_OK) ckpt_done_.store(done, std::memory_order_relaxed);
    if (rc != SQLITE_BUSY) {
      n_background_.fetch_add(1, std::memory_order_relaxed);
      if (rc != SQLITE_OK) n_failed_.fetch_add(1, std::memory_order_relaxed);
    }
    l.lock();
    running_.store(false);
    idle_cv_.notify_all();
  }
}

}  // namespace mqlite::internal
