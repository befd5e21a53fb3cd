// Clocks (SPEC §1): the engine's only source of "now", in epoch milliseconds.
#include "mqlite/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace mqlite {
namespace {

int64_t WallNowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

TEST(ManualClockTest, StartsAtTheGivenTime) {
  ManualClock a;
  EXPECT_EQ(a.NowMs(), 1'700'000'000'000);
  ManualClock b(42);
  EXPECT_EQ(b.NowMs(), 42);
  ManualClock c(0);
  EXPECT_EQ(c.NowMs(), 0);
}

TEST(ManualClockTest, MovesOnlyWhenTold) {
  ManualClock c(1'000);
  EXPECT_EQ(c.NowMs(), 1'000);
  EXPECT_EQ(c.NowMs(), 1'000);
  c.Advance(250);
  EXPECT_EQ(c.NowMs(), 1'250);
  c.Advance(0);
  EXPECT_EQ(c.NowMs(), 1'250);
  c.Set(5'000);
  EXPECT_EQ(c.NowMs(), 5'000);
  c.Set(10);  // a manual clock may also go backwards
  EXPECT_EQ(c.NowMs(), 10);
  c.Advance(-5);
  EXPECT_EQ(c.NowMs(), 5);
}

TEST(ManualClockTest, UsableThroughTheClockInterface) {
  ManualClock m(100);
  Clock* c = &m;
  EXPECT_EQ(c->NowMs(), 100);
  m.Advance(1);
  EXPECT_EQ(c->NowMs(), 101);
}

TEST(ManualClockTest, ConcurrentAdvancesAreNotLost) {
  ManualClock c(0);
  constexpr int kThreads = 4;
  constexpr int kSteps = 10'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < kSteps; ++i) {
        c.Advance(1);
        (void)c.NowMs();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(c.NowMs(), int64_t{kThreads} * kSteps);
}

TEST(SystemClockTest, IsASingletonThatIsNeverNull) {
  Clock* a = SystemClock();
  Clock* b = SystemClock();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, b);
}

TEST(SystemClockTest, ReadsUnixEpochMilliseconds) {
  int64_t before = WallNowMs();
  int64_t now = SystemClock()->NowMs();
  int64_t after = WallNowMs();
  EXPECT_LE(before, now);
  EXPECT_LE(now, after);
  // Milliseconds, not seconds or microseconds: after 2020-01-01, before 2200.
  EXPECT_GT(now, 1'577'836'800'000);
  EXPECT_LT(now, 7'258'118'400'000);
}

TEST(SystemClockTest, SafeFromManyThreads) {
  std::vector<std::thread> threads;
  std::vector<int64_t> seen(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&seen, t] {
      for (int i = 0; i < 1'000; ++i) seen[t] = SystemClock()->NowMs();
    });
  }
  for (std::thread& t : threads) t.join();
  for (int64_t v : seen) EXPECT_GT(v, 1'577'836'800'000);
}

}  // namespace
}  // namespace mqlite
