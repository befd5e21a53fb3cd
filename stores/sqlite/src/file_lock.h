// Advisory exclusive lock on "<canonical db path>.lock" (SPEC §9).
//
// flock(2) locks belong to an open file description, so a second open of the
// same database — in another process, or in this one through another
// spelling or a symlink — conflicts and fails fast with DbLocked. The lock
// dies with the process (SIGKILL included), so a crash never leaves the
// database locked. The .lock file itself is never deleted: unlinking it while
// another opener holds a descriptor would let two engines lock two inodes.
#ifndef MQLITE_STORES_SQLITE_SRC_FILE_LOCK_H_
#define MQLITE_STORES_SQLITE_SRC_FILE_LOCK_H_

#include <memory>
#include <string>

#include "mqlite/status.h"

namespace mqlite::internal {

class FileLock {
 public:
  // Canonicalises `path` (the file need not exist; its directory must), then
  // takes the lock. DbLocked if held elsewhere; InvalidArgument if the
  // directory does not exist; Unavailable for other OS errors.
  static Result<std::unique_ptr<FileLock>> Acquire(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  const std::string& canonical_path() const { return canonical_; }

 private:
  FileLock(int fd, std::string canonical) : fd_(fd), canonical_(std::move(canonical)) {}
  int fd_;
  std::string canonical_;
};

// The canonical spelling of a path whose final component may not exist yet.
Result<std::string> CanonicalPath(const std::string& path);

}  // namespace mqlite::internal

#endif  // MQLITE_STORES_SQLITE_SRC_FILE_LOCK_H_
