#include "file_lock.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mqlite::internal {
namespace {

std::string Errno() { return std::strerror(errno); }

}  // namespace

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

Result<std::unique_ptr<FileLock>> FileLock::Acquire(const std::string& path) {
  MQLITE_ASSIGN_OR_RETURN(std::string canonical, CanonicalPath(path));
  std::string lock_path = canonical + ".lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::Unavailable("cannot open lock file '" + lock_path + "': " + Errno());
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Status::DbLocked("database '" + canonical +
                              "' is already open by another engine (lock file '" + lock_path +
                              "' is held)");
    }
    return Status::Unavailable("cannot lock '" + lock_path + "': " + std::strerror(err));
  }
  // Record the holder for operators; purely informational.
  if (::ftruncate(fd, 0) == 0) {
    std::string pid = std::to_string(::getpid()) + "\n";
    (void)!::pwrite(fd, pid.data(), pid.size(), 0);
  }
  return std::unique_ptr<FileLock>(new FileLock(fd, std::move(canonical)));
}

FileLock::~FileLock() {
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

}  // namespace mqlite::internal
