// Long-poll wake-ups through the engine (Engine::Receive, spec.md §6 and §9)
// over the in-memory store, exclusive and shared (with its change feed): a
// send to a queue that several callers of one engine wait on costs one claim,
// not one per waiter, and still reaches a waiter every time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/memory.h"
#include "mqlite/store.h"
#include "suite_util.h"

namespace mqlite {
namespace {

using namespace std::chrono_literals;

// Counts the claims the engine makes.
class ClaimCountingTxn : public StoreTxnWrapper {
 public:
  ClaimCountingTxn(StoreTxn* inner, std::atomic<int>* claims)
      : StoreTxnWrapper(inner), claims_(claims) {}
  Result<std::vector<Message>> Claim(const QueueRecord& q, const ClaimRequest& r) override {
    ++*claims_;
    return StoreTxnWrapper::Claim(q, r);
  }

 private:
  std::atomic<int>* claims_;
};

class ClaimCounter : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  std::atomic<int> claims{0};

 protected:
  std::unique_ptr<StoreTxn> WrapTxn(StoreTxn* inner) override {
    return std::make_unique<ClaimCountingTxn>(inner, &claims);
  }
};

using tck::suite::SpinUntil;

class LongPollTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    auto store = OpenMemoryStore(NewMemoryDatabase(), MemoryStoreOptions{.shared = GetParam()});
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    auto counter = std::make_unique<ClaimCounter>(std::move(*store));
    counter_ = counter.get();
    EngineOptions o;
    o.poll_interval_ms = 3'600'000;  // only a send may end a wait
    o.background_maintenance = false;
    auto engine = Engine::Open(std::move(counter), o);
    ASSERT_TRUE(engine.ok()) << engine.error().ToString();
    engine_ = std::move(*engine);
    ASSERT_TRUE(engine_->CreateQueue({.name = "q"}).ok());
  }
  void TearDown() override {
    if (engine_) {
      EXPECT_TRUE(engine_->Close().ok());
    }
  }

  std::unique_ptr<Engine> engine_;
  ClaimCounter* counter_ = nullptr;
};

// Six callers wait on an empty queue, each for up to 16 messages; six sends
// follow, one at a time. Each send wakes all six (a send cannot know who
// waits), but only one of the woken claims: it takes fewer than it asked
// for, which shows the others that nothing more came since they woke, and
// they wait again without a claim of their own. Every message still reaches
// a caller, each caller gets one, and a caller whose turn came claims
// again after the next send.
TEST_P(LongPollTest, Spec9_ASendToManyWaitersCostsOneClaimAndReachesOne) {
  constexpr int kWaiters = 6;
  std::mutex mu;
  std::vector<std::vector<Message>> got;
  std::vector<std::thread> ts;
  std::atomic<int> done{0};
  for (int i = 0; i < kWaiters; ++i) {
    ts.emplace_back([&] {
      ReceiveOptions ro;
      ro.max_messages = 16;
      ro.wait_ms = 20'000;
      auto r = engine_->Receive("q", ro);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      std::lock_guard<std::mutex> l(mu);
      got.push_back(r.ok() ? *r : std::vector<Message>{});
      ++done;
    });
  }
  // Each made its first claim (on an empty queue) and is about to wait.
  ASSERT_TRUE(SpinUntil([&] { return counter_->claims.load() >= kWaiters; }));
  std::this_thread::sleep_for(50ms);
  for (int n = 1; n <= kWaiters; ++n) {
    SCOPED_TRACE("send " + std::to_string(n));
    const int before = counter_->claims.load();
    ASSERT_TRUE(engine_->Send("q", {.body = "m" + std::to_string(n)}).ok());
    ASSERT_TRUE(SpinUntil([&] { return done.load() >= n; })) << "no waiter took the message";
    std::this_thread::sleep_for(50ms);  // let the others settle back into their wait
    EXPECT_LE(counter_->claims.load() - before, 2)
        << "a send woke " << kWaiters - n + 1 << " waiters and each claimed";
    EXPECT_EQ(done.load(), n) << "one message, one caller";
  }
  for (auto& t : ts) t.join();
  std::set<int64_t> seqs;
  for (const auto& batch : got) {
    ASSERT_EQ(batch.size(), 1u) << "every caller got exactly one message";
    seqs.insert(batch[0].seq);
  }
  EXPECT_EQ(seqs.size(), static_cast<size_t>(kWaiters));
}

INSTANTIATE_TEST_SUITE_P(Stores, LongPollTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "shared" : "exclusive"; });

}  // namespace
}  // namespace mqlite
