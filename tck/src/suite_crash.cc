// TckCrash — crash injection (SPEC §7.1, §7.5, §8, §12; G1, G5, G6): a child
// process killed with SIGKILL at random points, then reopened and checked.
//
// Every test runs only for a store whose data survives its process
// (CrashModel::kProcess). The parent closes its engine before each fork (no
// store is ever open across fork: LMDB forbids it), forks (no exec), and the
// child opens its own engine with OpenEngine() and runs a workload. The child
// reports every fact it learns over a pipe, one line each, BEFORE it may be
// relied on ("about to send body H", "send acknowledged as seq S", ...). The
// parent kills the child at a random point (seeded, printed, pinnable with
// MQLITE_CRASH_SEED), drains the pipe to EOF (everything the child wrote before
// it died is a fact), reaps it with a bounded wait, reopens, and checks:
//   §7.5  every acknowledged send is present with its exact body, unless it
//         was completed (or a Complete was in flight); no unknown message
//         exists except the one send that was in flight; seqs only grow (G1);
//   §7.1  an exclusive store holds no locked message after reopen: each
//         orphaned lock is active again, or dead-lettered
//         (MaxDeliveryCountExceeded) once delivery_count reached the max; a
//         shared store keeps only live leases and reclaims them on expiry;
//   §7.4  delivery_count never exceeds the max and a crash never adds a
//         delivery (it equals what the claims reported, +1 only for a claim
//         in flight at the kill);
//   §8    a Tx reported committed has both its business key and its message;
//         a Tx in flight at the kill has both or neither.
// The same data set is killed and reopened many times, so recovery also runs
// over already-recovered data (and is itself interrupted by some kills).
//
// The child never returns into gtest: it _exit()s, non-zero with an "E ..."
// report on any failure, which the parent turns into a test failure. Every
// wait is bounded, so a hung child fails the test instead of hanging it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorCrash() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

using Steady = std::chrono::steady_clock;

// Bounds that turn a hung child into a failure (far above a normal run).
constexpr auto kChildBound = std::chrono::seconds(30);
constexpr auto kReapBound = std::chrono::seconds(10);

constexpr char kQueue[] = "crash";
constexpr char kTxQueue[] = "crash-tx";
// Small, so messages held across several kills reach the DLQ (§7.1).
constexpr int32_t kMaxDeliveries = 3;

uint64_t CrashSeed() {
  if (const char* env = std::getenv("MQLITE_CRASH_SEED"); env != nullptr && *env != '\0') {
    return std::strtoull(env, nullptr, 0);
  }
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

std::string Hex(uint64_t v) {
  std::ostringstream os;
  os << std::hex << v;
  return os.str();
}

// ---- the child side -------------------------------------------------------------------

// Writes one report line; a child that cannot report has nothing to do.
void Report(int fd, const std::string& line) {
  std::string buf = line + "\n";
  const char* p = buf.data();
  size_t left = buf.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(5);
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// Reports an error and returns the child's exit code for it.
int Fail(int fd, const std::string& what) {
  std::string one_line = what;
  for (char& c : one_line) {
    if (c == '\n') c = ' ';
  }
  Report(fd, "E " + one_line);
  return 3;
}

std::string TxKey(int64_t i) { return "crash-key-" + std::to_string(i); }
std::string TxValue(int64_t i) { return "crash-value-" + std::to_string(i); }
std::string TxBody(int64_t i) { return "tx:" + std::to_string(i); }

// One committed outbox Tx: business put + Send of a message naming i.
Status OutboxTx(Engine& e, const BusinessHooks& b, int64_t i, int64_t* seq) {
  return e.Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(b.put(tx.native_handle(), TxKey(i), TxValue(i)));
    MQLITE_ASSIGN_OR_RETURN(*seq, tx.Send(kTxQueue, Out(TxBody(i))));
    return Status::OK();
  });
}

// The random workload (runs in the child). Protocol, one line each:
//   s H L        about to send a body with hash H (hex) and length L
//   S seq        that send was acknowledged
//   r            about to Receive (Peek-Lock)
//   R seq dc H L a message claimed with delivery_count dc, body hash H, length L
//   RD           the Receive returned (all its R lines written)
//   c seq        about to Complete seq
//   C seq        Complete returned OK
//   t i          about to run outbox Tx i
//   T i seq      Tx i returned OK; its message is seq
//   END          the workload finished
//   E text       an error; the child exits non-zero
int RunWorkload(Engine& e, int fd, uint64_t seed, int ops, const BusinessHooks* b,
                int64_t next_tx) {
  std::mt19937_64 rng(seed);
  std::vector<Message> held;
  for (int op = 0; op < ops; ++op) {
    const int r = static_cast<int>(rng() % 100);
    if (r < 45 || (r >= 75 && b == nullptr)) {
      std::string body = RandomBody(rng, 2048);
      Report(fd, "s " + Hex(BodyHash(body)) + " " + std::to_string(body.size()));
      Result<int64_t> seq = SendBody(e, kQueue, std::move(body));
      if (!seq.has_value()) return Fail(fd, "Send: " + seq.status().ToString());
      Report(fd, "S " + std::to_string(*seq));
    } else if (r < 65) {
      Report(fd, "r");
      Result<std::vector<Message>> got = ReceiveMany(e, kQueue, 1 + static_cast<int>(rng() % 3));
      if (!got.has_value()) return Fail(fd, "Receive: " + got.status().ToString());
      for (Message& m : *got) {
        Report(fd, "R " + std::to_string(m.seq) + " " + std::to_string(m.delivery_count) + " " +
                       Hex(BodyHash(m.body)) + " " + std::to_string(m.body.size()));
        held.push_back(std::move(m));
      }
      Report(fd, "RD");
    } else if (r < 75) {
      if (held.empty()) continue;
      const size_t k = static_cast<size_t>(rng() % held.size());
      Message m = std::move(held[k]);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
      Report(fd, "c " + std::to_string(m.seq));
      // The child's clock never moves and no other engine is open: the
      // lease is live, so Complete must succeed.
      Status s = e.Complete(kQueue, m.seq, m.lock_token);
      if (!s.ok()) return Fail(fd, "Complete " + std::to_string(m.seq) + ": " + s.ToString());
      Report(fd, "C " + std::to_string(m.seq));
    } else {
      const int64_t i = next_tx++;
      Report(fd, "t " + std::to_string(i));
      int64_t seq = 0;
      Status s = OutboxTx(e, *b, i, &seq);
      if (!s.ok()) return Fail(fd, "Tx " + std::to_string(i) + ": " + s.ToString());
      Report(fd, "T " + std::to_string(i) + " " + std::to_string(seq));
    }
  }
  Report(fd, "END");
  return 0;
}

// ---- the parent side ------------------------------------------------------------------

// A forked child with a report pipe (child → parent) and a block pipe the
// parent holds open and never writes (a child reading it blocks until killed).
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
    if (report_fd_ >= 0) ::close(report_fd_);
    if (block_fd_ >= 0) ::close(block_fd_);
  }

  // Forks. The child runs body(report_fd, block_fd) and _exit()s with its
  // result (never returns into the caller). False (with `error`) if the fork
  // failed.
  bool Start(const std::function<int(int report_fd, int block_fd)>& body, std::string* error) {
    int report[2];
    int block[2];
    if (::pipe(report) != 0) {
      *error = std::string("pipe: ") + std::strerror(errno);
      return false;
    }
    if (::pipe(block) != 0) {
      *error = std::string("pipe: ") + std::strerror(errno);
      ::close(report[0]);
      ::close(report[1]);
      return false;
    }
    std::cout.flush();
    std::cerr.flush();
    const pid_t pid = ::fork();
    if (pid < 0) {
      *error = std::string("fork: ") + std::strerror(errno);
      for (int fd : {report[0], report[1], block[0], block[1]}) ::close(fd);
      return false;
    }
    if (pid == 0) {
      ::close(report[0]);
      ::close(block[1]);
      int rc = 4;
      try {
        rc = body(report[1], block[0]);
      } catch (...) {
        rc = 6;
      }
      ::_exit(rc);
    }
    ::close(report[1]);
    ::close(block[0]);
    pid_ = pid;
    report_fd_ = report[0];
    block_fd_ = block[1];
    return true;
  }

  enum class Next { kLine, kEof, kTimeout };

  // The next report line (without '\n').
  Next ReadLine(std::string* line, Steady::time_point deadline) {
    for (;;) {
      if (size_t nl = buf_.find('\n'); nl != std::string::npos) {
        *line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return Next::kLine;
      }
      if (eof_) return Next::kEof;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()).count();
      if (left <= 0) return Next::kTimeout;
      pollfd p{report_fd_, POLLIN, 0};
      const int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
      if (rc < 0 && errno != EINTR) return Next::kTimeout;
      if (rc <= 0) continue;
      char chunk[4096];
      const ssize_t n = ::read(report_fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        eof_ = true;
        continue;
      }
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

  void Kill() {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
  }

  // Reaps the child within `bound`; the wait status, or nullopt if it did not
  // exit in time (it is then killed by the destructor).
  std::optional<int> Wait(Steady::duration bound) {
    const auto deadline = Steady::now() + bound;
    for (;;) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return status;
      }
      if (r < 0 && errno != EINTR) return std::nullopt;
      if (Steady::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a poll, not a decision
    }
  }

 private:
  pid_t pid_ = -1;
  int report_fd_ = -1;
  int block_fd_ = -1;
  std::string buf_;
  bool eof_ = false;
};

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

struct Body {
  uint64_t hash = 0;
  size_t len = 0;
  friend bool operator==(const Body&, const Body&) = default;
};

// What the parent knows, across all runs on one data set.
struct Knowledge {
  std::map<int64_t, Body> live;   // acknowledged sends of kQueue not known completed
  std::map<int64_t, int32_t> dc;  // seq → delivery_count known committed
  std::set<int64_t> completed;    // Completes known committed
  std::map<int64_t, int64_t> tx;  // Tx i → seq, known committed
  int64_t next_tx = 1;
  int64_t max_seq = 0;  // G1: every new seq is above this
  int kills = 0;
  int clean_exits = 0;
  // How often a kill landed with an operation in flight (and what committed).
  int sends_in_flight = 0, sends_in_flight_committed = 0;
  int tx_in_flight = 0, tx_in_flight_committed = 0;
  int receives_in_flight = 0;
  int completes_in_flight = 0;
};

// What one run reported.
struct RunLog {
  std::optional<Body> send_in_flight;
  bool receive_in_flight = false;
  std::set<int64_t> complete_in_flight;
  std::optional<int64_t> tx_in_flight;
  std::vector<std::string> errors;  // protocol / consistency violations seen in the reports
  std::string child_error;          // the child's own "E" line
  int lines = 0;
  bool ended = false;
};

int64_t ParseInt(std::istringstream& in) {
  int64_t v = 0;
  in >> v;
  return v;
}

// Applies one report line to the log and the knowledge.
void Apply(const std::string& line, RunLog& run, Knowledge& k) {
  ++run.lines;
  std::istringstream in(line);
  std::string tag;
  in >> tag;
  auto bad = [&](const std::string& why) {
    run.errors.push_back(why + " (report '" + line + "')");
  };
  if (tag == "s") {
    Body b;
    in >> std::hex >> b.hash >> std::dec >> b.len;
    run.send_in_flight = b;
  } else if (tag == "S") {
    const int64_t seq = ParseInt(in);
    if (!run.send_in_flight) return bad("S without s");
    if (seq <= k.max_seq) {
      bad("seq " + std::to_string(seq) + " not above every earlier seq " +
          std::to_string(k.max_seq) + " (G1)");
    }
    k.max_seq = std::max(k.max_seq, seq);
    k.live[seq] = *run.send_in_flight;
    k.dc[seq] = 0;
    run.send_in_flight.reset();
  } else if (tag == "r") {
    run.receive_in_flight = true;
  } else if (tag == "R") {
    const int64_t seq = ParseInt(in);
    const int32_t dc = static_cast<int32_t>(ParseInt(in));
    Body b;
    in >> std::hex >> b.hash >> std::dec >> b.len;
    auto it = k.live.find(seq);
    if (it == k.live.end()) return bad("claimed seq " + std::to_string(seq) + " is unknown");
    if (!(it->second == b)) bad("claimed seq " + std::to_string(seq) + ": body differs from sent");
    if (dc != k.dc[seq] + 1 || dc > kMaxDeliveries) {
      bad("claimed seq " + std::to_string(seq) + " with delivery_count " + std::to_string(dc) +
          ", want " + std::to_string(k.dc[seq] + 1) + " (max " + std::to_string(kMaxDeliveries) +
          ")");
    }
    k.dc[seq] = dc;
  } else if (tag == "RD") {
    run.receive_in_flight = false;
  } else if (tag == "c") {
    run.complete_in_flight.insert(ParseInt(in));
  } else if (tag == "C") {
    const int64_t seq = ParseInt(in);
    if (run.complete_in_flight.erase(seq) == 0) return bad("C without c");
    k.completed.insert(seq);
    k.live.erase(seq);
  } else if (tag == "t") {
    run.tx_in_flight = ParseInt(in);
    k.next_tx = std::max(k.next_tx, *run.tx_in_flight + 1);  // never reuse an index
  } else if (tag == "T") {
    const int64_t i = ParseInt(in);
    const int64_t seq = ParseInt(in);
    if (run.tx_in_flight != i) return bad("T without t");
    if (seq <= k.max_seq) {
      bad("Tx seq " + std::to_string(seq) + " not above every earlier seq " +
          std::to_string(k.max_seq) + " (G1)");
    }
    k.max_seq = std::max(k.max_seq, seq);
    k.tx[i] = seq;
    run.tx_in_flight.reset();
  } else if (tag == "END") {
    run.ended = true;
  } else if (tag == "E") {
    run.child_error = line.substr(std::min<size_t>(2, line.size()));
  } else {
    bad("unknown report");
  }
}

// The fixture's protected members, handed to the helpers below by the test
// body (TEST_P's class derives from TckCrash; these helpers do not).
struct Harness {
  std::function<Engine&()> engine;
  std::function<Result<std::unique_ptr<Engine>>()> open_engine;
  std::function<void()> reopen;  // ASSERT-fails the test if it cannot
  std::function<void()> close_engine;
  ManualClock* clock;
  const StoreProfile* profile;
};
#define MQ_CRASH_HARNESS()                                                     \
  Harness {                                                                    \
    [this]() -> Engine& { return engine(); }, [this] { return OpenEngine(); }, \
        [this] { Reopen(); }, [this] { CloseEngine(); }, &clock(), &profile()  \
  }

std::vector<Message> PeekAllOk(Engine& e, std::string_view queue) {
  Result<std::vector<Message>> all = PeekAllOf(e, queue);
  EXPECT_TRUE(IsOk(all));
  return all.has_value() ? std::move(*all) : std::vector<Message>{};
}

QueueStats StatsOkOf(Engine& e, std::string_view queue) {
  Result<QueueStats> st = e.Stats(queue);
  EXPECT_TRUE(IsOk(st));
  return st.has_value() ? *st : QueueStats{};
}

class Crasher {
 public:
  explicit Crasher(Harness h) : h_(std::move(h)) {}

  Engine& engine() { return h_.engine(); }
  ManualClock& clock() { return *h_.clock; }
  const StoreProfile& profile() const { return *h_.profile; }
  Result<std::unique_ptr<Engine>> OpenEngine() { return h_.open_engine(); }
  void Reopen() { h_.reopen(); }
  void CloseEngine() { h_.close_engine(); }
  std::vector<Message> PeekAll(std::string_view q) { return PeekAllOk(engine(), q); }
  QueueStats StatsOk(std::string_view q) { return StatsOkOf(engine(), q); }

  void CreateQueues() {
    QueueConfig q;
    q.max_delivery_count = kMaxDeliveries;
    MQ_ASSERT_OK(CreateQueue(engine(), kQueue, q));
    MQ_ASSERT_OK(CreateQueue(engine(), kTxQueue));
  }

  Status PrepareBusiness() {
    const BusinessHooks& b = *profile().business;
    return engine().Tx([&](TxContext& tx) { return b.prepare(tx.native_handle()); });
  }

  // Reads `keys` through the business hooks, in one Tx.
  Result<std::map<int64_t, std::optional<std::string>>> ReadKeys(const std::set<int64_t>& keys) {
    const BusinessHooks& b = *profile().business;
    std::map<int64_t, std::optional<std::string>> out;
    Status s = engine().Tx([&](TxContext& tx) -> Status {
      for (int64_t i : keys) {
        MQLITE_ASSIGN_OR_RETURN(out[i], b.get(tx.native_handle(), TxKey(i)));
      }
      return Status::OK();
    });
    if (!s.ok()) return s;
    return out;
  }

  // §7.1 after a reopen: an exclusive store has reclaimed every lock; a shared
  // store keeps live leases only (reclaimed here by moving the clock past
  // them and running maintenance). Then every message is active with
  // delivery_count < max, or a MaxDeliveryCountExceeded dead letter at max.
  void CheckRecoveredStates(const std::vector<Message>& all, const std::string& when) {
    for (const Message& m : all) {
      SCOPED_TRACE(when + ", seq " + std::to_string(m.seq));
      EXPECT_LE(m.delivery_count, kMaxDeliveries) << "§7.4 delivery bound";
      switch (m.state) {
        case MessageState::kActive:
          EXPECT_LT(m.delivery_count, kMaxDeliveries)
              << "an orphaned lock at the max must be dead-lettered, not reactivated";
          break;
        case MessageState::kDeadLettered:
          EXPECT_EQ(m.delivery_count, kMaxDeliveries);
          EXPECT_EQ(m.dead_letter_reason, std::optional<std::string>(kReasonMaxDelivery));
          break;
        case MessageState::kLocked:
          if (profile().exclusive) {
            ADD_FAILURE() << "§7.1: still locked after an exclusive store reopened";
          } else {
            EXPECT_GT(m.locked_until, clock().NowMs())
                << "§7.1: a shared store kept an expired lease after open";
          }
          break;
        default:
          ADD_FAILURE() << "state " << MessageStateName(m.state)
                        << ": the workload never defers or schedules";
      }
    }
  }

  // Checks the data set after run `run` (engine reopened) against what the
  // child reported, and folds the run's in-flight operations into `k` by what
  // actually committed.
  void Verify(const RunLog& run, Knowledge& k, const std::string& when) {
    SCOPED_TRACE(when);
    for (const std::string& e : run.errors) ADD_FAILURE() << e;
    if (!profile().exclusive) {
      // Shared store: live leases survive the reopen; reclaim them as expiry
      // does, then check as for an exclusive store.
      std::vector<Message> before = PeekAll(kQueue);
      CheckRecoveredStates(before, "before lease expiry");
      clock().Advance(kLock + 1);
      MQ_ASSERT_OK(engine().RunMaintenance());
    }
    const QueueStats st = StatsOk(kQueue);
    if (profile().exclusive) {
      EXPECT_EQ(st.locked, 0) << "§7.1 " << StatsString(st);
    }
    std::vector<Message> all = PeekAll(kQueue);
    CheckRecoveredStates(all, "after recovery");

    std::set<int64_t> present;
    bool adopted = false;
    if (run.send_in_flight) ++k.sends_in_flight;
    if (run.receive_in_flight) ++k.receives_in_flight;
    k.completes_in_flight += static_cast<int>(run.complete_in_flight.size());
    for (const Message& m : all) {
      present.insert(m.seq);
      const Body got{BodyHash(m.body), m.body.size()};
      auto it = k.live.find(m.seq);
      if (it == k.live.end()) {
        if (k.completed.count(m.seq)) {
          ADD_FAILURE() << "§7.5: seq " << m.seq << " was completed but is back";
          continue;
        }
        // Only the send in flight at the kill may have committed unreported.
        if (run.send_in_flight && *run.send_in_flight == got && !adopted && m.seq > k.max_seq) {
          adopted = true;
          ++k.sends_in_flight_committed;
          k.live[m.seq] = got;
          k.dc[m.seq] = 0;
          k.max_seq = m.seq;
          it = k.live.find(m.seq);
        } else {
          ADD_FAILURE() << "unknown message seq " << m.seq << " (length " << m.body.size()
                        << ") was never sent";
          continue;
        }
      }
      EXPECT_EQ(got, it->second) << "§7.5: seq " << m.seq << " body differs from what was sent";
      // A crash never grants a delivery: the count is what the claims
      // reported, plus one only if a claim was in flight at the kill.
      const int32_t known = k.dc[m.seq];
      EXPECT_GE(m.delivery_count, known) << "seq " << m.seq << " lost a delivery count";
      EXPECT_LE(m.delivery_count, known + (run.receive_in_flight ? 1 : 0))
          << "§7.1/§7.4: seq " << m.seq << " gained a delivery across the crash";
      k.dc[m.seq] = m.delivery_count;
    }
    for (auto it = k.live.begin(); it != k.live.end();) {
      if (present.count(it->first)) {
        ++it;
        continue;
      }
      if (run.complete_in_flight.count(it->first)) {
        k.completed.insert(it->first);  // the in-flight Complete committed
      } else {
        ADD_FAILURE() << "§7.5: acknowledged send seq " << it->first << " is gone";
      }
      it = k.live.erase(it);
    }

    // §8: the outbox queue and the business keys.
    if (!profile().business) return;
    std::vector<Message> txs = PeekAll(kTxQueue);
    std::map<int64_t, Message> by_i;
    for (const Message& m : txs) {
      int64_t i = -1;
      if (m.body.rfind("tx:", 0) == 0) i = std::strtoll(m.body.c_str() + 3, nullptr, 10);
      const bool known = k.tx.count(i) > 0 || (run.tx_in_flight && *run.tx_in_flight == i);
      if (!known || by_i.count(i)) {
        ADD_FAILURE() << "unknown outbox message seq " << m.seq << " body '" << m.body << "'";
        continue;
      }
      EXPECT_EQ(m.state, MessageState::kActive) << "outbox seq " << m.seq << " (never received)";
      EXPECT_EQ(m.delivery_count, 0) << "outbox seq " << m.seq;
      by_i.emplace(i, m);
    }
    std::set<int64_t> keys;
    for (const auto& [i, seq] : k.tx) keys.insert(i);
    if (run.tx_in_flight) keys.insert(*run.tx_in_flight);
    MQ_ASSERT_OK_AND_ASSIGN(auto values, ReadKeys(keys));
    for (const auto& [i, seq] : k.tx) {
      EXPECT_EQ(values[i], std::optional<std::string>(TxValue(i)))
          << "§8: Tx " << i << " was reported committed but its business write is missing";
      auto m = by_i.find(i);
      if (m == by_i.end()) {
        ADD_FAILURE() << "§8: Tx " << i << " was reported committed but its message is missing";
      } else {
        EXPECT_EQ(m->second.seq, seq) << "§8: Tx " << i;
      }
    }
    if (run.tx_in_flight && !k.tx.count(*run.tx_in_flight)) {
      ++k.tx_in_flight;
      const int64_t i = *run.tx_in_flight;
      const bool key = values[i].has_value();
      const bool msg = by_i.count(i) > 0;
      EXPECT_EQ(key, msg) << "§8 atomicity: Tx " << i << " in flight at the kill left "
                          << (key ? "its business write without its message"
                                  : "its message without its business write");
      if (key) {
        EXPECT_EQ(values[i], std::optional<std::string>(TxValue(i)));
      }
      if (key && msg) {
        ++k.tx_in_flight_committed;
        k.tx[i] = by_i.at(i).seq;  // it committed
        k.max_seq = std::max(k.max_seq, by_i.at(i).seq);
      }
    }
  }

  // One fork/kill/reopen cycle of the random workload.
  void KillOnce(int run_no, std::mt19937_64& rng, Knowledge& k, bool with_tx) {
    const std::string when = "run " + std::to_string(run_no);
    const uint64_t child_seed = rng();
    // Kill after a random number of report lines, or (1 in 5) after a random
    // short delay from the fork, which also lands inside open and recovery.
    const bool by_delay = rng() % 5 == 0;
    const int kill_after_lines = 1 + static_cast<int>(rng() % 150);
    const auto kill_delay = std::chrono::microseconds(rng() % 20'000);
    const BusinessHooks* b = with_tx ? &*profile().business : nullptr;
    const int64_t next_tx = k.next_tx;

    CloseEngine();  // nothing open across fork
    ChildProcess child;
    std::string error;
    ASSERT_TRUE(child.Start(
        [&](int fd, int) -> int {
          Result<std::unique_ptr<Engine>> e = OpenEngine();
          if (!e.has_value()) return Fail(fd, "OpenEngine: " + e.status().ToString());
          // More operations than the pipe can hold reports for: the child
          // cannot finish before the parent has read its kill point.
          const int rc = RunWorkload(**e, fd, child_seed, 5000, b, next_tx);
          if (rc == 0) (void)(*e)->Close();
          return rc;
        },
        &error))
        << error;

    RunLog run;
    const auto deadline = Steady::now() + kChildBound;
    std::string line;
    bool eof = false;
    if (by_delay) {
      std::this_thread::sleep_for(kill_delay);  // a random kill point, not a decision
    } else {
      while (run.lines < kill_after_lines) {
        ChildProcess::Next n = child.ReadLine(&line, deadline);
        if (n == ChildProcess::Next::kLine) {
          Apply(line, run, k);
          continue;
        }
        ASSERT_NE(n, ChildProcess::Next::kTimeout) << when << ": the child hung";
        eof = true;
        break;
      }
    }
    if (!eof) child.Kill();
    // Everything written before the death is a fact.
    for (;;) {
      ChildProcess::Next n = child.ReadLine(&line, deadline);
      if (n == ChildProcess::Next::kLine) {
        Apply(line, run, k);
        continue;
      }
      ASSERT_NE(n, ChildProcess::Next::kTimeout) << when << ": the child's pipe never closed";
      break;
    }
    std::optional<int> status = child.Wait(kReapBound);
    ASSERT_TRUE(status.has_value()) << when << ": the child did not exit";
    ASSERT_TRUE(run.child_error.empty()) << when << ": the child failed: " << run.child_error;
    if (WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL) {
      ++k.kills;
    } else {
      ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0 && run.ended)
          << when << ": the child " << DescribeStatus(*status);
      ++k.clean_exits;
    }
    ASSERT_NO_FATAL_FAILURE(Reopen());
    ASSERT_NO_FATAL_FAILURE(Verify(run, k, when));
  }

  // Many kills on one data set, then a final drain (§7.5: every acknowledged
  // send is deliverable, byte-exact).
  void KillMany(bool with_tx, int runs) {
    const uint64_t seed = CrashSeed();
    std::cout << "[ crash ] seed " << seed << " (pin with MQLITE_CRASH_SEED=" << seed << ")\n";
    SCOPED_TRACE("MQLITE_CRASH_SEED=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    ASSERT_NO_FATAL_FAILURE(CreateQueues());
    if (with_tx) {
      MQ_ASSERT_OK(PrepareBusiness());
    }
    Knowledge k;
    for (int r = 0; r < runs; ++r) {
      ASSERT_NO_FATAL_FAILURE(KillOnce(r, rng, k, with_tx));
      if (::testing::Test::HasFailure()) return;
    }
    std::cout << "[ crash ] " << k.kills << " kills, " << k.clean_exits << " clean exits, "
              << k.live.size() << " live messages, " << k.completed.size() << " completed, "
              << k.tx.size() << " Tx committed; in flight at the kill: " << k.sends_in_flight
              << " sends (" << k.sends_in_flight_committed << " committed), " << k.tx_in_flight
              << " Tx (" << k.tx_in_flight_committed << " committed), " << k.receives_in_flight
              << " receives, " << k.completes_in_flight << " completes\n";
    EXPECT_GT(k.kills, runs / 2) << "most runs must end in a SIGKILL";

    // Final drain: every live, not dead-lettered message is claimable with its
    // exact body.
    std::set<int64_t> drained;
    for (int round = 0; round < 1000; ++round) {
      MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), kQueue, 256));
      if (got.empty()) break;
      for (const Message& m : got) {
        auto it = k.live.find(m.seq);
        if (it == k.live.end()) {
          ADD_FAILURE() << "drain: unknown seq " << m.seq;
          continue;
        }
        EXPECT_EQ((Body{BodyHash(m.body), m.body.size()}), it->second) << "drain: seq " << m.seq;
        EXPECT_LE(m.delivery_count, kMaxDeliveries) << "drain: seq " << m.seq;
        MQ_EXPECT_OK(engine().Complete(kQueue, m.seq, m.lock_token));
        drained.insert(m.seq);
      }
    }
    const QueueStats st = StatsOk(kQueue);
    EXPECT_EQ(st.total, st.dead_lettered)
        << "§7.5: undeliverable messages remain " << StatsString(st);
    std::vector<Message> dlq = PeekAll(kQueue);
    std::set<int64_t> dead;
    for (const Message& m : dlq) dead.insert(m.seq);
    std::cout << "[ crash ] drained " << drained.size() << ", " << dead.size()
              << " dead letters (orphaned locks at the max)\n";
    for (const auto& [seq, body] : k.live) {
      EXPECT_TRUE(drained.count(seq) + dead.count(seq) == 1)
          << "§7.5: acknowledged seq " << seq << " neither delivered nor dead-lettered";
    }
  }

  // Kills the child while it is inside a Tx callback, after the business
  // write (and, every other time, after the Send too) but before the callback
  // returns: neither the key nor the message may survive (§8). A committed Tx
  // before it must survive whole.
  void KillInsideTx(int iterations) {
    ASSERT_NO_FATAL_FAILURE(CreateQueues());
    MQ_ASSERT_OK(PrepareBusiness());
    const BusinessHooks& b = *profile().business;
    std::map<int64_t, int64_t> committed;  // Tx i → seq
    std::set<int64_t> torn;                // Tx killed inside the callback
    int64_t next = 1;
    for (int it = 0; it < iterations; ++it) {
      const std::string when = "iteration " + std::to_string(it);
      SCOPED_TRACE(when);
      const bool after_send = it % 2 == 1;
      const int64_t ok_i = next++;
      const int64_t torn_i = next++;
      torn.insert(torn_i);
      CloseEngine();  // nothing open across fork
      ChildProcess child;
      std::string error;
      ASSERT_TRUE(child.Start(
          [&](int fd, int block_fd) -> int {
            Result<std::unique_ptr<Engine>> e = OpenEngine();
            if (!e.has_value()) return Fail(fd, "OpenEngine: " + e.status().ToString());
            int64_t seq = 0;
            Status s = OutboxTx(**e, b, ok_i, &seq);
            if (!s.ok()) return Fail(fd, "Tx " + std::to_string(ok_i) + ": " + s.ToString());
            Report(fd, "T " + std::to_string(ok_i) + " " + std::to_string(seq));
            Status t = (*e)->Tx([&](TxContext& tx) -> Status {
              MQLITE_RETURN_IF_ERROR(b.put(tx.native_handle(), TxKey(torn_i), TxValue(torn_i)));
              if (after_send) {
                MQLITE_ASSIGN_OR_RETURN(int64_t unused, tx.Send(kTxQueue, Out(TxBody(torn_i))));
                (void)unused;
              }
              Report(fd, "IN");
              char c = 0;
              while (::read(block_fd, &c, 1) < 0 && errno == EINTR) {
              }
              return Status::Cancelled("the parent went away");
            });
            return Fail(fd, "the blocked Tx returned: " + t.ToString());
          },
          &error))
          << error;
      const auto deadline = Steady::now() + kChildBound;
      std::string line;
      bool inside = false;
      std::string child_error;
      while (!inside) {
        ChildProcess::Next n = child.ReadLine(&line, deadline);
        ASSERT_EQ(n, ChildProcess::Next::kLine)
            << "the child ended or hung before entering the Tx" << child_error;
        std::istringstream in(line);
        std::string tag;
        in >> tag;
        if (tag == "T") {
          int64_t i = 0;
          int64_t seq = 0;
          in >> i >> seq;
          ASSERT_EQ(i, ok_i);
          committed[i] = seq;
        } else if (tag == "IN") {
          inside = true;
        } else if (tag == "E") {
          FAIL() << "the child failed: " << line;
        }
      }
      child.Kill();
      std::optional<int> status = child.Wait(kReapBound);
      ASSERT_TRUE(status.has_value()) << "the child did not exit after SIGKILL";
      ASSERT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL)
          << "the child " << DescribeStatus(*status);
      ASSERT_NO_FATAL_FAILURE(Reopen());

      std::vector<Message> txs = PeekAll(kTxQueue);
      std::map<std::string, int64_t> by_body;
      for (const Message& m : txs) {
        by_body[m.body] = m.seq;
        EXPECT_EQ(m.state, MessageState::kActive) << "outbox seq " << m.seq << " (never received)";
      }
      std::set<int64_t> keys;
      for (const auto& [i, seq] : committed) keys.insert(i);
      keys.insert(torn.begin(), torn.end());
      MQ_ASSERT_OK_AND_ASSIGN(auto values, ReadKeys(keys));
      for (const auto& [i, seq] : committed) {
        EXPECT_EQ(values[i], std::optional<std::string>(TxValue(i)))
            << "§8: committed Tx " << i << " lost its business write";
        auto m = by_body.find(TxBody(i));
        if (m == by_body.end()) {
          ADD_FAILURE() << "§8: committed Tx " << i << " lost its message";
        } else {
          EXPECT_EQ(m->second, seq);
        }
      }
      for (int64_t i : torn) {
        EXPECT_EQ(values[i], std::nullopt)
            << "§8: the business write of Tx " << i << " (killed inside its callback) survived";
        EXPECT_EQ(by_body.count(TxBody(i)), 0u)
            << "§8: the message of Tx " << i << " (killed inside its callback) survived";
      }
      EXPECT_EQ(txs.size(), committed.size()) << "only committed Tx messages exist";
      if (::testing::Test::HasFailure()) return;
    }
  }

 private:
  Harness h_;
};

}  // namespace

MQLITE_TCK_GRADES(TckCrash, Spec7_1_7_5_SigkillNeverLosesAcknowledgedSendsAndRecoversLocks, "G1",
                  "G2", "G6");
TEST_P(TckCrash, Spec7_1_7_5_SigkillNeverLosesAcknowledgedSendsAndRecoversLocks) {
  if (SkipUnlessCrashable()) return;
  Crasher c(MQ_CRASH_HARNESS());
  c.KillMany(/*with_tx=*/false, /*runs=*/20);
}

MQLITE_TCK_GRADES(TckCrash, Spec8_SigkillKeepsTxBusinessWriteAndMessageAtomic, "G1", "G5", "G6");
TEST_P(TckCrash, Spec8_SigkillKeepsTxBusinessWriteAndMessageAtomic) {
  if (SkipUnlessCrashable()) return;
  if (SkipUnlessBusinessHooks()) return;
  Crasher c(MQ_CRASH_HARNESS());
  c.KillMany(/*with_tx=*/true, /*runs=*/20);
}

MQLITE_TCK_GRADES(TckCrash, Spec8_SigkillInsideTxAfterBusinessWriteLeavesNeither, "G5", "G6");
TEST_P(TckCrash, Spec8_SigkillInsideTxAfterBusinessWriteLeavesNeither) {
  if (SkipUnlessCrashable()) return;
  if (SkipUnlessBusinessHooks()) return;
  Crasher c(MQ_CRASH_HARNESS());
  c.KillInsideTx(/*iterations=*/6);
}

}  // namespace mqlite::tck
