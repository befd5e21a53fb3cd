// The SQLite store on real, hostile file systems (SPEC §10): a read-only
// mount, an immutable file, a full disk at open, and a full disk under load.
// Each test mounts its own tiny tmpfs (mount(2) needs root, as in CI); when
// the process may not mount, the test is skipped with the reason.
//
// What must hold: a permanent condition gets a permanent code — StoreFull for
// a full disk, InvalidArgument for a file the process may not write — never
// Unavailable ("retry"); the message names the file; a refused open changes
// nothing and leaves no file behind that did not exist before.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/sqlite.h"
#include "test_util.h"

namespace mqlite {
namespace {

namespace fs = std::filesystem;
using ::mqlite::testing::kT0;
using ::mqlite::testing::OpenEngineAt;
using ::mqlite::testing::Snapshot;

// A tmpfs of `size` mounted on a fresh directory; unmounted and removed on
// destruction. reason() is non-empty when it could not be mounted.
class Tmpfs {
 public:
  explicit Tmpfs(const std::string& size) {
    std::string tmpl = (fs::temp_directory_path() / "mqlite-tmpfs-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      reason_ = std::string("mkdtemp: ") + std::strerror(errno);
      return;
    }
    dir_ = buf.data();
    if (::geteuid() != 0) {
      reason_ = "mounting a tmpfs needs root (this test runs as uid " +
                std::to_string(::geteuid()) + ")";
      return;
    }
    const std::string opts = "size=" + size + ",mode=0755";
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, opts.c_str()) != 0) {
      reason_ = std::string("mount -t tmpfs: ") + std::strerror(errno) +
                " (needs CAP_SYS_ADMIN in this mount namespace)";
      return;
    }
    mounted_ = true;
  }
  ~Tmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  Tmpfs(const Tmpfs&) = delete;
  Tmpfs& operator=(const Tmpfs&) = delete;

  const std::string& reason() const { return reason_; }
  const std::string& path() const { return dir_; }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }

  ::testing::AssertionResult RemountReadOnly() {
    if (::mount(nullptr, dir_.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
      return ::testing::AssertionFailure() << "remount,ro: " << std::strerror(errno);
    }
    return ::testing::AssertionSuccess();
  }

 private:
  std::string dir_;
  std::string reason_;
  bool mounted_ = false;
};

#define MQ_REQUIRE_TMPFS(t)                              \
  do {                                                   \
    if (!(t).reason().empty()) GTEST_SKIP() << (t).reason(); \
  } while (0)

// Writes `name` until the file system is full (4 KiB, then byte by byte);
// returns the bytes written.
int64_t FillDisk(const std::string& name) {
  int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return -1;
  int64_t n = 0;
  char block[4096] = {};
  for (ssize_t w; (w = ::write(fd, block, sizeof block)) > 0;) n += w;
  for (ssize_t w; (w = ::write(fd, block, 1)) > 0;) n += w;
  ::close(fd);
  return n;
}

void ExpectNames(const Status& s, const std::string& path, std::string_view words) {
  EXPECT_NE(s.message().find("'" + path + "'"), std::string_view::npos) << s.ToString();
  EXPECT_NE(s.message().find(words), std::string_view::npos) << s.ToString();
}

class FilesystemTest : public ::testing::Test {
 protected:
  FilesystemTest() : clock_(kT0) {}
  EngineOptions Options() {
    EngineOptions o;
    o.clock = &clock_;
    o.background_maintenance = false;
    return o;
  }
  // A database at `path` with queue "jobs" and one message, closed.
  void MakeDatabase(const std::string& path) {
    MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, OpenEngineAt(path, Options()));
    MQ_ASSERT_OK(e->CreateQueue({.name = "jobs"}));
    MQ_ASSERT_OK(e->Send("jobs", {.body = "payload"}));
    MQ_ASSERT_OK(e->Close());
  }
  ManualClock clock_;
};

TEST_F(FilesystemTest, Spec10_ReadOnlyFileSystemIsInvalidArgumentAndChangesNothing) {
  Tmpfs t("4m");
  MQ_REQUIRE_TMPFS(t);
  const std::string db = t.File("queue.db");
  MakeDatabase(db);
  ASSERT_TRUE(t.RemountReadOnly());
  const auto before = Snapshot(t.path());

  Result<std::unique_ptr<Store>> r = OpenSqliteStore({.path = db});
  MQ_ASSERT_CODE(r, kInvalidArgument);
  ExpectNames(r.error(), db, "read-only");
  Result<std::unique_ptr<Store>> fresh = OpenSqliteStore({.path = t.File("new.db")});
  MQ_ASSERT_CODE(fresh, kInvalidArgument);
  ExpectNames(fresh.error(), t.File("new.db"), "read-only");
  EXPECT_TRUE(Snapshot(t.path()) == before);
}

// As root, permission bits do not stop a write; the immutable attribute
// (chattr +i) does, for root too: open(O_RDWR) fails with EPERM.
TEST_F(FilesystemTest, Spec10_FileTheProcessMayNotWriteIsInvalidArgumentAndChangesNothing) {
  Tmpfs t("4m");
  MQ_REQUIRE_TMPFS(t);
  const std::string db = t.File("queue.db");
  MakeDatabase(db);
  fs::remove(db + ".lock");  // so the test also proves no lock file is left behind
  int fd = ::open(db.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  int flags = 0;
  if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) {
    ::close(fd);
    GTEST_SKIP() << "FS_IOC_GETFLAGS on tmpfs: " << std::strerror(errno);
  }
  const int immutable = flags | FS_IMMUTABLE_FL;
  if (::ioctl(fd, FS_IOC_SETFLAGS, &immutable) != 0) {
    ::close(fd);
    GTEST_SKIP() << "chattr +i on tmpfs: " << std::strerror(errno);
  }
  const auto before = Snapshot(t.path());
  Result<std::unique_ptr<Store>> r = OpenSqliteStore({.path = db});
  const auto after = Snapshot(t.path());
  (void)::ioctl(fd, FS_IOC_SETFLAGS, &flags);  // chattr -i, so the tmpfs can go
  ::close(fd);
  MQ_ASSERT_CODE(r, kInvalidArgument);
  ExpectNames(r.error(), db, "not allowed to write");
  EXPECT_TRUE(after == before) << "the refused open created or changed a file";
}

TEST_F(FilesystemTest, Spec10_FullDiskAtOpenIsStoreFullAndLeavesNoFiles) {
  Tmpfs t("1m");
  MQ_REQUIRE_TMPFS(t);
  ASSERT_GT(FillDisk(t.File("filler")), 0);
  const auto before = Snapshot(t.path());
  const std::string db = t.File("queue.db");
  Result<std::unique_ptr<Store>> r = OpenSqliteStore({.path = db});
  MQ_ASSERT_CODE(r, kStoreFull);
  EXPECT_NE(r.error().message().find("'" + db + "'"), std::string_view::npos)
      << r.error().ToString();
  EXPECT_TRUE(Snapshot(t.path()) == before) << "a refused open left files behind";
}

// docs/sqlite-store.md, "Full disk": Send fails with StoreFull; once the disk
// is full, every write transaction — Receive and Complete included — fails
// with StoreFull too, because SQLite's WAL holds frames that the checkpoint
// cannot copy into the database file without growing it. Reads still work,
// nothing is lost or half-done, and freeing about 1 MiB lets the drain run.
TEST_F(FilesystemTest, Spec10_FullDiskSendIsStoreFullAndSettlesResumeOnceSpaceIsFreed) {
  Tmpfs t("16m");
  MQ_REQUIRE_TMPFS(t);
  // Space the operator can free later (any other file on the disk).
  const std::string spare = t.File("operator-spare");
  {
    std::string mib(1 << 20, 's');
    int fd = ::open(spare.c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, mib.data(), mib.size()), static_cast<ssize_t>(mib.size()));
    ::close(fd);
  }
  const std::string db = t.File("queue.db");
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, OpenEngineAt(db, Options()));
  MQ_ASSERT_OK(e->CreateQueue({.name = "jobs"}));
  for (int i = 0; i < 10; ++i) MQ_ASSERT_OK(e->Send("jobs", {.body = "early"}));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> locked, e->Receive("jobs", {.max_messages = 10}));
  ASSERT_EQ(locked.size(), 10u);

  int64_t sent = 10;
  Status full;
  for (; sent < 100'000; ++sent) {
    Result<int64_t> r = e->Send("jobs", {.body = std::string(4000, 'x')});
    if (!r.has_value()) {
      full = r.error();
      break;
    }
  }
  MQ_ASSERT_CODE(full, kStoreFull);
  ExpectNames(full, db, "full");
  FillDisk(t.File("filler"));  // whatever the last Send left

  // Reads still work.
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, e->Stats("jobs"));
  EXPECT_EQ(st.total, sent);
  EXPECT_EQ(st.locked, 10);
  // Writes, settles included, are StoreFull (a permanent code) and do nothing.
  Status c = e->Complete("jobs", locked[0].seq, locked[0].lock_token);
  MQ_EXPECT_CODE(c, kStoreFull);
  ExpectNames(c, db, "full");
  MQ_EXPECT_CODE(e->Receive("jobs"), kStoreFull);
  MQ_ASSERT_OK_AND_ASSIGN(st, e->Stats("jobs"));
  EXPECT_EQ(st.total, sent);
  EXPECT_EQ(st.locked, 10);

  // The operator frees 1 MiB: the drain proceeds, settles first.
  ASSERT_EQ(::unlink(spare.c_str()), 0);
  for (const Message& m : locked) MQ_ASSERT_OK(e->Complete("jobs", m.seq, m.lock_token));
  int64_t drained = 10;
  for (;;) {
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, e->Receive("jobs", {.max_messages = 50}));
    if (got.empty()) break;
    std::vector<SettleItem> items;
    for (const Message& m : got) items.push_back({m.seq, m.lock_token});
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Status> results, e->CompleteBatch("jobs", items));
    for (const Status& s : results) MQ_ASSERT_OK(s);
    drained += static_cast<int64_t>(got.size());
  }
  EXPECT_EQ(drained, sent);
  MQ_ASSERT_OK_AND_ASSIGN(st, e->Stats("jobs"));
  EXPECT_EQ(st.total, 0);
  MQ_EXPECT_OK(e->Close());
}

}  // namespace
}  // namespace mqlite
