// The failure matrix through a TCP proxy (issue 12; SPEC §10): the
// connection between an engine and the server is cut at a chosen message —
// before a body's statement reaches the server, or after the server has
// COMMITted but before its answer reaches the engine — for a solo call, a
// group commit of several members and a Tx. What each caller must see:
//
//   cut before COMMIT was sent   rerunnable: rerun on a fresh connection,
//                                applied once; a Tx: Unavailable, nothing
//                                committed
//   cut after the server's COMMIT  OutcomeUnknown for every member, never
//                                rerun (it did commit: rerunning would apply
//                                it twice)
//   COMMIT sent, never arrived   OutcomeUnknown too (the engine cannot tell
//                                this from the row above); nothing committed
//
// The proxy is a thread of this test: a real TCP connection on 127.0.0.1,
// cut with close(), so libpq sees what a network failure looks like.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/postgres.h"
#include "pg_test_util.h"
#include "suite_util.h"

namespace mqlite::pg_internal {
namespace {

using namespace std::chrono_literals;

class FaultProxy {
 public:
  enum class Cut {
    kBefore,  // close both sides; the message never reaches the server
    kAfter,   // forward it, wait for the server's answer, close both unanswered
  };

  // Upstream: the server as libpq reached it (a TCP host or a socket dir).
  FaultProxy(std::string host, int port) : host_(std::move(host)), port_(port) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listen_, 64) != 0 ||
        ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "proxy: cannot listen on 127.0.0.1";
      return;
    }
    local_port_ = ntohs(a.sin_port);
    accept_ = std::thread([this] { AcceptLoop(); });
  }
  ~FaultProxy() {
    stop_ = true;
    ::shutdown(listen_, SHUT_RDWR);
    ::close(listen_);
    if (accept_.joinable()) accept_.join();
    std::vector<std::thread> pumps;
    {
      std::lock_guard<std::mutex> l(mu_);
      released_ = true;
      pumps.swap(pumps_);
    }
    cv_.notify_all();
    for (std::thread& t : pumps) t.join();
  }

  int port() const { return local_port_; }

  // From now on, the `nth` client message containing `pattern` is cut as
  // `cut`; each earlier one is held until Release() when `hold` is set.
  void Arm(std::string pattern, int nth, Cut cut, bool hold = false) {
    std::lock_guard<std::mutex> l(mu_);
    pattern_ = std::move(pattern);
    nth_ = nth;
    cut_ = cut;
    hold_ = hold;
    seen_ = 0;
    fired_ = false;
    held_ = false;
    released_ = false;
  }
  bool WaitHeld(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, d, [&] { return held_; });
  }
  void Release() {
    {
      std::lock_guard<std::mutex> l(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  bool fired() {
    std::lock_guard<std::mutex> l(mu_);
    return fired_;
  }
  // Client writes forwarded so far (one per flush of a small pipeline).
  int chunks() {
    std::lock_guard<std::mutex> l(mu_);
    return chunks_;
  }
  // The printable start of every client write from number `from` on (for
  // failure messages).
  std::string ChunksFrom(int from) {
    std::lock_guard<std::mutex> l(mu_);
    std::string out;
    for (size_t i = static_cast<size_t>(from); i < seen_chunks_.size(); ++i) {
      out += "\n  [" + std::to_string(i) + "] ";
      for (char c : seen_chunks_[i].substr(0, 160)) out += (c >= 0x20 && c < 0x7f) ? c : '.';
    }
    return out;
  }

 private:
  int ConnectUpstream() const {
    if (!host_.empty() && host_[0] == '/') {
      const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un u{};
      u.sun_family = AF_UNIX;
      const std::string path = host_ + "/.s.PGSQL." + std::to_string(port_);
      std::snprintf(u.sun_path, sizeof u.sun_path, "%s", path.c_str());
      if (::connect(fd, reinterpret_cast<sockaddr*>(&u), sizeof u) == 0) return fd;
      ::close(fd);
      return -1;
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    if (::inet_pton(AF_INET, host_.c_str(), &a.sin_addr) != 1 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }

  void AcceptLoop() {
    while (!stop_) {
      const int client = ::accept(listen_, nullptr, nullptr);
      if (client < 0) return;
      const int server = ConnectUpstream();
      if (server < 0) {
        ::close(client);
        continue;
      }
      std::lock_guard<std::mutex> l(mu_);
      pumps_.emplace_back([this, client, server] { Pump(client, server); });
    }
  }

  // What to do with one client message: forward, hold then forward, or cut.
  enum class Verdict { kForward, kHold, kCut };
  Verdict Judge(const std::string& chunk) {
    std::lock_guard<std::mutex> l(mu_);
    ++chunks_;
    seen_chunks_.push_back(chunk);
    if (pattern_.empty() || fired_ || chunk.find(pattern_) == std::string::npos) {
      return Verdict::kForward;
    }
    if (++seen_ < nth_) return hold_ ? Verdict::kHold : Verdict::kForward;
    fired_ = true;
    return Verdict::kCut;
  }

  static bool WriteAll(int fd, const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  void Pump(int client, int server) {
    char buf[65536];
    pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    while (!stop_) {
      if (::poll(fds, 2, 100) < 0) break;
      if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t n = ::recv(server, buf, sizeof buf, 0);
        if (n <= 0 || !WriteAll(client, buf, static_cast<size_t>(n))) break;
      }
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t n = ::recv(client, buf, sizeof buf, 0);
        if (n <= 0) break;
        const std::string chunk(buf, static_cast<size_t>(n));
        const Verdict v = Judge(chunk);
        if (v == Verdict::kHold) {
          std::unique_lock<std::mutex> l(mu_);
          held_ = true;
          cv_.notify_all();
          cv_.wait(l, [&] { return released_; });
        }
        if (v == Verdict::kCut) {
          if (cut_ == Cut::kAfter) {
            // The server runs the pipeline through its Sync before it
            // answers, so its first answer byte means COMMIT has run.
            if (!WriteAll(server, chunk.data(), chunk.size())) break;
            pollfd s{server, POLLIN, 0};
            if (::poll(&s, 1, 10'000) > 0) (void)::recv(server, buf, sizeof buf, 0);
          }
          break;  // both sides closed, the answer (if any) dropped
        }
        if (!WriteAll(server, chunk.data(), chunk.size())) break;
      }
    }
    ::close(client);
    ::close(server);
  }

  const std::string host_;
  const int port_;
  int listen_ = -1;
  int local_port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> pumps_;
  std::string pattern_;
  int nth_ = 0, seen_ = 0, chunks_ = 0;
  std::vector<std::string> seen_chunks_;
  Cut cut_ = Cut::kBefore;
  bool hold_ = false, held_ = false, released_ = false, fired_ = false;
};

class PgProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = Connect();
    ASSERT_NE(admin_, nullptr);
    std::random_device rd;
    schema_ = "px_" + std::to_string(::getpid()) + "_" + std::to_string(rd() % 1000000);
    PGconn* raw = admin_->raw();
    proxy_ = std::make_unique<FaultProxy>(PQhost(raw), std::atoi(PQport(raw)));
  }
  void TearDown() override {
    engine_.reset();
    proxy_.reset();
    if (admin_) (void)admin_->Simple("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE", "drop");
  }

  // An engine whose every session goes through the proxy. One pooled
  // connection: write_concurrency 1, so concurrent calls queue into one
  // group commit. Maintenance only when asked (its commits would hit the
  // proxy's pattern).
  // `tweak` adjusts the store's options.
  Engine& OpenThroughProxy(const std::function<void(PostgresOptions&)>& tweak = {}) {
    PostgresOptions o;
    if (tweak) tweak(o);
    const std::string url = TestUrl();
    const bool uri = url.rfind("postgres", 0) == 0;
    const std::string override_host = "host=127.0.0.1 port=" + std::to_string(proxy_->port());
    o.url = uri ? url + (url.find('?') == std::string::npos ? "?" : "&") + "host=127.0.0.1&port=" +
                      std::to_string(proxy_->port())
                : url + " " + override_host;
    o.schema = schema_;
    o.pool_size = 1;
    auto store = OpenPostgresStore(o);
    EXPECT_TRUE(store.has_value()) << store.status().ToString();
    EngineOptions eo;
    eo.background_maintenance = false;
    auto e = Engine::Open(std::move(*store), eo);
    EXPECT_TRUE(e.has_value()) << e.status().ToString();
    engine_ = std::move(*e);
    EXPECT_TRUE(engine_->CreateQueue({.name = "q"}).has_value());
    return *engine_;
  }

  // An engine whose calls' own round trips are all the proxy sees, for the
  // tests that count them: no change feed (its listener's first connect
  // drops the queue cache whenever it happens, and a re-read is one more
  // trip; a coalesced notification goes out on a session of its own, through
  // the proxy too — the ASan stage under load hit both), and the queue
  // record cached for an hour.
  Engine& OpenForCountingTrips() {
    return OpenThroughProxy([](PostgresOptions& o) {
      o.change_feed = false;
      o.queue_cache_ms = 3'600'000;
    });
  }

  int64_t Messages() {
    auto r = admin_->Query("SELECT count(*) FROM " + schema_ + ".messages", "count");
    EXPECT_TRUE(r.has_value()) << r.status().ToString();
    return r.has_value() ? r->i64(0, 0) : -1;
  }

  // `n` Sends at once, each with its own message id; their results.
  std::vector<Status> SendConcurrently(Engine& e, int n, int first_id) {
    std::vector<Status> out(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        OutgoingMessage m;
        m.body = "body " + std::to_string(first_id + i);
        m.message_id = "id-" + std::to_string(first_id + i);
        out[static_cast<size_t>(i)] = e.Send("q", m).status();
      });
    }
    for (std::thread& t : threads) t.join();
    return out;
  }

  // A leader's Send, whose message matching the armed pattern the proxy
  // holds (Arm with hold) while three more Sends queue behind it — one pooled
  // connection, so they wait for the writer and then run as one group
  // commit — then released. The leader's status and the group's.
  std::pair<Status, std::vector<Status>> LeaderThenGroupOfThree(Engine& e) {
    Status first;
    std::vector<Status> group;
    std::thread leader([&] { first = e.Send("q", {.body = "leader", .message_id = "lead"}).status(); });
    const bool held = proxy_->WaitHeld(10s);
    EXPECT_TRUE(held) << "the leader's message never reached the proxy";
    std::thread members([&] { group = SendConcurrently(e, 3, 0); });
    std::this_thread::sleep_for(300ms);  // the three queue behind the held leader
    proxy_->Release();
    leader.join();
    members.join();
    return {first, group};
  }

  // Sends one message to "q" and locks it with a Receive.
  static void SendAndLockOne(Engine& e, Message* out) {
    ASSERT_TRUE(e.Send("q", {.body = "settle me"}).has_value());
    auto got = e.Receive("q", {});
    ASSERT_TRUE(got.has_value() && got->size() == 1);
    *out = (*got)[0];
  }

  std::unique_ptr<PgConn> admin_;
  std::string schema_;
  std::unique_ptr<FaultProxy> proxy_;
  std::unique_ptr<Engine> engine_;
};

// Cut before COMMIT was sent, on a group commit's first insert: the whole
// group reruns on a fresh connection and every member is applied once. The
// leader's insert is held at the proxy while three sends queue behind it, so
// the second transaction is exactly their group.
TEST_F(PgProxyTest, Spec10_ACutBeforeCommitRerunsTheGroupAndAppliesEachMemberOnce) {
  Engine& e = OpenThroughProxy();
  proxy_->Arm("mq_insert_message", 2, FaultProxy::Cut::kBefore, /*hold=*/true);
  const auto [first, group] = LeaderThenGroupOfThree(e);
  MQ_EXPECT_OK(first);
  ASSERT_EQ(group.size(), 3u);
  for (const Status& s : group) MQ_EXPECT_OK(s);
  EXPECT_TRUE(proxy_->fired());
  EXPECT_EQ(Messages(), 4);
}

// The same cut inside a Tx (application code: never rerun): Unavailable,
// nothing committed, and the engine carries on on a fresh connection.
TEST_F(PgProxyTest, Spec10_ACutBeforeCommitFailsATxWithNothingCommitted) {
  Engine& e = OpenThroughProxy();
  proxy_->Arm("mq_insert_message", 1, FaultProxy::Cut::kBefore);
  const Status s = e.Tx([](TxContext& tx) { return tx.Send("q", {.body = "in a tx"}).status(); });
  MQ_EXPECT_CODE(s, kUnavailable);
  EXPECT_TRUE(proxy_->fired());
  EXPECT_EQ(Messages(), 0);
  MQ_EXPECT_OK(e.Send("q", {.body = "after"}).status());
  EXPECT_EQ(Messages(), 1);
}

// Cut after the server ran COMMIT, before its answer arrived, for a group of
// three: every member is OutcomeUnknown (none is rerun), and all of them did
// commit. The first COMMIT is held at the proxy while the three queue up
// behind it, so the second transaction is exactly their group.
TEST_F(PgProxyTest, Spec10_ACutAfterCommitIsOutcomeUnknownForEveryMemberAndNothingRuns) {
  Engine& e = OpenThroughProxy();
  proxy_->Arm(kCommitStatement.name, 2, FaultProxy::Cut::kAfter, /*hold=*/true);
  const auto [first, group] = LeaderThenGroupOfThree(e);
  MQ_EXPECT_OK(first);
  ASSERT_EQ(group.size(), 3u);
  for (const Status& s : group) MQ_EXPECT_CODE(s, kOutcomeUnknown);
  EXPECT_TRUE(proxy_->fired());
  EXPECT_EQ(Messages(), 4) << "every member committed once; none was rerun";
}

// COMMIT sent but cut on its way: the engine cannot tell this from the case
// above, so it is OutcomeUnknown too — and here nothing committed, which is
// why OutcomeUnknown means "reconcile", never "retry blindly".
TEST_F(PgProxyTest, Spec10_ACommitThatNeverArrivesIsOutcomeUnknownAndCommitsNothing) {
  Engine& e = OpenThroughProxy();
  proxy_->Arm(kCommitStatement.name, 1, FaultProxy::Cut::kBefore);
  MQ_EXPECT_CODE(e.Send("q", {.body = "lost"}).status(), kOutcomeUnknown);
  EXPECT_TRUE(proxy_->fired());
  EXPECT_EQ(Messages(), 0);
}

// A call that runs alone sends its last statement and COMMIT in one flush
// (StoreTxn::FinalCallFollows): a Send, a Complete and a Receive with
// nothing due cost one round trip each (the Receive's time-driven steps
// ride in its claim statement: StoreTxn::PrepareClaim). Counted at the
// proxy as client writes, once every statement is prepared, on an engine
// with nothing running beside the calls (OpenForCountingTrips).
TEST_F(PgProxyTest, Spec10_ACallAloneCommitsWithItsLastStatement) {
  Engine& e = OpenForCountingTrips();
  for (int i = 0; i < 2; ++i) {  // prepares every statement the loop below uses
    ASSERT_TRUE(e.Send("q", {.body = "warm"}).has_value());
    auto got = e.Receive("q", {});
    ASSERT_TRUE(got.has_value() && got->size() == 1);
    MQ_ASSERT_OK(e.Complete("q", (*got)[0].seq, (*got)[0].lock_token));
  }
  int before = proxy_->chunks();
  ASSERT_TRUE(e.Send("q", {.body = "one"}).has_value());
  EXPECT_EQ(proxy_->chunks() - before, 1) << "Send:" << proxy_->ChunksFrom(before);
  before = proxy_->chunks();
  auto got = e.Receive("q", {});
  ASSERT_TRUE(got.has_value() && got->size() == 1);
  EXPECT_EQ(proxy_->chunks() - before, 1) << "Receive:" << proxy_->ChunksFrom(before);
  before = proxy_->chunks();
  MQ_ASSERT_OK(e.Complete("q", (*got)[0].seq, (*got)[0].lock_token));
  EXPECT_EQ(proxy_->chunks() - before, 1) << "Complete:" << proxy_->ChunksFrom(before);
  EXPECT_EQ(Messages(), 0);
}

// A CompleteBatch sends its items' one-statement Completes together
// (StoreTxn::SettleMany): BEGIN and every delete-with-receipt in one round
// trip, COMMIT in the next — not a trip per item. Counted as above.
TEST_F(PgProxyTest, Spec6_ACompleteBatchSendsItsCompletesInOneRoundTrip) {
  Engine& e = OpenForCountingTrips();
  auto send_and_receive = [&](int n) -> std::vector<SettleItem> {
    for (int i = 0; i < n; ++i) EXPECT_TRUE(e.Send("q", {.body = "m"}).has_value());
    auto got = e.Receive("q", {.max_messages = n});
    EXPECT_TRUE(got.has_value() && got->size() == static_cast<size_t>(n));
    std::vector<SettleItem> items;
    if (got.has_value()) {
      for (const Message& m : *got) items.push_back({m.seq, m.lock_token});
    }
    return items;
  };
  {  // prepares every statement
    std::vector<SettleItem> warm = send_and_receive(2);
    MQ_ASSERT_OK(e.CompleteBatch("q", warm).status());
  }
  std::vector<SettleItem> items = send_and_receive(8);
  ASSERT_EQ(items.size(), 8u);
  const int before = proxy_->chunks();
  auto results = e.CompleteBatch("q", items);
  ASSERT_TRUE(results.has_value());
  for (const Status& s : *results) MQ_EXPECT_OK(s);
  EXPECT_EQ(proxy_->chunks() - before, 2) << "CompleteBatch:" << proxy_->ChunksFrom(before);
  EXPECT_EQ(Messages(), 0);
}

// A Receive whose claim statement finds a schedule come due (or a lease
// ended) must not claim past it: the claim refuses, the promotion commits,
// and the claim runs again in a new transaction (three round trips) — the
// due message first, in seq order (SPEC §5). Real clock: the schedule is
// 300 ms out.
TEST_F(PgProxyTest, Spec5_AReceiveThatPromotesADueScheduleClaimsItFirst) {
  Engine& e = OpenForCountingTrips();
  for (int i = 0; i < 2; ++i) {  // prepares every statement, both paths
    ASSERT_TRUE(e.Send("q", {.body = "warm", .delay_ms = 1}).has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto got = e.Receive("q", {});
    ASSERT_TRUE(got.has_value() && got->size() == 1);
    MQ_ASSERT_OK(e.Complete("q", (*got)[0].seq, (*got)[0].lock_token));
  }
  auto due = e.Send("q", {.body = "due", .delay_ms = 300});
  auto now = e.Send("q", {.body = "now"});
  ASSERT_TRUE(due.has_value() && now.has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const int before = proxy_->chunks();
  auto got = e.Receive("q", {.max_messages = 10});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(proxy_->chunks() - before, 3) << "Receive:" << proxy_->ChunksFrom(before);
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].seq, *due);
  EXPECT_EQ((*got)[1].seq, *now);
}

// A Complete whose single flush (delete, receipt, COMMIT) was cut after the
// server committed: OutcomeUnknown, the message is gone, and the same
// Complete again is answered from its receipt (SPEC §7.2) — the
// reconciliation OutcomeUnknown asks for.
TEST_F(PgProxyTest, Spec7_2_ACompleteCutAfterItsCommitIsOutcomeUnknownAndItsRetryReplays) {
  Engine& e = OpenThroughProxy();
  Message m;
  ASSERT_NO_FATAL_FAILURE(SendAndLockOne(e, &m));
  proxy_->Arm("mq_complete_with_receipt", 1, FaultProxy::Cut::kAfter);
  MQ_EXPECT_CODE(e.Complete("q", m.seq, m.lock_token), kOutcomeUnknown);
  EXPECT_TRUE(proxy_->fired());
  EXPECT_EQ(Messages(), 0) << "the COMMIT ran";
  MQ_EXPECT_OK(e.Complete("q", m.seq, m.lock_token));
}

// The same cut before the flush reached the server: OutcomeUnknown too (the
// engine cannot tell), nothing committed, the lock still held; the retry
// completes it for real.
TEST_F(PgProxyTest, Spec10_ACompleteCutBeforeItsFlushIsOutcomeUnknownAndCommitsNothing) {
  Engine& e = OpenThroughProxy();
  Message m;
  ASSERT_NO_FATAL_FAILURE(SendAndLockOne(e, &m));
  proxy_->Arm("mq_complete_with_receipt", 1, FaultProxy::Cut::kBefore);
  MQ_EXPECT_CODE(e.Complete("q", m.seq, m.lock_token), kOutcomeUnknown);
  EXPECT_TRUE(proxy_->fired());
  EXPECT_EQ(Messages(), 1) << "nothing committed";
  MQ_EXPECT_OK(e.Complete("q", m.seq, m.lock_token));
  EXPECT_EQ(Messages(), 0);
}

}  // namespace
}  // namespace mqlite::pg_internal
