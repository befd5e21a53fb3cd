// mqlite::FileLock (mqlite/file_lock.h): one engine per database file
// (SPEC §9) whatever the spelling — symlinks, relative paths, hard links —
// in this process and in another, and a refused open leaves nothing behind.
// The SQLite store's open, process and filesystem tests cover it again
// through a real store.
#include "mqlite/file_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>

namespace mqlite {
inline void PrintTo(StatusCode code, std::ostream* os) { *os << StatusCodeName(code); }

namespace {

namespace fs = std::filesystem;

class FileLockTest : public ::testing::Test {
 protected:
  FileLockTest() {
    std::string tmpl = (fs::temp_directory_path() / "mqlite-file-lock-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    dir_ = fs::canonical(tmpl).string();
  }
  ~FileLockTest() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

TEST_F(FileLockTest, Spec9_AcquireCreatesTheFileAndItsSidecar) {
  Result<std::unique_ptr<FileLock>> lock = FileLock::Acquire(Path("a.db"));
  ASSERT_TRUE(lock.has_value()) << lock.error().ToString();
  EXPECT_EQ((*lock)->canonical_path(), Path("a.db"));
  EXPECT_TRUE((*lock)->created_file());
  EXPECT_TRUE(fs::is_regular_file(Path("a.db")));
  EXPECT_TRUE(fs::exists(Path("a.db.lock")));
  lock->reset();
  // Released: the next Acquire gets it, and finds the file already there.
  lock = FileLock::Acquire(Path("a.db"));
  ASSERT_TRUE(lock.has_value());
  EXPECT_FALSE((*lock)->created_file());
}

TEST_F(FileLockTest, Spec9_EverySpellingOfAHeldFileIsDbLocked) {
  Result<std::unique_ptr<FileLock>> held = FileLock::Acquire(Path("a.db"));
  ASSERT_TRUE(held.has_value());
  fs::create_symlink(Path("a.db"), Path("sym.db"));
  fs::create_hard_link(Path("a.db"), Path("hard.db"));
  for (const std::string& p : {Path("a.db"), Path("sym.db"), Path("hard.db"),
                               dir_ + "/./a.db"}) {
    Result<std::unique_ptr<FileLock>> again = FileLock::Acquire(p);
    ASSERT_FALSE(again.has_value()) << p;
    EXPECT_EQ(again.error().code(), StatusCode::kDbLocked) << p;
  }
  // The hard link's refused open created its own sidecar and removed it.
  EXPECT_FALSE(fs::exists(Path("hard.db.lock")));
}

TEST_F(FileLockTest, Spec9_AnotherProcessIsDbLocked) {
  std::ofstream(Path("a.db")).close();
  fs::create_hard_link(Path("a.db"), Path("hard.db"));
  // Fork before locking, so the child's in-process registry is empty and
  // only the flock locks can refuse it: the sidecar for a.db, the inode for
  // its hard link.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(go[1]);
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(10);
    Result<std::unique_ptr<FileLock>> a = FileLock::Acquire(Path("a.db"));
    if (a.has_value() || a.error().code() != StatusCode::kDbLocked) ::_exit(1);
    Result<std::unique_ptr<FileLock>> h = FileLock::Acquire(Path("hard.db"));
    if (h.has_value() || h.error().code() != StatusCode::kDbLocked) ::_exit(2);
    ::_exit(0);
  }
  ::close(go[0]);
  Result<std::unique_ptr<FileLock>> held = FileLock::Acquire(Path("a.db"));
  ASSERT_TRUE(held.has_value());
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  ::close(go[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a.db was not refused; 2: its hard link was not";
}

TEST_F(FileLockTest, Spec9_AbandonRemovesOnlyWhatTheOpenCreated) {
  std::ofstream(Path("a.db-shm")).close();  // existed before: stays
  Result<std::unique_ptr<FileLock>> lock =
      FileLock::Acquire(Path("a.db"), {"-wal", "-shm", "-journal"});
  ASSERT_TRUE(lock.has_value());
  std::ofstream(Path("a.db-wal")).close();  // as the store library would
  std::ofstream(Path("a.db-shm")).close();
  FileLock::Abandon(std::move(*lock));
  EXPECT_FALSE(fs::exists(Path("a.db")));
  EXPECT_FALSE(fs::exists(Path("a.db-wal")));
  EXPECT_TRUE(fs::exists(Path("a.db-shm")));
  EXPECT_FALSE(fs::exists(Path("a.db.lock")));

  // A file that existed is never removed, nor a sidecar that existed.
  std::ofstream(Path("b.db")).close();
  std::ofstream(Path("b.db.lock")).close();
  lock = FileLock::Acquire(Path("b.db"), {"-wal"});
  ASSERT_TRUE(lock.has_value());
  FileLock::Abandon(std::move(*lock));
  EXPECT_TRUE(fs::exists(Path("b.db")));
  EXPECT_TRUE(fs::exists(Path("b.db.lock")));
  EXPECT_TRUE(FileLock::Acquire(Path("b.db")).has_value()) << "Abandon released the locks";
}

TEST_F(FileLockTest, UnusablePathsAreInvalidArgumentAndLeaveNothing) {
  fs::create_directory(Path("dir"));
  for (const std::string& p : {std::string(), Path("dir"), Path("missing/a.db"), dir_ + "/"}) {
    Result<std::unique_ptr<FileLock>> lock = FileLock::Acquire(p);
    ASSERT_FALSE(lock.has_value()) << p;
    EXPECT_EQ(lock.error().code(), StatusCode::kInvalidArgument) << p;
  }
  EXPECT_FALSE(fs::exists(Path("dir.lock")));
}

TEST(OsErrorStatusTest, MapsErrnoByWhatTheCallerShouldDo) {
  EXPECT_EQ(OsErrorStatus(EACCES, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OsErrorStatus(EROFS, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OsErrorStatus(ENOENT, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OsErrorStatus(ENOSPC, "x").code(), StatusCode::kStoreFull);
  EXPECT_EQ(OsErrorStatus(EFBIG, "x").code(), StatusCode::kStoreFull);
  EXPECT_EQ(OsErrorStatus(EMFILE, "x").code(), StatusCode::kUnavailable);
  EXPECT_NE(OsErrorStatus(EIO, "cannot open 'f'").message().find("cannot open 'f'"),
            std::string::npos);
}

}  // namespace
}  // namespace mqlite
