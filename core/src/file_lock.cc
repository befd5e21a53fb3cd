#include "mqlite/file_lock.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

namespace mqlite {
namespace {

std::string Errno() { return std::strerror(errno); }

// The (device, inode) of every database file an engine in this process holds
// (see file_lock.h: never open a second descriptor on one of these).
std::mutex& RegistryMu() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
std::set<std::pair<uint64_t, uint64_t>>& Held() {
  static auto* held = new std::set<std::pair<uint64_t, uint64_t>>();
  return *held;
}
bool IsHeld(const struct stat& st) {
  return Held().count({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)}) != 0;
}

bool Exists(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

// The canonical spelling of a path whose final component may not exist yet.
Result<std::string> CanonicalPath(const std::string& path) {
  if (path.empty()) return Status::InvalidArgument("database path is empty");
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) != nullptr) return std::string(buf);
  if (errno != ENOENT) {
    return Status::InvalidArgument("cannot resolve database path '" + path + "': " + Errno());
  }
  // The file does not exist yet: canonicalise its directory.
  std::string dir = ".";
  std::string base = path;
  if (auto slash = path.find_last_of('/'); slash != std::string::npos) {
    dir = slash == 0 ? "/" : path.substr(0, slash);
    base = path.substr(slash + 1);
  }
  if (base.empty() || base == "." || base == "..") {
    return Status::InvalidArgument("database path '" + path + "' names a directory");
  }
  if (realpath(dir.c_str(), buf) == nullptr) {
    return Status::InvalidArgument("directory of database path '" + path +
                                   "' is not usable: " + Errno());
  }
  std::string out(buf);
  if (out != "/") out += '/';
  return out + base;
}

}  // namespace

Status OsErrorStatus(int err, const std::string& what) {
  const std::string detail = std::string(" (") + std::strerror(err) + ")";
  switch (err) {
    case EACCES:
    case EPERM:
      return Status::InvalidArgument(what + ": the process is not allowed to write it" + detail);
    case EROFS:
      return Status::InvalidArgument(what + ": the file system is read-only" + detail);
    case ENOSPC:
    case EDQUOT:
      return Status::StoreFull(what + ": no space left on the device" + detail);
    case EFBIG:
      return Status::StoreFull(what + ": the file-size limit (RLIMIT_FSIZE) is reached" + detail);
    case ENOENT:
    case ENOTDIR:
    case EISDIR:
    case ENAMETOOLONG:
    case ELOOP:
      return Status::InvalidArgument(what + detail);
    default:
      return Status::Unavailable(what + detail);
  }
}

Result<std::unique_ptr<FileLock>> FileLock::Acquire(const std::string& path,
                                                    const std::vector<std::string>& companions) {
  MQLITE_ASSIGN_OR_RETURN(std::string canonical, CanonicalPath(path));
  const std::string lock_path = canonical + ".lock";
  const std::string db_what = "cannot open database '" + canonical + "'";
  // Held for the whole acquisition: two engines of this process opening the
  // same inode are serialised, and the registry check below is exact.
  std::lock_guard<std::mutex> registry(RegistryMu());

  // 1. What is at the path, before any descriptor is opened on it.
  struct stat st;
  bool exists = ::stat(canonical.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return OsErrorStatus(errno, db_what);
  if (exists) {
    if (S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument("database path '" + canonical +
                                     "' is a directory, not a database file");
    }
    if (!S_ISREG(st.st_mode)) {
      return Status::InvalidArgument("database path '" + canonical + "' is not a regular file");
    }
    if (IsHeld(st)) {
      return Status::DbLocked("database '" + canonical +
                              "' is already open by another engine in this process (the same "
                              "file, possibly under another name such as a hard link)");
    }
  }

  std::unique_ptr<FileLock> lock(new FileLock());
  lock->canonical_ = canonical;
  // A refused open removes what it created (Abandon) before returning.
  auto refuse = [&lock](Status s) -> Result<std::unique_ptr<FileLock>> {
    Abandon(std::move(lock));
    return s;
  };

  // 2. The sidecar. After locking, check that the file locked is still the
  // one at the path: a refused opener may delete a sidecar it created (while
  // holding its lock), and locking the deleted inode would lock nothing.
  for (int attempt = 0;; ++attempt) {
    bool created = true;
    int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) {
      created = false;
      fd = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0 && errno == ENOENT && attempt < 100) continue;  // deleted meanwhile
    }
    if (fd < 0) {
      return refuse(
          OsErrorStatus(errno, db_what + ": cannot create its lock file '" + lock_path + "'"));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd);  // never delete a sidecar someone else has locked
      if (err == EWOULDBLOCK) {
        return refuse(Status::DbLocked("database '" + canonical +
                                       "' is already open by another engine (lock file '" +
                                       lock_path + "' is held)"));
      }
      return refuse(OsErrorStatus(err, db_what + ": cannot lock '" + lock_path + "'"));
    }
    struct stat locked, now;
    if (::fstat(fd, &locked) == 0 && ::stat(lock_path.c_str(), &now) == 0 &&
        locked.st_dev == now.st_dev && locked.st_ino == now.st_ino) {
      lock->lock_fd_ = fd;
      lock->created_lock_ = created;
      break;
    }
    ::close(fd);
    if (attempt >= 100) {
      return refuse(Status::Unavailable(db_what + ": its lock file '" + lock_path +
                                        "' keeps being replaced"));
    }
  }
  // Record the holder for operators; purely informational (and may fail on a
  // full disk, which is fine).
  if (::ftruncate(lock->lock_fd_, 0) == 0) {
    std::string pid = std::to_string(::getpid()) + "\n";
    (void)!::pwrite(lock->lock_fd_, pid.data(), pid.size(), 0);
  }

  // 3. The database file: created if missing (so it has an inode to lock),
  // then locked through a descriptor kept until the lock is destroyed.
  std::vector<std::string> absent;  // companions that do not exist yet
  for (const std::string& suffix : companions) {
    if (!Exists(canonical + suffix)) absent.push_back(canonical + suffix);
  }
  int fd = -1;
  if (!exists) {
    fd = ::open(canonical.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      lock->created_file_ = true;
      lock->new_companions_ = std::move(absent);
    } else if (errno != EEXIST) {
      return refuse(OsErrorStatus(errno, "cannot create database '" + canonical + "'"));
    }
  }
  if (fd < 0) {
    // It existed (or another process created it just now): this process
    // holds no engine on it (checked above, or it did not exist), so opening
    // a descriptor cannot disturb anyone's POSIX locks.
    if (!exists && ::stat(canonical.c_str(), &st) == 0 && IsHeld(st)) {
      return refuse(Status::DbLocked("database '" + canonical +
                                     "' is already open by another engine in this process"));
    }
    fd = ::open(canonical.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return refuse(OsErrorStatus(errno, db_what));
  }
  lock->db_fd_ = fd;
  if (::fstat(fd, &st) != 0) return refuse(OsErrorStatus(errno, db_what));
  if (!S_ISREG(st.st_mode)) {
    return refuse(Status::InvalidArgument("database path '" + canonical + "' is not a regular file"));
  }
  if (IsHeld(st)) {
    // Replaced under us by a file this process holds: closing this
    // descriptor would drop the holder's SQLite locks, so leak it instead.
    lock->db_fd_ = -1;
    return refuse(Status::DbLocked("database '" + canonical +
                                   "' is already open by another engine in this process"));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err == EWOULDBLOCK) {
      return refuse(Status::DbLocked(
          "database '" + canonical +
          "' is already open by another engine in another process (the database file itself is "
          "locked: the same file, possibly under another name such as a hard link)"));
    }
    return refuse(OsErrorStatus(err, db_what + ": cannot lock it"));
  }
  lock->dev_ = static_cast<uint64_t>(st.st_dev);
  lock->ino_ = static_cast<uint64_t>(st.st_ino);
  Held().insert({lock->dev_, lock->ino_});
  lock->registered_ = true;
  return lock;
}

Result<std::unique_ptr<FileLock>> FileLock::ForReading(const std::string& path) {
  if (path.empty()) return Status::InvalidArgument("database path is empty");
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) {
    if (errno == ENOENT) {
      return Status::NotFound("database '" + path + "' does not exist (nothing to inspect)");
    }
    return OsErrorStatus(errno, "cannot inspect database '" + path + "'");
  }
  const std::string canonical(buf);
  std::lock_guard<std::mutex> registry(RegistryMu());
  struct stat st;
  if (::stat(canonical.c_str(), &st) != 0) {
    return OsErrorStatus(errno, "cannot inspect database '" + canonical + "'");
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument("database path '" + canonical + "' is not a regular file");
  }
  if (IsHeld(st)) {
    return Status::DbLocked("database '" + canonical +
                            "' is open by an engine (or an inspection) in this process: inspect "
                            "it through that engine");
  }
  std::unique_ptr<FileLock> lock(new FileLock());
  lock->canonical_ = canonical;
  lock->dev_ = static_cast<uint64_t>(st.st_dev);
  lock->ino_ = static_cast<uint64_t>(st.st_ino);
  Held().insert({lock->dev_, lock->ino_});
  lock->registered_ = true;
  return lock;
}

void FileLock::Abandon(std::unique_ptr<FileLock> lock) {
  if (!lock) return;
  // Deleted while both locks are still held.
  if (lock->created_file_) {
    for (const std::string& companion : lock->new_companions_) ::unlink(companion.c_str());
    ::unlink(lock->canonical_.c_str());
  }
  if (lock->created_lock_ && lock->lock_fd_ >= 0) ::unlink((lock->canonical_ + ".lock").c_str());
  lock.reset();
}

FileLock::~FileLock() {
  if (db_fd_ >= 0) {
    ::flock(db_fd_, LOCK_UN);
    ::close(db_fd_);
  }
  if (registered_) {
    std::lock_guard<std::mutex> registry(RegistryMu());
    Held().erase({dev_, ino_});
  }
  if (lock_fd_ >= 0) {
    ::flock(lock_fd_, LOCK_UN);
    ::close(lock_fd_);
  }
}

}  // namespace mqlite
