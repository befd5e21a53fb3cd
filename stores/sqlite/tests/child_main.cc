// mqlite_sqlite_test_child: the other process in process_test.cc.
//
//   mqlite_sqlite_test_child hold   <db>
//       Opens <db>, creates queue "jobs", prints "READY", then waits for EOF on
//       stdin, closes the engine and exits 0.
//   mqlite_sqlite_test_child crash  <db> <n> <k> <max_delivery_count>
//       Opens <db>, creates "jobs" (max_delivery_count as given), sends n
//       messages one commit each (body "msg-<i>", message_id "id-<i>"),
//       receives k of them with PeekLock in one call, prints
//       "READY <seq>,<seq>,..." (the locked seqs), then waits to be killed.
//   mqlite_sqlite_test_child stream <db>
//       Opens <db>, creates "jobs", and sends "stream-<i>" forever, printing
//       "SENT <seq> <i>" after each Send has returned OK (= committed), until
//       it is killed.
//   mqlite_sqlite_test_child fsize  <db> <limit-bytes>
//       Sets RLIMIT_FSIZE to <limit-bytes> with SIGXFSZ ignored (so a write
//       past it fails with EFBIG instead of killing the process), opens <db>
//       (printing "OPEN <status>" and exiting 0 if that fails), creates
//       "jobs", then sends 4000-byte bodies until a Send fails and prints
//       "SENT <n> <status>" (n = the sends that succeeded), closes, exits 0.
//
// Protocol: one line per message on stdout, written with write(2) (no stdio
// buffering), so the parent sees a line only once the step is done. Errors
// print "ERROR <status>" and exit 2. The clock is a ManualClock at the same
// start as the parent's fixtures, so leases taken here are still "live" when
// the parent reopens: recovery must not depend on them expiring (SPEC §7.1).
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "mqlite/clock.h"
#include "mqlite/engine.h"
#include "mqlite/sqlite.h"

namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

void WriteLine(const std::string& line) {
  std::string s = line + "\n";
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(STDOUT_FILENO, s.data() + off, s.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::_Exit(4);  // the parent went away
    }
    off += static_cast<size_t>(n);
  }
}

[[noreturn]] void Fail(const mqlite::Status& s) {
  WriteLine("ERROR " + s.ToString());
  std::_Exit(2);
}

// Blocks until stdin reaches EOF (the parent closed its end) or an error.
void WaitForEof() {
  char buf[64];
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof(buf));
    if (n == 0) return;
    if (n < 0 && errno != EINTR) return;
  }
}

std::unique_ptr<mqlite::Engine> OpenOrDie(const std::string& path, mqlite::Clock* clock) {
  auto store = mqlite::OpenSqliteStore({.path = path});
  if (!store.has_value()) Fail(store.error());
  mqlite::EngineOptions o;
  o.clock = clock;
  o.background_maintenance = false;
  auto engine = mqlite::Engine::Open(std::move(*store), o);
  if (!engine.has_value()) Fail(engine.error());
  return std::move(*engine);
}

int Hold(const std::string& path) {
  mqlite::ManualClock clock(kT0);
  auto engine = OpenOrDie(path, &clock);
  auto q = engine->CreateQueue({.name = "jobs"});
  if (!q.has_value()) Fail(q.error());
  WriteLine("READY");
  WaitForEof();
  mqlite::Status s = engine->Close();
  if (!s.ok()) Fail(s);
  return 0;
}

int Crash(const std::string& path, int n, int k, int max_delivery) {
  mqlite::ManualClock clock(kT0);
  auto engine = OpenOrDie(path, &clock);
  auto q = engine->CreateQueue({.name = "jobs", .max_delivery_count = max_delivery});
  if (!q.has_value()) Fail(q.error());
  for (int i = 0; i < n; ++i) {
    mqlite::OutgoingMessage m;
    m.body = "msg-" + std::to_string(i);
    m.message_id = "id-" + std::to_string(i);
    auto seq = engine->Send("jobs", m);
    if (!seq.has_value()) Fail(seq.error());
  }
  auto got = engine->Receive("jobs", {.max_messages = k});
  if (!got.has_value()) Fail(got.error());
  std::string line = "READY ";
  for (size_t i = 0; i < got->size(); ++i) {
    if (i > 0) line += ",";
    line += std::to_string((*got)[i].seq);
  }
  WriteLine(line);
  WaitForEof();   // normally SIGKILLed before this returns
  std::_Exit(3);  // never a clean close: this process "crashes" either way
}

int Stream(const std::string& path) {
  mqlite::ManualClock clock(kT0);
  auto engine = OpenOrDie(path, &clock);
  auto q = engine->CreateQueue({.name = "jobs"});
  if (!q.has_value()) Fail(q.error());
  for (int64_t i = 0; i < 10'000'000; ++i) {
    auto seq = engine->Send("jobs", {.body = "stream-" + std::to_string(i)});
    if (!seq.has_value()) Fail(seq.error());
    WriteLine("SENT " + std::to_string(*seq) + " " + std::to_string(i));
  }
  std::_Exit(3);
}

int Fsize(const std::string& path, long long limit) {
  ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit rl;
  rl.rlim_cur = static_cast<rlim_t>(limit);
  rl.rlim_max = static_cast<rlim_t>(limit);
  if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) {
    WriteLine("ERROR setrlimit");
    return 2;
  }
  auto store = mqlite::OpenSqliteStore({.path = path});
  if (!store.has_value()) {
    WriteLine("OPEN " + store.error().ToString());
    return 0;
  }
  mqlite::ManualClock clock(kT0);
  mqlite::EngineOptions o;
  o.clock = &clock;
  o.background_maintenance = false;
  auto engine = mqlite::Engine::Open(std::move(*store), o);
  if (!engine.has_value()) Fail(engine.error());
  auto q = (*engine)->CreateQueue({.name = "jobs"});
  if (!q.has_value()) Fail(q.error());
  for (int64_t n = 0;; ++n) {
    auto seq = (*engine)->Send("jobs", {.body = std::string(4000, 'f')});
    if (!seq.has_value()) {
      WriteLine("SENT " + std::to_string(n) + " " + seq.error().ToString());
      break;
    }
  }
  (void)(*engine)->Close();  // may fail to checkpoint past the limit: fine
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "hold") return Hold(args[1]);
  if (args.size() == 5 && args[0] == "crash") {
    return Crash(args[1], std::atoi(args[2].c_str()), std::atoi(args[3].c_str()),
                 std::atoi(args[4].c_str()));
  }
  if (args.size() == 2 && args[0] == "stream") return Stream(args[1]);
  if (args.size() == 3 && args[0] == "fsize") return Fsize(args[1], std::atoll(args[2].c_str()));
  WriteLine("ERROR usage: hold <db> | crash <db> <n> <k> <max_delivery> | stream <db> | fsize <db> <limit>");
  return 64;
}
