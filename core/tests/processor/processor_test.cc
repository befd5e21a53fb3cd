// mqlite::Processor and TypedQueue on every store this build has (opened by
// URL), against the real store: verdicts, retries and the DLQ, lease renewal
// for a handler slower than the lease, a lost lease stopping the handler,
// graceful Stop, Tx handlers committing their outputs with the settle, and a
// SIGKILL mid-handler (SPEC §1 at-least-once, §6, §7.1, §8).
//
// Waits poll with generous limits that only fire if something hangs; no test
// asserts a wall-clock budget. Queues get 30 s leases unless the lease is what
// a test is about; those leave the renewer well over a second of slack.
#include "mqlite/processor.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "mqlite/engine.h"
#include "mqlite/json_codec.h"
#include "mqlite/open.h"
#include "mqlite/typed_queue.h"

#ifdef MQLITE_PROCESSOR_TEST_POSTGRES
#include <libpq-fe.h>

#include "pg_server_url.h"
#endif

namespace mqlite {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Polls `pred` every 5 ms for up to 60 s (a hang guard, not a budget).
template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds limit = 60s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// Sleeps for `d` unless `stop` is stopped first, as a handler doing long work
// should.
void SleepUnlessStopped(const std::stop_token& stop, std::chrono::milliseconds d) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lk(m);
  cv.wait_for(lk, stop, d, [] { return false; });
}

class ProcessorTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string kind = GetParam();
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(test.begin(), test.end(), '/', '_');
    dir_ = fs::temp_directory_path() /
           ("mqlite_processor_" + std::to_string(getpid()) + "_" + test);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    if (kind == "sqlite") {
      url_ = "sqlite:" + (dir_ / "q.db").string();
    } else if (kind == "lmdb") {
      url_ = "lmdb:" + (dir_ / "env").string();
    } else if (kind == "memory") {
      url_ = "memory:";
    } else if (kind == "postgres") {
#ifdef MQLITE_PROCESSOR_TEST_POSTGRES
      base_pg_url_ = test::PgServerUrl();
      ASSERT_FALSE(base_pg_url_.empty());
      schema_ = "mqlite_proc_" + std::to_string(getpid());
      url_ = base_pg_url_ + (base_pg_url_.find('?') == std::string::npos ? "?" : "&") +
             "schema=" + schema_;
#endif
    }
    ASSERT_FALSE(url_.empty()) << "unknown store " << kind;
    ASSERT_NO_FATAL_FAILURE(OpenEngine());
  }

  void TearDown() override {
    if (engine_) (void)engine_->Close();
    engine_.reset();
#ifdef MQLITE_PROCESSOR_TEST_POSTGRES
    if (!schema_.empty()) {
      PGconn* c = PQconnectdb(base_pg_url_.c_str());
      PQclear(PQexec(c, ("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE").c_str()));
      PQfinish(c);
    }
#endif
    fs::remove_all(dir_);
  }

  void OpenEngine() {
    Result<std::unique_ptr<Store>> store = OpenStoreUrl(url_);
    ASSERT_TRUE(store.ok()) << url_ << ": " << store.status().ToString();
    EngineOptions eo;
    eo.maintenance_interval_ms = 50;  // a lapsed lease is reclaimed quickly
    eo.poll_interval_ms = 50;
    Result<std::unique_ptr<Engine>> e = Engine::Open(std::move(*store), eo);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(*e);
  }

  void CreateQueue(const std::string& name, int64_t lock_ms = 30'000, int32_t max_delivery = 10) {
    QueueConfig c;
    c.name = name;
    c.lock_duration_ms = lock_ms;
    c.max_delivery_count = max_delivery;
    ASSERT_TRUE(engine_->CreateQueue(c).ok());
  }

  int64_t SendBody(const std::string& queue, const std::string& body) {
    OutgoingMessage m;
    m.body = body;
    Result<int64_t> seq = engine_->Send(queue, m);
    EXPECT_TRUE(seq.ok()) << seq.status().ToString();
    return seq.value_or(0);
  }

  QueueStats StatsOf(const std::string& queue) {
    Result<QueueStats> s = engine_->Stats(queue);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.value_or(QueueStats{});
  }

  std::vector<Message> PeekState(const std::string& queue, MessageState state) {
    PeekOptions o;
    o.state = state;
    o.max_messages = 1000;
    Result<std::vector<Message>> got = engine_->Peek(queue, o);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    return got.value_or(std::vector<Message>{});
  }

  static ProcessorOptions Options(std::vector<std::string> queues, int concurrency = 2,
                                  int prefetch = 0) {
    ProcessorOptions o;
    o.queues = std::move(queues);
    o.concurrency = concurrency;
    o.prefetch = prefetch;
    o.wait_ms = 200;
    o.retry.initial_backoff_ms = 10;
    o.retry.max_backoff_ms = 50;
    return o;
  }

  std::unique_ptr<Processor> StartOrDie(ProcessorOptions o, Handler h) {
    Result<std::unique_ptr<Processor>> p = Processor::Start(*engine_, std::move(o), std::move(h));
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(*p) : nullptr;
  }

  fs::path dir_;
  std::string url_;
  std::string base_pg_url_;
  std::string schema_;
  std::unique_ptr<Engine> engine_;
};

TEST_P(ProcessorTest, CompletesEveryMessageOnceAcrossWorkersAndQueues) {
  CreateQueue("a");
  CreateQueue("b");
  constexpr int kPerQueue = 150;
  for (int i = 0; i < kPerQueue; ++i) {
    SendBody("a", "a" + std::to_string(i));
    SendBody("b", "b" + std::to_string(i));
  }
  std::mutex mu;
  std::multiset<std::string> seen;
  auto p = StartOrDie(Options({"a", "b"}, 4, 4), [&](const Message& m, const HandlerContext& ctx) {
    EXPECT_EQ(ctx.attempt, 1);
    std::lock_guard lk(mu);
    seen.insert(m.queue + "/" + m.body);
    return HandlerVerdict::Complete();
  });
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return p->stats().completed == 2 * kPerQueue; }))
      << p->stats().completed << " " << p->stats().last_error;
  EXPECT_TRUE(p->Stop().ok());
  const ProcessorStats s = p->stats();
  EXPECT_EQ(s.received, 2 * kPerQueue);
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.handler_errors, 0);
  EXPECT_EQ(s.settle_failures, 0);
  EXPECT_EQ(s.handler_latency.count, 2 * kPerQueue);
  EXPECT_LE(s.handler_latency.p50_us, s.handler_latency.max_us);
  ASSERT_EQ(seen.size(), 2u * kPerQueue);
  for (const std::string& k : seen) EXPECT_EQ(seen.count(k), 1u) << k;
  EXPECT_EQ(StatsOf("a").total, 0);
  EXPECT_EQ(StatsOf("b").total, 0);
  EXPECT_TRUE(p->Stop().ok());  // idempotent
}

TEST_P(ProcessorTest, AppliesEachVerdict) {
  CreateQueue("v");
  const int64_t defer_seq = SendBody("v", "defer");
  const int64_t reject_seq = SendBody("v", "reject");
  SendBody("v", "abandon");
  SendBody("v", "complete");
  std::mutex mu;
  std::map<std::string, std::vector<int32_t>> attempts;
  auto p = StartOrDie(Options({"v"}), [&](const Message& m, const HandlerContext& ctx) {
    {
      std::lock_guard lk(mu);
      attempts[m.body].push_back(ctx.attempt);
    }
    if (m.body == "defer") return HandlerVerdict::Defer();
    if (m.body == "reject") return HandlerVerdict::Reject("BadOrder", "qty is negative");
    if (m.body == "abandon" && ctx.attempt == 1) return HandlerVerdict::Abandon(100);
    return HandlerVerdict::Complete();
  });
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return p->stats().completed == 2; })) << p->stats().last_error;
  ASSERT_TRUE(p->Stop().ok());
  const ProcessorStats s = p->stats();
  EXPECT_EQ(s.abandoned, 1);
  EXPECT_EQ(s.deferred, 1);
  EXPECT_EQ(s.dead_lettered, 1);
  EXPECT_EQ(attempts["abandon"], (std::vector<int32_t>{1, 2}));
  const std::vector<Message> deferred = PeekState("v", MessageState::kDeferred);
  ASSERT_EQ(deferred.size(), 1u);
  EXPECT_EQ(deferred[0].seq, defer_seq);
  const std::vector<Message> dlq = PeekState("v", MessageState::kDeadLettered);
  ASSERT_EQ(dlq.size(), 1u);
  EXPECT_EQ(dlq[0].seq, reject_seq);
  EXPECT_EQ(dlq[0].dead_letter_reason, "BadOrder");
  EXPECT_EQ(dlq[0].dead_letter_description, "qty is negative");
  EXPECT_EQ(StatsOf("v").total, 2);  // the deferred one and the dead letter
}

TEST_P(ProcessorTest, AnInvalidVerdictIsAPermanentErrorNotALockedMessage) {
  CreateQueue("iv");
  const int64_t seq = SendBody("iv", "x");
  auto p = StartOrDie(Options({"iv"}, 1), [](const Message&, const HandlerContext&) {
    return HandlerVerdict::Reject("");  // a reason must be 1-128 bytes
  });
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return StatsOf("iv").dead_lettered == 1; })) << p->stats().last_error;
  ASSERT_TRUE(p->Stop().ok());
  const std::vector<Message> dlq = PeekState("iv", MessageState::kDeadLettered);
  ASSERT_EQ(dlq.size(), 1u);
  EXPECT_EQ(dlq[0].seq, seq);
  EXPECT_EQ(dlq[0].dead_letter_reason, std::string(kReasonProcessingFailed));
  EXPECT_EQ(dlq[0].dead_letter_description->rfind("permanent error: InvalidArgument: ", 0), 0u)
      << *dlq[0].dead_letter_description;
  EXPECT_EQ(p->stats().handler_errors, 1);
  EXPECT_EQ(p->stats().dead_lettered, 1);
}

TEST_P(ProcessorTest, ErrorsAreRetriedThenDeadLetteredWithTheError) {
  CreateQueue("r", 30'000, /*max_delivery=*/3);
  const int64_t transient = SendBody("r", "transient");
  const int64_t permanent = SendBody("r", "permanent");
  const int64_t thrower = SendBody("r", "throw");
  auto p = StartOrDie(Options({"r"}), [&](const Message& m, const HandlerContext&)
                                          -> Result<HandlerVerdict> {
    if (m.body == "transient") return Status::Unavailable("the payment service is down");
    if (m.body == "permanent") return Status::InvalidArgument("order has no lines");
    throw std::runtime_error("boom");
  });
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return StatsOf("r").dead_lettered == 3; }))
      << p->stats().last_error;
  ASSERT_TRUE(p->Stop().ok());
  std::map<int64_t, Message> dlq;
  for (Message& m : PeekState("r", MessageState::kDeadLettered)) dlq[m.seq] = m;
  ASSERT_EQ(dlq.size(), 3u);
  EXPECT_EQ(dlq[transient].dead_letter_reason, std::string(kReasonMaxDelivery));
  EXPECT_EQ(dlq[transient].delivery_count, 3);
  EXPECT_NE(dlq[transient].dead_letter_description->find("last of 3 deliveries failed"),
            std::string::npos)
      << *dlq[transient].dead_letter_description;
  EXPECT_NE(dlq[transient].dead_letter_description->find(
                "Unavailable: the payment service is down"),
            std::string::npos);
  EXPECT_EQ(dlq[permanent].dead_letter_reason, std::string(kReasonProcessingFailed));
  EXPECT_EQ(dlq[permanent].delivery_count, 1);
  EXPECT_EQ(*dlq[permanent].dead_letter_description,
            "permanent error: InvalidArgument: order has no lines");
  EXPECT_EQ(dlq[thrower].dead_letter_reason, std::string(kReasonMaxDelivery));
  EXPECT_NE(dlq[thrower].dead_letter_description->find("handler threw: boom"), std::string::npos)
      << *dlq[thrower].dead_letter_description;
  const ProcessorStats s = p->stats();
  EXPECT_EQ(s.handler_errors, 3 + 1 + 3);
  EXPECT_EQ(s.retried, 2 + 2);
  EXPECT_EQ(s.dead_lettered, 3);
  EXPECT_EQ(s.completed, 0);
}

TEST_P(ProcessorTest, RetryDelayGoesThroughAbandon) {
  CreateQueue("d");
  SendBody("d", "x");
  ProcessorOptions o = Options({"d"});
  o.retry.initial_backoff_ms = 60'000;
  o.retry.max_backoff_ms = 600'000;
  o.retry.jitter = 0.2;
  const int64_t before = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  auto p = StartOrDie(o, [](const Message&, const HandlerContext&) -> Result<HandlerVerdict> {
    return Status::Unavailable("later");
  });
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return p->stats().retried == 1; })) << p->stats().last_error;
  ASSERT_TRUE(p->Stop().ok());
  const std::vector<Message> scheduled = PeekState("d", MessageState::kScheduled);
  ASSERT_EQ(scheduled.size(), 1u);
  // 60 s ± 20 % from the failure, which came after `before`.
  EXPECT_GE(scheduled[0].visible_at, before + 48'000);
  EXPECT_LE(scheduled[0].visible_at, before + 72'000 + 60'000);
  EXPECT_EQ(p->stats().received, 1);
}

TEST_P(ProcessorTest, HandlerSlowerThanTheLeaseKeepsItThroughRenewals) {
  CreateQueue("slow", /*lock_ms=*/2'000);
  SendBody("slow", "long job");
  std::atomic<int> calls{0};
  std::atomic<bool> started{false};
  std::atomic<bool> returned{false};
  std::atomic<bool> interrupted{false};
  auto p = StartOrDie(Options({"slow"}, 1), [&](const Message&, const HandlerContext& ctx) {
    ++calls;
    started = true;
    SleepUnlessStopped(ctx.stop_token, 7'000ms);  // 3.5 leases, unless the lease is lost
    if (ctx.stop_token.stop_requested()) interrupted = true;
    returned = true;
    return HandlerVerdict::Complete();
  });
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return started.load(); }));
  // A rival consumer polling meanwhile: with maintenance every 50 ms an
  // unrenewed lease would lapse after 2 s and the rival would get it.
  std::vector<Message> rival;
  while (!returned) {
    ReceiveOptions ro;
    ro.wait_ms = 100;
    Result<std::vector<Message>> got = engine_->Receive("slow", ro);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    for (Message& m : *got) rival.push_back(std::move(m));
  }
  ASSERT_TRUE(WaitFor([&] { return p->stats().in_flight == 0; }));
  ASSERT_TRUE(p->Stop().ok());
  EXPECT_FALSE(interrupted) << p->stats().last_error;
  EXPECT_TRUE(rival.empty()) << "the rival claimed seq " << rival[0].seq << " mid-handler";
  EXPECT_EQ(calls, 1);
  const ProcessorStats s = p->stats();
  EXPECT_EQ(s.completed, 1) << s.last_error;
  EXPECT_GE(s.renewals, 3) << "a 7 s handler on a 2 s lease, renewed every third of it";
  EXPECT_EQ(s.leases_lost, 0);
  for (const Message& m : rival) (void)engine_->Complete("slow", m.seq, m.lock_token);
  EXPECT_EQ(StatsOf("slow").total, 0);
}

TEST_P(ProcessorTest, ALostLeaseStopsTheHandlerAndItsVerdictIsDropped) {
  CreateQueue("lost", 3'000);  // renewed (and the loss seen) every second
  const int64_t seq = SendBody("lost", "stuck");
  std::atomic<bool> started{false};
  std::atomic<bool> stopped_by_token{false};
  auto p = StartOrDie(Options({"lost"}, 1), [&](const Message&, const HandlerContext& ctx) {
    started = true;
    SleepUnlessStopped(ctx.stop_token, 60s);
    stopped_by_token = ctx.stop_token.stop_requested();
    return HandlerVerdict::Complete();  // must not be applied
  });
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return started.load(); }));
  // An operator dead-letters the stuck message: its lease is revoked.
  ASSERT_TRUE(engine_->DeadLetterMessage("lost", seq, "Operator", "stuck for hours").ok());
  ASSERT_TRUE(WaitFor([&] { return stopped_by_token.load(); }));
  ASSERT_TRUE(p->Stop().ok());
  const ProcessorStats s = p->stats();
  EXPECT_EQ(s.leases_lost, 1);
  EXPECT_EQ(s.completed, 0);
  EXPECT_EQ(s.settle_failures, 0);
  EXPECT_NE(s.last_error.find("LockLost"), std::string::npos) << s.last_error;
  const std::vector<Message> dlq = PeekState("lost", MessageState::kDeadLettered);
  ASSERT_EQ(dlq.size(), 1u);
  EXPECT_EQ(dlq[0].dead_letter_reason, "Operator");
}

TEST_P(ProcessorTest, StopHandsBackUnstartedAndLateMessagesAtOnce) {
  CreateQueue("s", /*lock_ms=*/60'000);  // a lapse would take a minute: hand-back must be explicit
  for (int i = 0; i < 4; ++i) SendBody("s", "m" + std::to_string(i));
  std::atomic<int> started{0};
  auto p = StartOrDie(Options({"s"}, 1, /*prefetch=*/3), [&](const Message&,
                                                             const HandlerContext& ctx) {
    ++started;
    SleepUnlessStopped(ctx.stop_token, 60s);
    return HandlerVerdict::Complete();
  });
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return started == 1 && p->stats().received == 4; }));
  const Status st = p->Stop(100ms);
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st.ToString();
  EXPECT_NE(st.ToString().find("1 message(s) still in flight"), std::string::npos) << st.ToString();
  const ProcessorStats s = p->stats();
  EXPECT_EQ(s.abandoned_on_stop, 4);
  EXPECT_EQ(s.completed, 0);
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(started, 1);
  const QueueStats q = StatsOf("s");
  EXPECT_EQ(q.active, 4);
  EXPECT_EQ(q.locked, 0);
}

TEST_P(ProcessorTest, StopLetsRunningHandlersFinish) {
  CreateQueue("f");
  SendBody("f", "one");
  std::atomic<bool> started{false};
  auto p = StartOrDie(Options({"f"}, 1), [&](const Message&, const HandlerContext&) {
    started = true;
    std::this_thread::sleep_for(300ms);
    return HandlerVerdict::Complete();
  });
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return started.load(); }));
  EXPECT_TRUE(p->Stop(30s).ok());
  EXPECT_EQ(p->stats().completed, 1);
  EXPECT_EQ(p->stats().abandoned_on_stop, 0);
  EXPECT_EQ(StatsOf("f").total, 0);
}

TEST_P(ProcessorTest, StopRunsPrefetchedMessagesOnTheirLastDeliveryInsteadOfDeadLetteringThem) {
  // An Abandon on a message's last delivery dead-letters it (SPEC §3), so
  // Stop must not hand such a message back unprocessed.
  CreateQueue("last", 30'000, /*max_delivery=*/1);
  for (int i = 0; i < 3; ++i) SendBody("last", "m" + std::to_string(i));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  auto p = StartOrDie(Options({"last"}, 1, /*prefetch=*/2),
                      [&](const Message&, const HandlerContext&) {
                        if (started++ == 0) released.wait();
                        return HandlerVerdict::Complete();
                      });
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return started == 1 && p->stats().received == 3; }));
  std::thread stopper([&] { EXPECT_TRUE(p->Stop(30s).ok()); });
  std::this_thread::sleep_for(100ms);  // let Stop begin (the outcome is the same if it has not)
  release.set_value();
  stopper.join();
  const ProcessorStats s = p->stats();
  EXPECT_EQ(s.completed, 3);
  EXPECT_EQ(s.abandoned_on_stop, 0);
  EXPECT_EQ(StatsOf("last").total, 0);
  EXPECT_EQ(StatsOf("last").dead_lettered, 0);
}

// The same with Stop certainly under way before the handler is released:
// a second queue's unstarted messages are handed back first, which is the
// signal that Stop has chosen what to keep.
TEST_P(ProcessorTest, StopKeepsLastDeliveryMessagesWhileHandingBackTheRest) {
  CreateQueue("last", 30'000, /*max_delivery=*/1);
  CreateQueue("other");
  for (int i = 0; i < 3; ++i) SendBody("last", "l" + std::to_string(i));
  for (int i = 0; i < 3; ++i) SendBody("other", "o" + std::to_string(i));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  std::atomic<int> last_completed{0};
  auto p = StartOrDie(Options({"last", "other"}, 1, /*prefetch=*/2),
                      [&](const Message& m, const HandlerContext&) {
                        if (started++ == 0) released.wait();
                        if (m.queue == "last") ++last_completed;
                        return HandlerVerdict::Complete();
                      });
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return started == 1 && p->stats().received == 6; }));
  std::thread stopper([&] { EXPECT_TRUE(p->Stop(30s).ok()); });
  // At least two of "other" were claimed and not started.
  ASSERT_TRUE(WaitFor([&] { return p->stats().abandoned_on_stop >= 2; }));
  release.set_value();
  stopper.join();
  EXPECT_EQ(last_completed, 3);
  EXPECT_EQ(StatsOf("last").total, 0);
  EXPECT_EQ(StatsOf("last").dead_lettered, 0);
  EXPECT_EQ(StatsOf("other").locked, 0);
  EXPECT_EQ(StatsOf("other").active, p->stats().abandoned_on_stop);
}

TEST_P(ProcessorTest, ASecondStopWaitsForTheFirst) {
  CreateQueue("two");
  SendBody("two", "x");
  std::atomic<bool> started{false};
  auto p = StartOrDie(Options({"two"}, 1), [&](const Message&, const HandlerContext&) {
    started = true;
    std::this_thread::sleep_for(300ms);
    return HandlerVerdict::Complete();
  });
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return started.load(); }));
  std::atomic<int64_t> seen_by_first{-1};
  std::atomic<int64_t> seen_by_second{-1};
  std::thread first([&] {
    EXPECT_TRUE(p->Stop(30s).ok());
    seen_by_first = p->stats().completed;
  });
  std::thread second([&] {
    EXPECT_TRUE(p->Stop(30s).ok());
    seen_by_second = p->stats().completed;
  });
  first.join();
  second.join();
  EXPECT_EQ(seen_by_first, 1);
  EXPECT_EQ(seen_by_second, 1) << "a concurrent Stop returned before the handler finished";
}

TEST_P(ProcessorTest, TxHandlerCommitsItsOutputsWithTheSettleOrNotAtAll) {
  CreateQueue("in");
  CreateQueue("out");
  constexpr int kN = 40;
  for (int i = 0; i < kN; ++i) SendBody("in", std::to_string(i));
  Result<std::unique_ptr<Processor>> p = Processor::StartTx(
      *engine_, Options({"in"}, 2),
      [&](const Message& m, TxContext& tx, const HandlerContext& ctx) -> Result<HandlerVerdict> {
        OutgoingMessage out;
        out.body = m.body + "!";
        Result<int64_t> sent = tx.Send("out", out);
        if (!sent.ok()) return sent.status();
        // Every fifth input fails on its first delivery after writing.
        if (std::stoi(m.body) % 5 == 0 && ctx.attempt == 1) {
          return Status::Unavailable("downstream timed out");
        }
        return HandlerVerdict::Complete();
      });
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(WaitFor([&] { return (*p)->stats().completed == kN; })) << (*p)->stats().last_error;
  ASSERT_TRUE((*p)->Stop().ok());
  EXPECT_EQ((*p)->stats().retried, kN / 5);
  EXPECT_EQ(StatsOf("in").total, 0);
  const std::vector<Message> outs = PeekState("out", MessageState::kActive);
  std::set<std::string> bodies;
  for (const Message& m : outs) bodies.insert(m.body);
  EXPECT_EQ(outs.size(), static_cast<size_t>(kN)) << "a failed attempt's output was kept";
  EXPECT_EQ(bodies.size(), static_cast<size_t>(kN));
}

struct Order {
  std::string id;
  int qty = 0;
  friend bool operator==(const Order&, const Order&) = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Order, id, qty)

TEST_P(ProcessorTest, TypedQueueDecodesAndDeadLettersInvalidPayloads) {
  CreateQueue("orders");
  TypedQueue<Order, JsonCodec<Order>> orders(*engine_, "orders");
  ASSERT_TRUE(orders.Send({"A-1", 3}).ok());
  const int64_t bad_json = SendBody("orders", "{not json");
  const int64_t bad_shape = SendBody("orders", R"({"id":"A-2"})");  // no qty
  ASSERT_TRUE(orders.Send({"A-3", 5}).ok());

  ReceiveOptions rd;
  rd.mode = ReceiveMode::kReceiveAndDelete;
  EXPECT_EQ(orders.Receive(rd).status().code(), StatusCode::kInvalidArgument);

  ReceiveOptions ro;
  ro.max_messages = 10;
  Result<std::vector<Typed<Order>>> got = orders.Receive(ro);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].value, (Order{"A-1", 3}));
  EXPECT_EQ((*got)[1].value, (Order{"A-3", 5}));
  EXPECT_EQ((*got)[0].message.content_type, "application/json");
  for (const auto& m : *got) EXPECT_TRUE(orders.Complete(m).ok());
  EXPECT_EQ(orders.invalid_dead_lettered(), 2);
  std::map<int64_t, Message> dlq;
  for (Message& m : PeekState("orders", MessageState::kDeadLettered)) dlq[m.seq] = m;
  ASSERT_EQ(dlq.size(), 2u);
  for (int64_t seq : {bad_json, bad_shape}) {
    EXPECT_EQ(dlq[seq].dead_letter_reason, std::string(kReasonInvalidPayload));
    EXPECT_EQ(dlq[seq].dead_letter_description->rfind("InvalidArgument: invalid JSON payload: ", 0),
              0u)
        << *dlq[seq].dead_letter_description;
  }
  EXPECT_NE(dlq[bad_shape].dead_letter_description->find("qty"), std::string::npos)
      << *dlq[bad_shape].dead_letter_description;
}

TEST_P(ProcessorTest, TypedHandlerDeadLettersWhatDoesNotDecode) {
  CreateQueue("orders");
  TypedQueue<Order, JsonCodec<Order>> orders(*engine_, "orders");
  std::vector<Order> batch = {{"B-1", 1}, {"B-2", 2}};
  ASSERT_TRUE(orders.SendBatch(batch).ok());
  const int64_t bad = SendBody("orders", "[]");
  std::mutex mu;
  std::vector<Order> handled;
  auto p = StartOrDie(Options({"orders"}, 1),
                      orders.Handle([&](const Order& o, const Message&, const HandlerContext&) {
                        std::lock_guard lk(mu);
                        handled.push_back(o);
                        return HandlerVerdict::Complete();
                      }));
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return p->stats().completed == 2 && p->stats().dead_lettered == 1; }))
      << p->stats().last_error;
  ASSERT_TRUE(p->Stop().ok());
  EXPECT_EQ(handled, batch);
  const std::vector<Message> dlq = PeekState("orders", MessageState::kDeadLettered);
  ASSERT_EQ(dlq.size(), 1u);
  EXPECT_EQ(dlq[0].seq, bad);
  EXPECT_EQ(dlq[0].dead_letter_reason, std::string(kReasonInvalidPayload));
}

// A real SIGKILL of a process mid-handler, inside its Tx after it wrote its
// output: after the store is reopened (embedded: recovery at open; shared:
// the lapsed lease is reclaimed) the message is delivered again and its
// output exists exactly once. The in-memory store is not a parameter: its
// messages do not outlive the process.
class ProcessorKillTest : public ProcessorTest {};

TEST_P(ProcessorKillTest, KillMidHandlerRedeliversAndKeepsOutputsExactlyOnce) {
  CreateQueue("in", /*lock_ms=*/2'000);  // PostgreSQL: the dead child's lease lapses
  CreateQueue("out");
  constexpr int kN = 12;
  for (int i = 0; i < kN; ++i) SendBody("in", i == 5 ? "victim" : "m" + std::to_string(i));
  ASSERT_TRUE(engine_->Close().ok());  // the child takes the store
  engine_.reset();

  auto handler = [](int signal_fd) {
    return [signal_fd](const Message& m, TxContext& tx, const HandlerContext& ctx)
               -> Result<HandlerVerdict> {
      OutgoingMessage out;
      out.body = m.body + "@" + std::to_string(ctx.attempt);
      Result<int64_t> sent = tx.Send("out", out);
      if (!sent.ok()) return sent.status();
      if (signal_fd >= 0 && m.body == "victim") {
        const char c = 'k';
        (void)!write(signal_fd, &c, 1);
        for (;;) pause();  // killed here, output written but not committed
      }
      return HandlerVerdict::Complete();
    };
  };

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    Result<std::unique_ptr<Store>> store = OpenStoreUrl(url_);
    if (!store.ok()) _exit(10);
    Result<std::unique_ptr<Engine>> e = Engine::Open(std::move(*store));
    if (!e.ok()) _exit(11);
    Result<std::unique_ptr<Processor>> p =
        Processor::StartTx(**e, Options({"in"}, 2), handler(fds[1]));
    if (!p.ok()) _exit(12);
    for (;;) pause();
  }
  close(fds[1]);
  pollfd pfd{fds[0], POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 60'000), 1) << "the child never reached the victim";
  char c = 0;
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  close(fds[0]);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;

  ASSERT_NO_FATAL_FAILURE(OpenEngine());
  Result<std::unique_ptr<Processor>> p =
      Processor::StartTx(*engine_, Options({"in"}, 2), handler(-1));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(WaitFor([&] { return StatsOf("in").total == 0; })) << (*p)->stats().last_error;
  ASSERT_TRUE((*p)->Stop().ok());
  std::multiset<std::string> outs;
  for (const Message& m : PeekState("out", MessageState::kActive)) {
    outs.insert(m.body.substr(0, m.body.find('@')));
    if (m.body.rfind("victim@", 0) == 0) {
      EXPECT_EQ(m.body, "victim@2") << "delivered again after the kill";
    }
  }
  ASSERT_EQ(outs.size(), static_cast<size_t>(kN));
  EXPECT_EQ(outs.count("victim"), 1u);
  for (int i = 0; i < kN; ++i) {
    const std::string body = i == 5 ? "victim" : "m" + std::to_string(i);
    EXPECT_EQ(outs.count(body), 1u) << body;
  }
}

std::vector<std::string> Stores(bool persistent_only) {
  std::vector<std::string> out;
  for (const std::string& s : BuiltStoreSchemes()) {
    const std::string name = s == "postgresql" ? "postgres" : s;
    if (persistent_only && name == "memory") continue;
    out.push_back(name);
  }
  return out;
}

std::string Name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Stores, ProcessorTest, ::testing::ValuesIn(Stores(false)), Name);
INSTANTIATE_TEST_SUITE_P(Stores, ProcessorKillTest, ::testing::ValuesIn(Stores(true)), Name);

// ---- Without a store --------------------------------------------------------

TEST(RetryPolicyTest, BackoffGrowsExponentiallyWithinItsJitterAndCap) {
  RetryPolicy r;
  r.initial_backoff_ms = 100;
  r.max_backoff_ms = 1'000;
  r.multiplier = 2.0;
  r.jitter = 0.0;
  EXPECT_EQ(r.Backoff(1, 0.7), 100);
  EXPECT_EQ(r.Backoff(2, 0.7), 200);
  EXPECT_EQ(r.Backoff(3, 0.7), 400);
  EXPECT_EQ(r.Backoff(4, 0.7), 800);
  EXPECT_EQ(r.Backoff(5, 0.7), 1'000);
  EXPECT_EQ(r.Backoff(1'000, 0.7), 1'000);  // no overflow
  EXPECT_EQ(r.Backoff(0, 0.7), 100);        // treated as the first
  r.jitter = 0.5;
  EXPECT_EQ(r.Backoff(2, 0.0), 100);   // 200 · 0.5
  EXPECT_EQ(r.Backoff(2, 0.5), 200);
  EXPECT_EQ(r.Backoff(2, 0.999), 300);  // 200 · ~1.5
  EXPECT_EQ(r.Backoff(5, 0.999), 1'000);  // capped after the jitter too
  r.initial_backoff_ms = 0;
  EXPECT_EQ(r.Backoff(3, 0.9), 0);
  r.multiplier = 100.0;  // 0 · 100^999 overflows to 0 · inf: still 0, never NaN
  EXPECT_EQ(r.Backoff(1'000, 0.9), 0);
  r.initial_backoff_ms = 1;
  EXPECT_EQ(r.Backoff(1'000, 0.9), 1'000);  // inf capped
}

class ProcessorOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<Store>> store = OpenStoreUrl("memory:");
    ASSERT_TRUE(store.ok());
    Result<std::unique_ptr<Engine>> e = Engine::Open(std::move(*store));
    ASSERT_TRUE(e.ok());
    engine_ = std::move(*e);
    QueueConfig c;
    c.name = "q";
    ASSERT_TRUE(engine_->CreateQueue(c).ok());
  }
  Status StartWith(ProcessorOptions o) {
    Result<std::unique_ptr<Processor>> p = Processor::Start(
        *engine_, std::move(o),
        [](const Message&, const HandlerContext&) { return HandlerVerdict::Complete(); });
    return p.status();
  }
  std::unique_ptr<Engine> engine_;
};

TEST_F(ProcessorOptionsTest, RefusesBadOptionsNamingTheField) {
  struct Case {
    const char* field;
    std::function<void(ProcessorOptions&)> set;
  };
  const std::vector<Case> cases = {
      {"queues", [](ProcessorOptions& o) { o.queues.clear(); }},
      {"listed twice", [](ProcessorOptions& o) { o.queues = {"q", "q"}; }},
      {"queue name", [](ProcessorOptions& o) { o.queues = {"bad name!"}; }},
      {"concurrency", [](ProcessorOptions& o) { o.concurrency = 0; }},
      {"concurrency", [](ProcessorOptions& o) { o.concurrency = 257; }},
      {"prefetch", [](ProcessorOptions& o) { o.prefetch = -1; }},
      {"wait_ms", [](ProcessorOptions& o) { o.wait_ms = 0; }},
      {"wait_ms", [](ProcessorOptions& o) { o.wait_ms = 20'001; }},
      {"initial_backoff_ms", [](ProcessorOptions& o) { o.retry.initial_backoff_ms = -1; }},
      {"initial_backoff_ms",
       [](ProcessorOptions& o) { o.retry.initial_backoff_ms = o.retry.max_backoff_ms + 1; }},
      {"max_backoff_ms", [](ProcessorOptions& o) { o.retry.max_backoff_ms = -5; }},
      {"multiplier", [](ProcessorOptions& o) { o.retry.multiplier = 0.5; }},
      {"jitter", [](ProcessorOptions& o) { o.retry.jitter = 1.5; }},
  };
  for (const Case& c : cases) {
    ProcessorOptions o;
    o.queues = {"q"};
    c.set(o);
    const Status s = StartWith(o);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.field << ": " << s.ToString();
    EXPECT_NE(s.ToString().find(c.field), std::string::npos) << s.ToString();
  }
  ProcessorOptions missing;
  missing.queues = {"q", "nope"};
  EXPECT_EQ(StartWith(missing).code(), StatusCode::kQueueNotFound);
  Result<std::unique_ptr<Processor>> no_handler = Processor::Start(*engine_, {.queues = {"q"}}, {});
  EXPECT_EQ(no_handler.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ProcessorOptionsTest, StopFromAHandlerIsRefused) {
  OutgoingMessage m;
  m.body = "x";
  ASSERT_TRUE(engine_->Send("q", m).ok());
  std::promise<Processor*> self;
  std::shared_future<Processor*> self_future = self.get_future().share();
  std::promise<Status> from_handler;
  ProcessorOptions o;
  o.queues = {"q"};
  o.wait_ms = 50;
  Result<std::unique_ptr<Processor>> p =
      Processor::Start(*engine_, o, [&](const Message&, const HandlerContext&) {
        from_handler.set_value(self_future.get()->Stop());
        return HandlerVerdict::Complete();
      });
  ASSERT_TRUE(p.ok());
  self.set_value(p->get());
  const Status s = from_handler.get_future().get();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_TRUE((*p)->Stop().ok());
  EXPECT_EQ((*p)->stats().completed, 1);
}

TEST(TypedQueueTest, DeadLetterDescriptionsAreCutAtACharacterBoundary) {
  // "InvalidArgument: " is 17 bytes; then 1005 ASCII bytes end at 1022, so
  // the 3-byte euro sign that follows does not fit in 1024 and must go whole,
  // while a 2-byte character there would fit and must stay.
  const std::string euro = "\xe2\x82\xac";
  const std::string cut = typed_internal::DeadLetterDescription(
      Status::InvalidArgument(std::string(1005, 'a') + euro + "tail"));
  EXPECT_EQ(cut.size(), 1022u);
  const std::string e_acute = "\xc3\xa9";
  const std::string kept = typed_internal::DeadLetterDescription(
      Status::InvalidArgument(std::string(1005, 'a') + e_acute + "tail"));
  EXPECT_EQ(kept.size(), 1024u);
  EXPECT_EQ(kept.substr(1022), e_acute);
}

TEST(JsonCodecTest, EncodeErrorsAreStatusesNotExceptions) {
  JsonCodec<std::string> codec;
  Result<std::string> bad = codec.Encode(std::string("\xff\xfe"));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*codec.Encode(std::string("ok")), "\"ok\"");
  EXPECT_EQ(*codec.Decode("\"ok\""), "ok");
  EXPECT_EQ(codec.Decode("42").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mqlite
