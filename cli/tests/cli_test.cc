// The real `mqlite` binary, run as an operator would: exit codes, text and
// JSON output, and what each command did to a real store (docs/cli.md).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/open.h"

extern char** environ;

namespace mqlite {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
  std::vector<std::string> lines() const {
    std::vector<std::string> v;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  }
};

// Runs the binary with `args`, feeding `input` on stdin; `after_start` (if
// set) runs while it is running, with its pid.
Outcome Mqlite(const std::vector<std::string>& args, const std::string& input = "",
           const std::function<void(pid_t)>& after_start = {}) {
  int in[2], out[2], err[2];
  EXPECT_EQ(pipe(in), 0);
  EXPECT_EQ(pipe(out), 0);
  EXPECT_EQ(pipe(err), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) {
    posix_spawn_file_actions_addclose(&fa, fd);
  }
  std::vector<std::string> all = {MQLITE_CLI_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, MQLITE_CLI_BINARY, &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // Small inputs fit the pipe buffer; write and close so the child sees EOF.
  if (!input.empty()) {
    EXPECT_EQ(write(in[1], input.data(), input.size()), ssize_t(input.size()));
  }
  close(in[1]);
  if (after_start) after_start(pid);
  Outcome r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    poll(fds, 2, -1);
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, size_t(n));
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

bool Has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

#define EXPECT_RUN(run, want)                                                          \
  EXPECT_EQ((run).code, (want)) << "stdout:\n" << (run).out << "stderr:\n" << (run).err

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string t = (fs::temp_directory_path() / "mqlite-cli-XXXXXX").string();
    dir_ = mkdtemp(t.data());
    url_ = "sqlite:" + dir_ + "/q.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `mqlite --store URL args...`
  Outcome On(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"--store", url_});
    return Mqlite(args, input);
  }
  void Ok(const std::vector<std::string>& args, const std::string& input = "") {
    Outcome r = On(args, input);
    ASSERT_EQ(r.code, 0) << "mqlite " << ::testing::PrintToString(args) << "\nstdout:\n"
                         << r.out << "stderr:\n"
                         << r.err;
  }

  // `mqlite --json send QUEUE --body BODY extra...`, returning the seq it
  // printed. Seqs are not consecutive across commands (a store may reserve a
  // block of seqs per open), so tests never assume them.
  int64_t Send(const std::string& queue, const std::string& body,
               std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--json", "send", queue, "--body", body};
    args.insert(args.end(), extra.begin(), extra.end());
    Outcome r = On(args);
    EXPECT_EQ(r.code, 0) << r.err;
    const std::string key = "\"seq\":";
    const size_t at = r.out.find(key);
    if (at == std::string::npos) {
      ADD_FAILURE() << "no seq in: " << r.out;
      return -1;
    }
    return std::stoll(r.out.substr(at + key.size()));
  }
  static std::string SeqField(int64_t seq) { return "\"seq\":" + std::to_string(seq) + ","; }

  std::string dir_;
  std::string url_;
};

TEST_F(CliTest, UsageErrorsExitTwoAndSayWhat) {
  Outcome none = Mqlite({});
  EXPECT_RUN(none, 2);
  EXPECT_TRUE(Has(none.err, "no command")) << none.err;
  Outcome help = Mqlite({"--help"});
  EXPECT_RUN(help, 0);
  EXPECT_TRUE(Has(help.out, "queue create NAME")) << help.out;
  EXPECT_TRUE(Has(help.out, "sqlite:PATH")) << help.out;
  EXPECT_TRUE(Has(help.out, "Exit codes: 0 ok, 1 the operation failed, 2 usage"));

  Outcome unknown = On({"frobnicate"});
  EXPECT_RUN(unknown, 2);
  EXPECT_TRUE(Has(unknown.err, "unknown command 'frobnicate'")) << unknown.err;
  Outcome flag = On({"peek", "jobs", "--colour"});
  EXPECT_RUN(flag, 2);
  EXPECT_TRUE(Has(flag.err, "unknown option '--colour'")) << flag.err;
  Outcome misplaced = On({"peek", "jobs", "--reason", "x"});
  EXPECT_RUN(misplaced, 2);
  EXPECT_TRUE(Has(misplaced.err, "'peek' takes no --reason")) << misplaced.err;
  Outcome missing_value = On({"peek", "jobs", "--limit"});
  EXPECT_RUN(missing_value, 2);
  Outcome bad_int = On({"peek", "jobs", "--limit", "ten"});
  EXPECT_RUN(bad_int, 2);
  EXPECT_TRUE(Has(bad_int.err, "--limit ten: not an integer")) << bad_int.err;
  Outcome bad_duration = On({"send", "jobs", "--body", "x", "--delay", "soon"});
  EXPECT_RUN(bad_duration, 2);
  EXPECT_TRUE(Has(bad_duration.err, "not a duration")) << bad_duration.err;
  Outcome no_store = Mqlite({"queue", "list"});
  EXPECT_RUN(no_store, 2);
  EXPECT_TRUE(Has(no_store.err, "--store URL")) << no_store.err;
  Outcome bad_url = Mqlite({"--store", "redis://x", "queue", "list"});
  EXPECT_RUN(bad_url, 2);
  EXPECT_TRUE(Has(bad_url.err, "unknown store 'redis'")) << bad_url.err;
  Outcome no_yes = On({"queue", "delete", "jobs"});
  EXPECT_RUN(no_yes, 2);
  EXPECT_TRUE(Has(no_yes.err, "--yes")) << no_yes.err;
  // None of these created the store file (usage is checked first) except
  // where the store had to be opened to know.
  EXPECT_FALSE(fs::exists(dir_ + "/q.db"));
}

TEST_F(CliTest, OperationFailuresExitOneWithTheStatusCode) {
  Ok({"queue", "create", "jobs"});
  Outcome r = On({"peek", "nope"});
  EXPECT_RUN(r, 1);
  EXPECT_TRUE(Has(r.err, "QueueNotFound")) << r.err;
  Outcome j = On({"--json", "stats", "nope"});
  EXPECT_RUN(j, 1);
  EXPECT_TRUE(Has(j.err, R"({"error":{"code":"QueueNotFound","message":)")) << j.err;
  Outcome d = On({"dead-letter", "jobs", "99", "--reason", "stuck"});
  EXPECT_RUN(d, 1);
  EXPECT_TRUE(Has(d.err, "NotFound")) << d.err;
}

TEST_F(CliTest, QueuesAreCreatedListedUpdatedAndDeleted) {
  Ok({"queue", "create", "jobs", "--lock-duration", "45s", "--max-delivery", "3", "--ordering",
      "group_fifo"});
  Ok({"queue", "create", "mail"});
  // create on an existing queue changes nothing, and says so.
  Outcome again = On({"queue", "create", "jobs", "--max-delivery", "7"});
  EXPECT_RUN(again, 0);
  EXPECT_TRUE(Has(again.err, "exists; its configuration was not changed")) << again.err;
  Outcome list = On({"--json", "queue", "list"});
  EXPECT_RUN(list, 0);
  ASSERT_EQ(list.lines().size(), 2u) << list.out;
  EXPECT_EQ(list.lines()[0],
            R"({"name":"jobs","lock_duration_ms":45000,"max_delivery_count":3,"default_ttl_ms":0,)"
            R"("dead_letter_on_expire":true,"dedup_window_ms":0,"ordering":"group_fifo",)"
            R"("dlq_max_age_ms":0,"dlq_max_count":0,"dlq_max_bytes":0,"max_message_bytes":0})");
  Outcome table = On({"queue", "list"});
  EXPECT_TRUE(Has(table.out, "NAME")) << table.out;
  EXPECT_TRUE(Has(table.out, "45s")) << table.out;
  // update changes what is given and keeps the rest.
  Ok({"queue", "update", "jobs", "--max-delivery", "5", "--default-ttl", "1h"});
  Outcome got = On({"--json", "queue", "get", "jobs"});
  EXPECT_TRUE(Has(got.out, R"("lock_duration_ms":45000,"max_delivery_count":5,)"
                           R"("default_ttl_ms":3600000)"))
      << got.out;
  Ok({"queue", "delete", "mail", "--yes"});
  Outcome after = On({"--json", "queue", "list"});
  EXPECT_EQ(after.lines().size(), 1u) << after.out;
}

TEST_F(CliTest, SendTakesTheBodyFromAFlagAFileOrStdin) {
  Ok({"queue", "create", "jobs"});
  Outcome s1 = On({"--json", "send", "jobs", "--body", "from-flag", "--property", "k=v", "--property",
               "kind=test", "--priority", "7", "--subject", "hello"});
  EXPECT_RUN(s1, 0);
  EXPECT_EQ(s1.out, "{\"queue\":\"jobs\",\"seq\":1,\"duplicate\":false}\n");
  { std::ofstream(dir_ + "/body.bin", std::ios::binary) << std::string("bin\0\xff", 5); }
  Outcome s2 = On({"--json", "send", "jobs", "--file", dir_ + "/body.bin"});
  EXPECT_RUN(s2, 0);
  const int64_t seq2 = std::stoll(s2.out.substr(s2.out.find("\"seq\":") + 6));
  EXPECT_GT(seq2, 1);
  Ok({"send", "jobs", "--group", "g1", "--delay", "1h"}, "from stdin\n");
  Outcome peek = On({"--json", "peek", "jobs"});
  EXPECT_RUN(peek, 0);
  const std::vector<std::string> lines = peek.lines();
  ASSERT_EQ(lines.size(), 3u) << peek.out;
  EXPECT_TRUE(Has(lines[0], R"("body":"from-flag")")) << lines[0];
  EXPECT_TRUE(Has(lines[0], R"("properties":{"k":"v","kind":"test"})")) << lines[0];
  EXPECT_TRUE(Has(lines[0], R"("priority":7)")) << lines[0];
  EXPECT_TRUE(Has(lines[0], R"("subject":"hello")")) << lines[0];
  // Bytes that are not UTF-8 come base64-encoded, exactly.
  EXPECT_TRUE(Has(lines[1], R"("body":null,"body_base64":"YmluAP8=")")) << lines[1];
  EXPECT_TRUE(Has(lines[2], R"("state":"scheduled")")) << lines[2];
  EXPECT_TRUE(Has(lines[2], R"("body":"from stdin\n")")) << lines[2];
  EXPECT_TRUE(Has(lines[2], R"("group_id":"g1")")) << lines[2];
  // Peek by state and paging.
  Outcome scheduled = On({"--json", "peek", "jobs", "--state", "scheduled"});
  EXPECT_EQ(scheduled.lines().size(), 1u) << scheduled.out;
  Outcome page = On({"--json", "peek", "jobs", "--from", "2", "--limit", "1"});
  ASSERT_EQ(page.lines().size(), 1u) << page.out;
  EXPECT_TRUE(Has(page.lines()[0], "{" + SeqField(seq2))) << page.out;
  Outcome text = On({"peek", "jobs"});
  EXPECT_TRUE(Has(text.out, "bin\\x00\\xff")) << text.out;
  Outcome bad = On({"send", "jobs", "--body", "x", "--priority", "12"});
  EXPECT_RUN(bad, 2);
}

TEST_F(CliTest, ReceiveSettlesAsAskedAndPeekNeverShowsTokens) {
  Ok({"queue", "create", "jobs"});
  std::vector<int64_t> seq = {0};
  for (int i = 1; i <= 4; ++i) seq.push_back(Send("jobs", "m" + std::to_string(i)));
  Outcome done = On({"--json", "receive", "jobs", "--complete"});
  EXPECT_RUN(done, 0);
  EXPECT_TRUE(Has(done.out, SeqField(seq[1]))) << done.out;
  EXPECT_TRUE(Has(done.out, R"("action":"completed")")) << done.out;
  EXPECT_FALSE(Has(done.out, "lock_token")) << done.out;
  Outcome back = On({"--json", "receive", "jobs", "--abandon"});
  EXPECT_TRUE(Has(back.out, SeqField(seq[2]))) << back.out;
  EXPECT_TRUE(Has(back.out, R"("action":"abandoned")")) << back.out;
  // The abandoned m2 is first in line again: --delete takes m2 and m3.
  Outcome gone = On({"--json", "receive", "jobs", "--delete", "--max", "2"});
  ASSERT_EQ(gone.lines().size(), 2u) << gone.out;
  EXPECT_TRUE(Has(gone.lines()[0], SeqField(seq[2]))) << gone.out;
  EXPECT_TRUE(Has(gone.lines()[1], SeqField(seq[3]))) << gone.out;
  // Left locked: the receiver is shown its token and told what happens.
  Outcome held = On({"receive", "jobs"});
  EXPECT_RUN(held, 0);
  EXPECT_TRUE(Has(held.out, "seq " + std::to_string(seq[4]) + " ")) << held.out;
  EXPECT_TRUE(Has(held.out, "token ")) << held.out;
  EXPECT_TRUE(Has(held.err, "left locked")) << held.err;
  Outcome held_json = On({"--json", "receive", "jobs"});
  EXPECT_TRUE(Has(held_json.out, R"("lock_token":")")) << held_json.out;
  Outcome left = On({"--json", "peek", "jobs"});
  ASSERT_EQ(left.lines().size(), 1u) << left.out;
  // m4, received twice (the store is exclusive, so the second receive's
  // open reclaimed the lease the first left), still locked: peek only
  // inspects, and has no token field at all.
  EXPECT_TRUE(Has(left.out, SeqField(seq[4]))) << left.out;
  EXPECT_TRUE(Has(left.out, R"("state":"locked")")) << left.out;
  EXPECT_TRUE(Has(left.out, R"("delivery_count":2)")) << left.out;
  EXPECT_FALSE(Has(left.out, "lock_token")) << left.out;
  Outcome empty = On({"--json", "receive", "other"});
  EXPECT_RUN(empty, 1);
  EXPECT_TRUE(Has(empty.err, R"({"error":{"code":"QueueNotFound",)")) << empty.err;
  Ok({"queue", "create", "other"});
  Outcome nothing = On({"receive", "other", "--wait", "50ms"});
  EXPECT_RUN(nothing, 0);
  EXPECT_TRUE(Has(nothing.err, "no message")) << nothing.err;
}

TEST_F(CliTest, DeadLettersAreListedRedrivenAndPurgedWithProgress) {
  Ok({"queue", "create", "jobs"});
  Ok({"queue", "create", "parking"});
  std::vector<int64_t> seq;
  for (int i = 1; i <= 7; ++i) seq.push_back(Send("jobs", "m" + std::to_string(i)));
  for (int i = 1; i <= 7; ++i) {
    Ok({"dead-letter", "jobs", std::to_string(seq[i - 1]), "--reason", "bad-input",
        "--description", "row " + std::to_string(i)});
  }
  Outcome list = On({"dlq", "list", "jobs", "--limit", "3"});
  EXPECT_RUN(list, 0);
  EXPECT_TRUE(Has(list.out, "bad-input")) << list.out;
  EXPECT_EQ(std::count(list.out.begin(), list.out.end(), '\n'), 4) << list.out;  // header + 3
  Outcome jl = On({"--json", "dlq", "list", "jobs"});
  ASSERT_EQ(jl.lines().size(), 7u);
  EXPECT_TRUE(Has(jl.lines()[0], R"("dead_letter_reason":"bad-input","dead_letter_description":"row 1")"))
      << jl.lines()[0];
  // Redrive 3 to another queue, in chunks of 2: progress on stderr.
  Outcome rd = On({"--json", "dlq", "redrive", "jobs", "--to", "parking", "--max", "3", "--batch",
               "2"});
  EXPECT_RUN(rd, 0);
  EXPECT_EQ(rd.out, "{\"queue\":\"jobs\",\"redriven\":3,\"to\":\"parking\"}\n");
  EXPECT_TRUE(Has(rd.err, "dlq redrive jobs 2/3")) << rd.err;
  Outcome st = On({"--json", "stats", "parking"});
  EXPECT_TRUE(Has(st.out, R"("active":3,)")) << st.out;
  Outcome pg = On({"dlq", "purge", "jobs", "--batch", "3"});
  EXPECT_RUN(pg, 0);
  EXPECT_TRUE(Has(pg.out, "purged 4 dead letters from jobs")) << pg.out;
  EXPECT_TRUE(Has(pg.err, "dlq purge jobs 3/4")) << pg.err;
  Outcome none = On({"--json", "dlq", "list", "jobs"});
  EXPECT_EQ(none.out, "");
}

TEST_F(CliTest, StatsCoverEveryQueueAndWatchRefreshes) {
  Ok({"queue", "create", "a"});
  Ok({"queue", "create", "b"});
  Ok({"send", "a", "--body", "x"});
  Ok({"send", "b", "--body", "yy", "--delay", "1h"});
  Outcome all = On({"--json", "stats"});
  EXPECT_RUN(all, 0);
  ASSERT_EQ(all.lines().size(), 2u);
  EXPECT_EQ(all.lines()[1],
            R"({"queue":"b","active":0,"locked":0,"deferred":0,"scheduled":1,"dead_lettered":0,)"
            R"("total":1,"body_bytes":2,"oldest_claimable_age_ms":0})");
  Outcome table = On({"stats"});
  EXPECT_TRUE(Has(table.out, "SCHEDULED")) << table.out;
  Outcome watch = On({"--json", "stats", "a", "--watch", "--interval", "20ms", "--count", "3"});
  EXPECT_RUN(watch, 0);
  ASSERT_EQ(watch.lines().size(), 3u) << watch.out;
  EXPECT_TRUE(Has(watch.lines()[2], R"("at":)")) << watch.out;
  Outcome no_watch = On({"stats", "--count", "2"});
  EXPECT_RUN(no_watch, 2);
}

TEST_F(CliTest, CtrlCEndsAWatchCleanly) {
  Ok({"queue", "create", "a"});
  Outcome watch = Mqlite({"--store", url_, "stats", "--watch", "--interval", "10s"}, "",
                     [](pid_t pid) {
                       std::this_thread::sleep_for(std::chrono::milliseconds(500));
                       kill(pid, SIGINT);
                     });
  EXPECT_RUN(watch, 0);
  EXPECT_TRUE(Has(watch.out, "QUEUE")) << watch.out;
}

TEST_F(CliTest, MaintenancePromotesDueSchedules) {
  Ok({"queue", "create", "jobs"});
  Ok({"send", "jobs", "--body", "soon", "--delay", "1ms"});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Outcome m = On({"--json", "maintenance"});
  EXPECT_RUN(m, 0);
  EXPECT_TRUE(Has(m.out, R"("promoted":1,)")) << m.out;
  Outcome peek = On({"--json", "peek", "jobs", "--state", "active"});
  EXPECT_EQ(peek.lines().size(), 1u) << peek.out;
}

TEST_F(CliTest, AStoreInUseIsRefusedNamingWhy) {
  Ok({"queue", "create", "jobs"});
  Result<std::unique_ptr<Store>> held = OpenStoreUrl(url_);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  Outcome r = On({"send", "jobs", "--body", "x"});
  EXPECT_RUN(r, 1);
  EXPECT_TRUE(Has(r.err, "DbLocked")) << r.err;
  EXPECT_TRUE(Has(r.err, "open in another process")) << r.err;
  EXPECT_TRUE(Has(r.err, "inspect it as it runs")) << r.err;
}

// An application (this test process) runs the store with its engine; the
// operator's read-only commands look at it without its lock, see every
// commit, and leave its leases alone.
void InspectARunningApplication(CliTest& t, const std::string& url,
                                const std::function<Outcome(std::vector<std::string>)>& on) {
  EngineOptions eo;
  eo.background_maintenance = false;
  Result<std::unique_ptr<Store>> store = OpenStoreUrl(url);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Result<std::unique_ptr<Engine>> app = Engine::Open(std::move(*store), eo);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  Engine& mq = **app;
  ASSERT_TRUE(mq.CreateQueue({.name = "jobs"}).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(mq.Send("jobs", {.body = "m" + std::to_string(i)}).ok());
  Result<std::vector<Message>> held = mq.Receive("jobs");
  ASSERT_TRUE(held.ok() && held->size() == 1) << held.status().ToString();
  ASSERT_TRUE(mq.Send("jobs", {.body = "dead"}).ok());
  Result<std::vector<Message>> dead = mq.Receive("jobs", {.max_messages = 8});
  ASSERT_TRUE(dead.ok()) << dead.status().ToString();
  for (const Message& m : *dead) {
    if (m.body == "dead") {
      ASSERT_TRUE(mq.Reject("jobs", m.seq, m.lock_token, "bad", "").ok());
    } else {
      ASSERT_TRUE(mq.Abandon("jobs", m.seq, m.lock_token).ok());
    }
  }

  Outcome stats = on({"--json", "stats", "jobs"});
  EXPECT_RUN(stats, 0);
  EXPECT_TRUE(Has(stats.out, R"("active":2,"locked":1,)")) << stats.out;
  EXPECT_TRUE(Has(stats.out, R"("dead_lettered":1,)")) << stats.out;
  Outcome peek = on({"--json", "peek", "jobs"});
  EXPECT_RUN(peek, 0);
  EXPECT_EQ(peek.lines().size(), 4u) << peek.out;  // the dead letter too
  EXPECT_TRUE(Has(peek.out, R"("state":"locked")")) << peek.out;
  EXPECT_FALSE(Has(peek.out, "lock_token")) << peek.out;
  EXPECT_RUN(on({"queue", "list"}), 0);
  EXPECT_RUN(on({"--json", "queue", "get", "jobs"}), 0);
  Outcome dlq = on({"--json", "dlq", "list", "jobs"});
  EXPECT_RUN(dlq, 0);
  EXPECT_TRUE(Has(dlq.out, R"("body":"dead")")) << dlq.out;
  // Writing needs the lock the application holds.
  Outcome send = on({"send", "jobs", "--body", "x"});
  EXPECT_RUN(send, 1);
  EXPECT_TRUE(Has(send.err, "DbLocked")) << send.err;
  // A commit after the inspector opened is seen by the next look.
  ASSERT_TRUE(mq.Send("jobs", {.body = "later"}).ok());
  EXPECT_TRUE(Has(on({"--json", "stats", "jobs"}).out, R"("active":3,"locked":1,)"));
  // The inspections left the application's lease alone.
  EXPECT_TRUE(mq.Complete("jobs", (*held)[0].seq, (*held)[0].lock_token).ok());
  ASSERT_TRUE(mq.Close().ok());
  (void)t;
}

TEST_F(CliTest, InspectsASqliteStoreItsApplicationIsRunning) {
  InspectARunningApplication(*this, url_, [this](std::vector<std::string> a) { return On(a); });
}

TEST_F(CliTest, InspectsAnLmdbStoreItsApplicationIsRunning) {
  url_ = "lmdb:" + dir_ + "/env";
  InspectARunningApplication(*this, url_, [this](std::vector<std::string> a) { return On(a); });
}

TEST_F(CliTest, InspectionNeverCreatesAStore) {
  Outcome missing = On({"stats"});
  EXPECT_RUN(missing, 1);
  EXPECT_TRUE(Has(missing.err, "NotFound")) << missing.err;
  EXPECT_FALSE(fs::exists(dir_ + "/q.db"));
  url_ = "lmdb:" + dir_ + "/env";
  Outcome no_env = On({"peek", "jobs"});
  EXPECT_RUN(no_env, 1);
  EXPECT_TRUE(Has(no_env.err, "NotFound")) << no_env.err;
  EXPECT_FALSE(fs::exists(dir_ + "/env"));
}

// The application grows its LMDB map while `stats --watch` reads: the
// inspector follows the new size (MDB_MAP_RESIZED) instead of failing.
TEST_F(CliTest, AWatchFollowsTheApplicationsLmdbMapGrowth) {
  url_ = "lmdb:" + dir_ + "/env?map_size=256KiB";
  EngineOptions eo;
  eo.background_maintenance = false;
  Result<std::unique_ptr<Store>> store = OpenStoreUrl(url_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Result<std::unique_ptr<Engine>> app = Engine::Open(std::move(*store), eo);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  ASSERT_TRUE((*app)->CreateQueue({.name = "jobs"}).ok());
  const int64_t map_before = static_cast<int64_t>(fs::file_size(dir_ + "/env/data.mdb"));
  Outcome watch = Mqlite({"--store", url_, "--json", "stats", "jobs", "--watch", "--interval", "50ms"},
                         "", [&](pid_t pid) {
                           // Let the watch open and read at the old size first.
                           std::this_thread::sleep_for(std::chrono::milliseconds(400));
                           for (int i = 0; i < 64; ++i) {
                             EXPECT_TRUE(
                                 (*app)->Send("jobs", {.body = std::string(32 << 10, 'x')}).ok());
                           }
                           // Several polls after the last commit, then Ctrl-C.
                           std::this_thread::sleep_for(std::chrono::milliseconds(1500));
                           kill(pid, SIGINT);
                         });
  EXPECT_RUN(watch, 0);
  EXPECT_GT(static_cast<int64_t>(fs::file_size(dir_ + "/env/data.mdb")), 4 * map_before);
  const std::vector<std::string> lines = watch.lines();
  ASSERT_GE(lines.size(), 2u) << watch.out;
  EXPECT_TRUE(Has(lines.front(), R"("active":0,)")) << lines.front();
  EXPECT_TRUE(Has(lines.back(), R"("active":64,)")) << lines.back();
  ASSERT_TRUE((*app)->Close().ok());
}

TEST_F(CliTest, LmdbAndMemoryStoresWork) {
  url_ = "lmdb:" + dir_ + "/env?map_size=1MiB";
  Ok({"queue", "create", "jobs"});
  Ok({"send", "jobs", "--body", "on lmdb"});
  Outcome peek = On({"--json", "peek", "jobs"});
  EXPECT_TRUE(Has(peek.out, R"("body":"on lmdb")")) << peek.out;
  Outcome done = On({"receive", "jobs", "--complete"});
  EXPECT_RUN(done, 0);
  EXPECT_TRUE(Has(done.out, "completed")) << done.out;
  // memory: lives as long as the process: each command starts empty.
  url_ = "memory:";
  Outcome mem = On({"--json", "queue", "list"});
  EXPECT_RUN(mem, 0);
  EXPECT_EQ(mem.out, "");
  Outcome stores = Mqlite({"--json", "stores"});
  EXPECT_TRUE(Has(stores.out, R"({"scheme":"lmdb"})")) << stores.out;
}

}  // namespace
}  // namespace mqlite
