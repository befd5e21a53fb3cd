// Two processes on one SQLite file (SPEC §9) and a real SIGKILL with messages
// in flight (SPEC §7.1, §7.4, §7.5). The other process is
// mqlite_sqlite_test_child (child_main.cc), started with fork+execv; the only
// synchronisation is its readiness line on a pipe, polled with a generous
// bound.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/sqlite.h"
#include "test_util.h"

#ifndef MQLITE_TEST_CHILD_PATH
#error "MQLITE_TEST_CHILD_PATH must name the mqlite_sqlite_test_child executable"
#endif

namespace mqlite {
namespace {

using ::mqlite::testing::kT0;
using ::mqlite::testing::OpenEngineAt;
using ::mqlite::testing::TempDir;

// Generous: the child only opens a file and sends a few messages, but CI
// machines (and sanitizers) can be slow. This bounds a hang, it is not a
// performance budget.
constexpr int kReadyTimeoutMs = 60'000;

// A child process with its stdin (ours to close) and stdout (ours to read).
// The destructor SIGKILLs and reaps a child that is still running, so a failed
// assertion never leaks a process.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
      }
    }
    CloseStdin();
    if (out_fd_ >= 0) ::close(out_fd_);
  }

  // fork + execv of the child binary with `args`.
  ::testing::AssertionResult Start(const std::vector<std::string>& args) {
    int in_pipe[2];
    int out_pipe[2];
    if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) {
      return ::testing::AssertionFailure() << "pipe2: " << std::strerror(errno);
    }
    // Build argv before fork: only async-signal-safe calls after it.
    std::vector<std::string> storage;
    storage.push_back(MQLITE_TEST_CHILD_PATH);
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : storage) argv.push_back(s.data());
    argv.push_back(nullptr);

    pid_t pid = ::fork();
    if (pid < 0) return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);
    if (pid == 0) {
      // dup2 clears O_CLOEXEC on the new descriptors; the originals close at exec.
      if (::dup2(in_pipe[0], STDIN_FILENO) < 0 || ::dup2(out_pipe[1], STDOUT_FILENO) < 0) {
        ::_exit(126);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(in_pipe[0]);
    ::close(out_pipe[1]);
    pid_ = pid;
    in_fd_ = in_pipe[1];
    out_fd_ = out_pipe[0];
    return ::testing::AssertionSuccess();
  }

  // The next line the child printed, without the newline; nullopt on EOF or
  // when the bound passes.
  std::optional<std::string> ReadLine(int timeout_ms = kReadyTimeoutMs) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) return std::nullopt;
      pollfd p{out_fd_, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1'000)));
      if (r < 0 && errno != EINTR) return std::nullopt;
      if (r <= 0) continue;
      char chunk[4096];
      ssize_t n = ::read(out_fd_, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;  // EOF: the child died or exited
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

  void CloseStdin() {
    if (in_fd_ >= 0) {
      ::close(in_fd_);
      in_fd_ = -1;
    }
  }

  // Sends SIGKILL and reaps; returns the wait status.
  int KillAndWait() {
    EXPECT_EQ(::kill(pid_, SIGKILL), 0) << std::strerror(errno);
    return Wait();
  }

  int Wait() {
    int st = 0;
    pid_t r;
    do {
      r = ::waitpid(pid_, &st, 0);
    } while (r < 0 && errno == EINTR);
    EXPECT_EQ(r, pid_);
    pid_ = -1;
    return st;
  }

 private:
  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  std::string buf_;
};

std::vector<int64_t> ParseSeqList(const std::string& csv) {
  std::vector<int64_t> out;
  std::stringstream ss(csv);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(std::stoll(item));
  }
  return out;
}

class ProcessTest : public ::testing::Test {
 protected:
  ProcessTest() : path_(dir_.File("queue.db")), clock_(kT0) {}

  EngineOptions Options() {
    EngineOptions o;
    o.clock = &clock_;
    o.background_maintenance = false;
    return o;
  }

  Result<std::unique_ptr<Engine>> Open() { return OpenEngineAt(path_, Options()); }

  // Every message of "jobs" by seq, paging through Peek.
  std::map<int64_t, Message> PeekAll(Engine& e) {
    std::map<int64_t, Message> out;
    PeekOptions o;
    o.max_messages = 1'000;
    for (;;) {
      Result<std::vector<Message>> page = e.Peek("jobs", o);
      EXPECT_TRUE(::mqlite::testing::IsOk(page));
      if (!page.has_value() || page->empty()) break;
      o.from_seq = page->back().seq;
      for (Message& m : *page) out.emplace(m.seq, std::move(m));
    }
    return out;
  }

  TempDir dir_;
  std::string path_;
  ManualClock clock_;
};

// ---- SPEC §9: one engine per file, across processes --------------------------------

TEST_F(ProcessTest, Spec9_OpenHeldByAnotherProcessIsDbLockedUntilItExits) {
  Child child;
  ASSERT_TRUE(child.Start({"hold", path_}));
  std::optional<std::string> ready = child.ReadLine();
  ASSERT_TRUE(ready.has_value()) << "child never became ready";
  ASSERT_EQ(*ready, "READY");

  MQ_EXPECT_CODE(OpenSqliteStore({.path = path_}), kDbLocked);
  MQ_EXPECT_CODE(Open(), kDbLocked);
  const std::string link = dir_.File("link.db");
  std::filesystem::create_symlink(path_, link);
  MQ_EXPECT_CODE(OpenSqliteStore({.path = link}), kDbLocked);
  MQ_EXPECT_CODE(OpenSqliteStore({.path = dir_.path() + "/./queue.db"}), kDbLocked);

  child.CloseStdin();  // asks the child to close its engine and exit
  int st = child.Wait();
  ASSERT_TRUE(WIFEXITED(st)) << "status " << st;
  EXPECT_EQ(WEXITSTATUS(st), 0);

  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open());
  MQ_ASSERT_OK_AND_ASSIGN(QueueConfig q, e->GetQueue("jobs"));
  EXPECT_EQ(q.name, "jobs");
}

TEST_F(ProcessTest, Spec9_LockOfAKilledProcessIsReleased) {
  Child child;
  ASSERT_TRUE(child.Start({"hold", path_}));
  std::optional<std::string> ready = child.ReadLine();
  ASSERT_TRUE(ready.has_value());
  ASSERT_EQ(*ready, "READY");
  MQ_EXPECT_CODE(OpenSqliteStore({.path = path_}), kDbLocked);
  int st = child.KillAndWait();
  ASSERT_TRUE(WIFSIGNALED(st));
  EXPECT_EQ(WTERMSIG(st), SIGKILL);
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open());
  MQ_EXPECT_OK(e->GetQueue("jobs"));
}

// A hard link is the same inode under a name no canonical path reveals.
// Before the fix another process opened it as an empty store and wrote a
// fresh schema into "b.db-wal", and the first engine's data was lost.
TEST_F(ProcessTest, Spec9_HardLinkOpenedByAnotherProcessIsDbLockedAndWritesNothing) {
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open());
  MQ_ASSERT_OK(e->CreateQueue({.name = "jobs"}));
  MQ_ASSERT_OK(e->Send("jobs", {.body = "precious"}));
  const std::string link = dir_.File("b.db");
  ASSERT_EQ(::link(path_.c_str(), link.c_str()), 0) << std::strerror(errno);
  const auto before = ::mqlite::testing::Snapshot(dir_.path());

  Child child;
  ASSERT_TRUE(child.Start({"hold", link}));
  std::optional<std::string> line = child.ReadLine();
  ASSERT_TRUE(line.has_value()) << "child printed nothing";
  EXPECT_EQ(line->rfind("ERROR DbLocked: ", 0), 0u) << *line;
  EXPECT_NE(line->find(link), std::string::npos) << *line;
  child.CloseStdin();  // if it did open (the bug), let it close and exit
  int st = child.Wait();
  ASSERT_TRUE(WIFEXITED(st)) << "status " << st;
  EXPECT_EQ(WEXITSTATUS(st), 2);

  EXPECT_FALSE(std::filesystem::exists(link + "-wal")) << "the child wrote into the link";
  EXPECT_FALSE(std::filesystem::exists(link + ".lock")) << "the refused open left its lock file";
  EXPECT_TRUE(::mqlite::testing::Snapshot(dir_.path()) == before) << "a file changed";

  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, e->Receive("jobs"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body, "precious");
  MQ_ASSERT_OK(e->Abandon("jobs", got[0].seq, got[0].lock_token));
  MQ_ASSERT_OK(e->Close());

  // Once the holder is gone the link is just another name for the data.
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> via_link, OpenEngineAt(link, Options()));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, via_link->Peek("jobs"));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].body, "precious");
}

TEST_F(ProcessTest, Spec9_HardLinkOfAFileHeldByAnotherProcessIsDbLocked) {
  Child child;
  ASSERT_TRUE(child.Start({"hold", path_}));
  std::optional<std::string> ready = child.ReadLine();
  ASSERT_TRUE(ready.has_value()) << "child never became ready";
  ASSERT_EQ(*ready, "READY");
  const std::string link = dir_.File("b.db");
  ASSERT_EQ(::link(path_.c_str(), link.c_str()), 0) << std::strerror(errno);
  const auto before = ::mqlite::testing::Snapshot(dir_.path());

  MQ_EXPECT_CODE(OpenSqliteStore({.path = link}), kDbLocked);
  MQ_EXPECT_CODE(OpenEngineAt(link, Options()), kDbLocked);
  EXPECT_TRUE(::mqlite::testing::Snapshot(dir_.path()) == before) << "a refused open wrote";

  child.CloseStdin();
  int st = child.Wait();
  ASSERT_TRUE(WIFEXITED(st)) << "status " << st;
  EXPECT_EQ(WEXITSTATUS(st), 0);
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, OpenEngineAt(link, Options()));
  MQ_EXPECT_OK(e->GetQueue("jobs"));
}

// ---- SPEC §10: the file-size limit is StoreFull, never "retry" ----------------------

// RLIMIT_FSIZE (SIGXFSZ ignored) makes writes past the limit fail with EFBIG;
// SQLite reports that as an I/O error, which must still map to StoreFull.
TEST_F(ProcessTest, Spec10_FileSizeLimitAtOpenIsStoreFullAndLeavesNoFiles) {
  Child child;
  ASSERT_TRUE(child.Start({"fsize", path_, "16384"}));
  std::optional<std::string> line = child.ReadLine();
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->rfind("OPEN StoreFull: ", 0), 0u) << *line;
  EXPECT_NE(line->find(path_), std::string::npos) << *line;
  int st = child.Wait();
  ASSERT_TRUE(WIFEXITED(st)) << "status " << st;
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_TRUE(std::filesystem::is_empty(dir_.path()))
      << "a refused open left files behind: " << ::mqlite::testing::Snapshot(dir_.path()).size();
}

TEST_F(ProcessTest, Spec10_FileSizeLimitOnSendIsStoreFullAndKeepsEveryAcknowledgedSend) {
  Child child;
  ASSERT_TRUE(child.Start({"fsize", path_, std::to_string(1 << 20)}));
  std::optional<std::string> line = child.ReadLine();
  ASSERT_TRUE(line.has_value());
  ASSERT_EQ(line->rfind("SENT ", 0), 0u) << *line;
  std::istringstream in(line->substr(5));
  int64_t sent = -1;
  std::string code;
  in >> sent >> code;
  EXPECT_GT(sent, 10);
  EXPECT_EQ(code, "StoreFull:") << *line;
  EXPECT_NE(line->find("'" + path_ + "'"), std::string::npos) << *line;
  int st = child.Wait();
  ASSERT_TRUE(WIFEXITED(st)) << "status " << st;
  EXPECT_EQ(WEXITSTATUS(st), 0);

  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open());
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats stats, e->Stats("jobs"));
  EXPECT_EQ(stats.total, sent) << "every acknowledged send, and nothing else";
}

// ---- SPEC §7.1 / §7.4 / §7.5: SIGKILL with messages locked ---------------------------

struct CrashCase {
  int max_delivery_count;
};

class CrashTest : public ProcessTest, public ::testing::WithParamInterface<CrashCase> {};

TEST_P(CrashTest, Spec7_1_SigkillWithLockedMessagesRecoversOnReopen) {
  constexpr int kSent = 20;
  constexpr int kLocked = 5;
  const int max_delivery = GetParam().max_delivery_count;

  Child child;
  ASSERT_TRUE(child.Start({"crash", path_, std::to_string(kSent), std::to_string(kLocked),
                           std::to_string(max_delivery)}));
  std::optional<std::string> ready = child.ReadLine();
  ASSERT_TRUE(ready.has_value()) << "child never became ready";
  ASSERT_EQ(ready->rfind("READY ", 0), 0u) << *ready;
  std::vector<int64_t> locked_seqs = ParseSeqList(ready->substr(6));
  ASSERT_EQ(locked_seqs.size(), static_cast<size_t>(kLocked));
  const std::set<int64_t> locked(locked_seqs.begin(), locked_seqs.end());

  int st = child.KillAndWait();
  ASSERT_TRUE(WIFSIGNALED(st)) << "status " << st;
  ASSERT_EQ(WTERMSIG(st), SIGKILL);

  // Same clock as the child: the leases it took have NOT expired; recovery of
  // an exclusive store reclaims them anyway, at open (§7.1).
  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open());
  std::map<int64_t, Message> all = PeekAll(*e);
  ASSERT_EQ(all.size(), static_cast<size_t>(kSent)) << "§7.5: nothing committed is lost";
  std::set<std::string> bodies;
  for (const auto& [seq, m] : all) {
    SCOPED_TRACE("seq " + std::to_string(seq));
    bodies.insert(m.body);
    ASSERT_TRUE(m.message_id.has_value());
    EXPECT_EQ(m.body, "msg-" + m.message_id->substr(3));
    EXPECT_NE(m.state, MessageState::kLocked);
    EXPECT_TRUE(m.lock_token.empty());
    EXPECT_EQ(m.locked_until, 0);
    if (locked.count(seq)) {
      EXPECT_EQ(m.delivery_count, 1) << "the delivery count survives the crash";
      if (max_delivery == 1) {
        EXPECT_EQ(m.state, MessageState::kDeadLettered);
        EXPECT_EQ(m.dead_letter_reason, std::optional<std::string>("MaxDeliveryCountExceeded"));
      } else {
        EXPECT_EQ(m.state, MessageState::kActive);
      }
    } else {
      EXPECT_EQ(m.state, MessageState::kActive);
      EXPECT_EQ(m.delivery_count, 0);
    }
  }
  EXPECT_EQ(bodies.size(), static_cast<size_t>(kSent));
  for (int i = 0; i < kSent; ++i) EXPECT_EQ(bodies.count("msg-" + std::to_string(i)), 1u) << i;

  MQ_ASSERT_OK_AND_ASSIGN(QueueStats stats, e->Stats("jobs"));
  EXPECT_EQ(stats.total, kSent);
  EXPECT_EQ(stats.locked, 0);
  if (max_delivery == 1) {
    EXPECT_EQ(stats.dead_lettered, kLocked);
    EXPECT_EQ(stats.active, kSent - kLocked);
  } else {
    EXPECT_EQ(stats.dead_lettered, 0);
    EXPECT_EQ(stats.active, kSent);
  }

  // §7.4: the next delivery continues the count; nothing goes past the bound.
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, e->Receive("jobs", {.max_messages = 256}));
  EXPECT_EQ(got.size(), static_cast<size_t>(max_delivery == 1 ? kSent - kLocked : kSent));
  for (const Message& m : got) {
    EXPECT_LE(m.delivery_count, max_delivery);
    EXPECT_EQ(m.delivery_count, locked.count(m.seq) ? 2 : 1) << "seq " << m.seq;
    MQ_EXPECT_OK(e->Complete("jobs", m.seq, m.lock_token));
  }
}

INSTANTIATE_TEST_SUITE_P(MaxDelivery, CrashTest, ::testing::Values(CrashCase{10}, CrashCase{1}),
                         [](const ::testing::TestParamInfo<CrashCase>& info) {
                           return "max" + std::to_string(info.param.max_delivery_count);
                         });

TEST_F(ProcessTest, Spec7_5_EveryAcknowledgedSendSurvivesSigkill) {
  constexpr int kAcked = 300;
  Child child;
  ASSERT_TRUE(child.Start({"stream", path_}));
  std::map<int64_t, std::string> acked;  // seq → body
  while (acked.size() < static_cast<size_t>(kAcked)) {
    std::optional<std::string> line = child.ReadLine();
    ASSERT_TRUE(line.has_value()) << "child stopped after " << acked.size() << " sends";
    ASSERT_EQ(line->rfind("SENT ", 0), 0u) << *line;
    std::istringstream in(line->substr(5));
    int64_t seq = 0;
    int64_t i = -1;
    in >> seq >> i;
    ASSERT_GT(seq, 0);
    ASSERT_EQ(i, static_cast<int64_t>(acked.size()));
    if (!acked.empty()) {
      ASSERT_GT(seq, acked.rbegin()->first) << "§3: seq strictly increasing";
    }
    acked.emplace(seq, "stream-" + std::to_string(i));
  }
  int st = child.KillAndWait();  // mid-stream: a Send may be in flight
  ASSERT_TRUE(WIFSIGNALED(st));
  ASSERT_EQ(WTERMSIG(st), SIGKILL);

  MQ_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Engine> e, Open());
  std::map<int64_t, Message> all = PeekAll(*e);
  ASSERT_GE(all.size(), acked.size());
  for (const auto& [seq, body] : acked) {
    auto it = all.find(seq);
    ASSERT_NE(it, all.end()) << "acknowledged seq " << seq << " lost";
    EXPECT_EQ(it->second.body, body);
    EXPECT_EQ(it->second.state, MessageState::kActive);
  }
  // Whatever else is there is a complete later send, never a torn one.
  int64_t max_seq = 0;
  for (const auto& [seq, m] : all) {
    EXPECT_EQ(m.body.rfind("stream-", 0), 0u) << m.body;
    max_seq = std::max(max_seq, seq);
  }
  MQ_ASSERT_OK_AND_ASSIGN(int64_t next, e->Send("jobs", {.body = "after crash"}));
  EXPECT_GT(next, max_seq) << "§3: seq never reused";
}

}  // namespace
}  // namespace mqlite
