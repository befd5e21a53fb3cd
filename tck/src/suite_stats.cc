// TckLifecycle (continued) — inspecting a queue without changing it: Stats
// counts per state, bytes and the oldest claimable age, and Peek by state with
// paging by seq, which takes no lock (SPEC §6). More oldest-claimable cases are
// in suite_operations.cc.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorStats() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

// ---- Stats and Peek (SPEC §6) ------------------------------------------------------------

MQLITE_TCK_GRADES(TckLifecycle, Spec6_StatsOfAnEmptyQueueAreZero, "G3");
TEST_P(TckLifecycle, Spec6_StatsOfAnEmptyQueueAreZero) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_TRUE(StatsEq(st, QueueStats{}));
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_StatsCountEveryStateBytesAndOldestClaimableAge, "G3");
TEST_P(TckLifecycle, Spec6_StatsCountEveryStateBytesAndOldestClaimableAge) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t b, SendBody(engine(), "jobs", "bb"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t c, SendBody(engine(), "jobs", "ccc"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t d, SendBody(engine(), "jobs", "dddd"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "jobs", 3));
  ASSERT_EQ(Seqs(got), (std::vector<int64_t>{b, c, d}));
  MQ_ASSERT_OK(engine().Defer("jobs", c, got[1].lock_token));
  MQ_ASSERT_OK(engine().Reject("jobs", d, got[2].lock_token, "r"));
  clock().Advance(1'000);
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "a"));  // oldest claimable, enqueued kT0 + 1 s
  MQ_ASSERT_OK(engine().Send("jobs", {.body = "eeeee", .delay_ms = 60'000}));
  clock().Advance(2'000);
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "ffffff"));  // younger claimable
  clock().Advance(2'000);                              // now = kT0 + 5 s

  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  QueueStats want;
  want.active = 2;
  want.locked = 1;
  want.deferred = 1;
  want.scheduled = 1;
  want.dead_lettered = 1;
  want.total = 6;
  want.body_bytes = 2 + 3 + 4 + 1 + 5 + 6;
  want.oldest_claimable_age_ms = 4'000;
  EXPECT_TRUE(StatsEq(st, want));
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_OldestClaimableAgeIgnoresLockedAndScheduled, "G3");
TEST_P(TckLifecycle, Spec6_OldestClaimableAgeIgnoresLockedAndScheduled) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "old"));
  MQ_ASSERT_OK(ReceiveOne(engine(), "jobs"));  // locked: not claimable
  MQ_ASSERT_OK(engine().Send("jobs", {.body = "s", .delay_ms = 100'000}));
  clock().Advance(3'000);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats none, StatsOf(engine(), "jobs"));
  EXPECT_EQ(none.oldest_claimable_age_ms, 0);
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "new"));
  clock().Advance(500);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st, StatsOf(engine(), "jobs"));
  EXPECT_EQ(st.oldest_claimable_age_ms, 500);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_PeekByStateAndPagingBySeq, "G3");
TEST_P(TckLifecycle, Spec6_PeekByStateAndPagingBySeq) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  std::vector<int64_t> s;
  for (int i = 0; i < 10; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "jobs", "m" + std::to_string(i)));
    s.push_back(seq);
  }
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> locked, ReceiveMany(engine(), "jobs", 3));
  ASSERT_EQ(locked.size(), 3u);

  PeekOptions o{.state = MessageState::kActive, .from_seq = 0, .max_messages = 3};
  std::vector<std::vector<int64_t>> pages;
  for (;;) {
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> page, engine().Peek("jobs", o));
    if (page.empty()) break;
    ASSERT_LE(page.size(), 3u);
    for (const Message& m : page) EXPECT_EQ(m.state, MessageState::kActive);
    pages.push_back(Seqs(page));
    o.from_seq = page.back().seq;
    ASSERT_LT(pages.size(), 10u);
  }
  EXPECT_EQ(pages,
            (std::vector<std::vector<int64_t>>{{s[3], s[4], s[5]}, {s[6], s[7], s[8]}, {s[9]}}));

  MQ_ASSERT_OK_AND_ASSIGN(
      std::vector<Message> lk,
      engine().Peek("jobs", {.state = MessageState::kLocked, .max_messages = 100}));
  EXPECT_EQ(Seqs(lk), (std::vector<int64_t>{s[0], s[1], s[2]}));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> all, engine().Peek("jobs", {.max_messages = 100}));
  EXPECT_EQ(Seqs(all), s);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> mid,
                          engine().Peek("jobs", {.from_seq = s[4], .max_messages = 2}));
  EXPECT_EQ(Seqs(mid), (std::vector<int64_t>{s[5], s[6]}));
  MQ_ASSERT_OK_AND_ASSIGN(
      std::vector<Message> deferred,
      engine().Peek("jobs", {.state = MessageState::kDeferred, .max_messages = 100}));
  EXPECT_TRUE(deferred.empty());
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_PeekTakesNoLockAndChangesNothing, "G3");
TEST_P(TckLifecycle, Spec6_PeekTakesNoLockAndChangesNothing) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t seq, SendBody(engine(), "jobs", "look"));
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats before, StatsOf(engine(), "jobs"));
  for (int i = 0; i < 3; ++i) {
    MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> page, engine().Peek("jobs"));
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].state, MessageState::kActive);
    EXPECT_EQ(page[0].delivery_count, 0);
    EXPECT_TRUE(page[0].lock_token.empty());
    EXPECT_EQ(page[0].locked_until, 0);
  }
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats after, StatsOf(engine(), "jobs"));
  EXPECT_TRUE(StatsEq(before, after));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "jobs"));
  EXPECT_EQ(m.seq, seq);
  EXPECT_EQ(m.delivery_count, 1);
}

MQLITE_TCK_GRADES(TckLifecycle, Spec6_PeekShowsDeadLettersWithTheirReason, "G3", "G4");
TEST_P(TckLifecycle, Spec6_PeekShowsDeadLettersWithTheirReason) {
  MQ_ASSERT_OK(CreateQueue(engine(), "jobs"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t dead, MakeDeadLetter(engine(), "dl"));
  MQ_ASSERT_OK(SendBody(engine(), "jobs", "live"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> dlq,
                          PeekAllOf(engine(), "jobs", MessageState::kDeadLettered));
  ASSERT_EQ(dlq.size(), 1u);
  EXPECT_EQ(dlq[0].seq, dead);
  EXPECT_EQ(dlq[0].dead_letter_reason, std::optional<std::string>("Test"));
  EXPECT_EQ(dlq[0].dead_letter_description, std::optional<std::string>("made by the test"));
}

}  // namespace
}  // namespace mqlite::tck
