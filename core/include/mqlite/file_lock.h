// Exclusive ownership of one database file (SPEC §9), for every embedded
// store: SQLite locks its database file with it, an LMDB port its data file.
//
// Two locks, both flock(2), both taken without waiting:
//
// 1. "<canonical path>.lock", the sidecar SPEC §9 names: keyed on the
//    canonical spelling, so two spellings or a symlink collide before the
//    database file is even opened.
// 2. The database file itself, through a descriptor held for the lock's
//    lifetime. flock locks belong to the inode, so a hard link (another
//    spelling of the same inode, which no canonical path reveals) collides
//    too. flock is independent of the POSIX fcntl locks SQLite and LMDB take.
//
// Within one process the second lock is not enough and is dangerous: closing
// ANY descriptor of a file drops every POSIX lock this process holds on it,
// the store library's included. So a process-wide registry of held (device,
// inode) pairs is consulted with stat(2) before any descriptor is opened, and
// a file held by another engine in this process is refused with DbLocked
// without ever being opened. LMDB's own rule — never open one environment
// twice in a process — is kept by the same registry.
//
// Both locks die with the process (SIGKILL included), so a crash never leaves
// the database locked. A sidecar is deleted only by its creator, only while
// holding its lock, and only on a refused open (Abandon); every locker checks
// after locking that the sidecar it locked is still the one at the path, so
// deleting it can never let two engines lock two different inodes.
//
// Use: Acquire before the store library touches the file; open the library on
// canonical_path(); on a refused open close the library's handles, then
// Abandon; otherwise destroy the lock after closing them.
#ifndef MQLITE_FILE_LOCK_H_
#define MQLITE_FILE_LOCK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mqlite/status.h"

namespace mqlite {

class FileLock {
 public:
  // Canonicalises `path` (the file need not exist; its directory must),
  // refuses a path that is a directory or not a regular file, takes the
  // sidecar lock, creates the database file (empty, 0644) if it is missing so
  // that it has an inode, and locks it. `companions` are the suffixes of files
  // the store library may create beside it (SQLite: "-wal", "-shm",
  // "-journal"), for Abandon. Errors, each naming the file:
  //   DbLocked         another engine holds it: in another process (either
  //                    lock), or in this process (same inode, any spelling)
  //   InvalidArgument  empty path, a missing or unusable directory, a
  //                    directory or non-regular file, a read-only file system
  //                    or a file the process may not write (EACCES, EPERM,
  //                    EROFS)
  //   StoreFull        no space (or inodes) left to create the file
  //   Unavailable      anything else the OS reports (EMFILE, EIO, ...)
  // A refused Acquire leaves no file behind that did not exist before.
  static Result<std::unique_ptr<FileLock>> Acquire(const std::string& path,
                                                   const std::vector<std::string>& companions = {});
  // For a read-only open that inspects a store another process may be
  // running (docs/cli.md "Inspecting a running application"): takes neither
  // lock — the owner keeps running, and may start while this is held — and
  // only enters the file in this process's registry, so no engine of this
  // process opens it (or a second descriptor on it) meanwhile. The file must
  // exist. Errors, each naming the file:
  //   NotFound         no such file
  //   DbLocked         an engine of this process holds it (inspect it
  //                    through that engine), or another inspection does
  //   InvalidArgument  empty path, a directory or non-regular file
  //   Unavailable      anything else the OS reports
  static Result<std::unique_ptr<FileLock>> ForReading(const std::string& path);
  // Releases both locks. REQUIRES: the store library's handles on the file
  // are closed (see above).
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  const std::string& canonical_path() const { return canonical_; }
  // True when Acquire created the database file (it did not exist).
  bool created_file() const { return created_file_; }

  // For a refused open, after the caller closed its handles: deletes what
  // this open created — the database file and those of its companions that
  // did not exist before, if Acquire created the file, and the sidecar if
  // Acquire created it — then releases the locks (consumes the lock).
  static void Abandon(std::unique_ptr<FileLock> lock);

 private:
  FileLock() = default;
  int lock_fd_ = -1;  // the sidecar
  int db_fd_ = -1;    // the database file
  uint64_t dev_ = 0;
  uint64_t ino_ = 0;
  bool registered_ = false;  // (dev_, ino_) is in the process registry
  bool created_lock_ = false;
  bool created_file_ = false;
  std::vector<std::string> new_companions_;  // paths Abandon removes
  std::string canonical_;
};

// The status for OS error `err` while doing `what` (which names the file):
// InvalidArgument for what the caller must fix (EACCES, EPERM, EROFS, ENOENT,
// ENOTDIR, EISDIR, ENAMETOOLONG, ELOOP), StoreFull for ENOSPC, EDQUOT and
// EFBIG, Unavailable for the rest. For a store's ToStatus of errno-valued
// errors (LMDB returns them), so every store maps errno alike.
Status OsErrorStatus(int err, const std::string& what);

}  // namespace mqlite

#endif  // MQLITE_FILE_LOCK_H_
