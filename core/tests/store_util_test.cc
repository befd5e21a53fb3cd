// The queue rules every store shares (mqlite/store_util.h): each verdict
// against the SPEC § it decides, and RunGate's cancellable wait (SPEC §10).
#include "mqlite/store_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <ostream>
#include <stop_token>
#include <thread>

namespace mqlite {
inline void PrintTo(StatusCode code, std::ostream* os) { *os << StatusCodeName(code); }
inline void PrintTo(MessageState s, std::ostream* os) { *os << MessageStateName(s); }

namespace {

using Action = Verdict::Action;

constexpr int64_t kNow = 1'000'000;

QueueConfig Config(int32_t max_delivery = 3, bool dead_letter_on_expire = true) {
  QueueConfig c;
  c.name = "q";
  c.max_delivery_count = max_delivery;
  c.dead_letter_on_expire = dead_letter_on_expire;
  return c;
}

LockToken Token(uint8_t b) {
  LockToken t;
  t.bytes.fill(b);
  return t;
}

RowFacts Locked(int32_t delivery_count = 1, int64_t locked_until = kNow + 100) {
  RowFacts r;
  r.state = MessageState::kLocked;
  r.delivery_count = delivery_count;
  r.locked_until = locked_until;
  r.token = Token(7);
  return r;
}

SettleRequest Req(SettleOp op) {
  SettleRequest req;
  req.seq = 42;
  req.token = Token(7);
  req.op = op;
  req.now = kNow;
  return req;
}

TEST(StoreUtilTest, Spec3_ExpiredOnlyOnceTtlIsReached) {
  RowFacts r;
  EXPECT_FALSE(Expired(r, kNow)) << "expires_at 0 never expires";
  r.expires_at = kNow + 1;
  EXPECT_FALSE(Expired(r, kNow));
  r.expires_at = kNow;
  EXPECT_TRUE(Expired(r, kNow));
}

TEST(StoreUtilTest, Spec3_ExpireDeadLettersOrDeletesPerQueueConfig) {
  Verdict v = DecideExpire(Config(3, true));
  EXPECT_EQ(v.action, Action::kDeadLetter);
  EXPECT_EQ(v.reason, kReasonTtlExpired);
  EXPECT_EQ(DecideExpire(Config(3, false)).action, Action::kDelete);
}

TEST(StoreUtilTest, Spec7_4_ClaimDeliversExpiresOrDeadLetters) {
  RowFacts r;
  r.delivery_count = 2;
  EXPECT_EQ(DecideClaim(r, Config(3), kNow).action, Action::kDeliver);
  EXPECT_TRUE(WouldDeliver(r, Config(3), kNow));

  r.delivery_count = 3;
  Verdict v = DecideClaim(r, Config(3), kNow);
  EXPECT_EQ(v.action, Action::kDeadLetter);
  EXPECT_EQ(v.reason, kReasonMaxDelivery);
  EXPECT_FALSE(WouldDeliver(r, Config(3), kNow));

  r.expires_at = kNow;  // TTL first, even when also out of deliveries
  v = DecideClaim(r, Config(3), kNow);
  EXPECT_EQ(v.reason, kReasonTtlExpired);
  EXPECT_EQ(DecideClaim(r, Config(3, false), kNow).action, Action::kDelete);
}

TEST(StoreUtilTest, Spec7_1_ReclaimUnlocksOrDeadLetters) {
  Verdict v = DecideReclaim(Locked(2), Config(3));
  EXPECT_EQ(v.action, Action::kUnlock);
  EXPECT_EQ(v.to, MessageState::kActive);
  v = DecideReclaim(Locked(3), Config(3));
  EXPECT_EQ(v.action, Action::kDeadLetter);
  EXPECT_EQ(v.reason, kReasonMaxDelivery);
}

TEST(StoreUtilTest, Spec6_SettleNeedsTheExactTokenAndALiveLease) {
  const RowFacts ok = Locked();
  EXPECT_TRUE(DecideSettle(&ok, Config(), Req(SettleOp::kComplete)).has_value());

  EXPECT_EQ(DecideSettle(nullptr, Config(), Req(SettleOp::kComplete)).error().code(),
            StatusCode::kLockLost);
  RowFacts other = ok;
  other.token = Token(8);
  EXPECT_EQ(DecideSettle(&other, Config(), Req(SettleOp::kRenew)).error().code(),
            StatusCode::kLockLost);
  RowFacts ended = Locked(1, kNow);  // a lease whose end equals now has ended
  EXPECT_EQ(DecideSettle(&ended, Config(), Req(SettleOp::kComplete)).error().code(),
            StatusCode::kLockLost);
  RowFacts active = ok;
  active.state = MessageState::kActive;
  Result<Verdict> lost = DecideSettle(&active, Config(), Req(SettleOp::kAbandon));
  ASSERT_FALSE(lost.has_value());
  EXPECT_EQ(lost.error().code(), StatusCode::kLockLost);
  EXPECT_NE(lost.error().message().find("seq 42"), std::string::npos);
}

TEST(StoreUtilTest, Spec6_SettleVerdictPerOperation) {
  const RowFacts row = Locked(1, kNow + 100);
  auto decide = [&](SettleRequest req) {
    Result<Verdict> v = DecideSettle(&row, Config(), req);
    EXPECT_TRUE(v.has_value());
    return v.has_value() ? *v : Verdict{};
  };

  Verdict v = decide(Req(SettleOp::kComplete));
  EXPECT_EQ(v.action, Action::kDelete);
  EXPECT_TRUE(SettleResultOf(v).deleted);

  v = decide(Req(SettleOp::kAbandon));
  EXPECT_EQ(v.action, Action::kUnlock);
  EXPECT_EQ(SettleResultOf(v).new_state, MessageState::kActive);

  SettleRequest delayed = Req(SettleOp::kAbandon);
  delayed.delay_ms = 500;
  v = decide(delayed);
  EXPECT_EQ(v.to, MessageState::kScheduled);
  EXPECT_EQ(v.visible_at, kNow + 500);

  SettleRequest reject = Req(SettleOp::kReject);
  reject.reason = "Poison";
  reject.description = "bad json";
  v = decide(reject);
  EXPECT_EQ(v.action, Action::kDeadLetter);
  EXPECT_EQ(v.reason, "Poison");
  EXPECT_EQ(v.description, "bad json");
  EXPECT_EQ(SettleResultOf(v).new_state, MessageState::kDeadLettered);

  v = decide(Req(SettleOp::kDefer));
  EXPECT_EQ(v.action, Action::kUnlock);
  EXPECT_EQ(v.to, MessageState::kDeferred);

  SettleRequest renew = Req(SettleOp::kRenew);
  renew.renew_until = kNow + 50;  // never shortens the lease
  v = decide(renew);
  EXPECT_EQ(v.action, Action::kRenew);
  EXPECT_EQ(SettleResultOf(v).locked_until, kNow + 100);
  renew.renew_until = kNow + 300;
  EXPECT_EQ(SettleResultOf(decide(renew)).locked_until, kNow + 300);
  EXPECT_EQ(SettleResultOf(decide(renew)).new_state, MessageState::kLocked);
}

TEST(StoreUtilTest, Spec6_AbandonOutOfDeliveriesDeadLetters) {
  const RowFacts row = Locked(3);
  SettleRequest req = Req(SettleOp::kAbandon);
  req.delay_ms = 500;
  Result<Verdict> v = DecideSettle(&row, Config(3), req);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->action, Action::kDeadLetter);
  EXPECT_EQ(v->reason, kReasonMaxDelivery);
}

TEST(StoreUtilTest, RefusalsOfSingleMessageOperations) {
  RowFacts scheduled;
  scheduled.state = MessageState::kScheduled;
  EXPECT_TRUE(CheckCancelScheduled(&scheduled, 1).ok());
  scheduled.delivery_count = 1;  // was delivered once, then abandoned with a delay
  EXPECT_EQ(CheckCancelScheduled(&scheduled, 1).code(), StatusCode::kNotFound);
  EXPECT_EQ(CheckCancelScheduled(nullptr, 1).code(), StatusCode::kNotFound);

  RowFacts deferred;
  deferred.state = MessageState::kDeferred;
  deferred.delivery_count = 2;
  EXPECT_TRUE(CheckClaimDeferred(&deferred, Config(3), 1, kNow).ok());
  EXPECT_EQ(CheckClaimDeferred(&deferred, Config(2), 1, kNow).code(), StatusCode::kNotFound);
  deferred.expires_at = kNow;
  EXPECT_EQ(CheckClaimDeferred(&deferred, Config(3), 1, kNow).code(), StatusCode::kNotFound);
  EXPECT_EQ(CheckClaimDeferred(&scheduled, Config(3), 1, kNow).code(), StatusCode::kNotFound);

  RowFacts dead;
  dead.state = MessageState::kDeadLettered;
  EXPECT_EQ(CheckDeadLetterMessage(&dead, 1).code(), StatusCode::kNotFound);
  EXPECT_TRUE(CheckDeadLetterMessage(&deferred, 1).ok());
  EXPECT_TRUE(CheckDeleteMessage(&dead, 1).ok());
  EXPECT_EQ(CheckDeleteMessage(nullptr, 1).code(), StatusCode::kNotFound);
}

TEST(StoreUtilTest, Spec2_OrderingChangesOnlyWhileEmpty) {
  QueueConfig stored = Config();
  QueueConfig requested = stored;
  requested.ordering = Ordering::kStrictFifo;
  EXPECT_EQ(CheckOrderingChange(stored, requested, true).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckOrderingChange(stored, requested, false).ok());
  EXPECT_TRUE(CheckOrderingChange(stored, stored, true).ok());
}

TEST(StoreUtilTest, ClaimRequestNeedsATokenPerMessage) {
  ClaimRequest req;
  req.max_messages = 2;
  LockToken tokens[2];
  req.tokens = std::span<const LockToken>(tokens, 1);
  EXPECT_EQ(CheckClaimRequest(req).code(), StatusCode::kInternal);
  req.tokens = std::span<const LockToken>(tokens, 2);
  EXPECT_TRUE(CheckClaimRequest(req).ok());
  req.tokens = {};
  req.mode = ReceiveMode::kReceiveAndDelete;
  EXPECT_TRUE(CheckClaimRequest(req).ok());
}

TEST(StoreUtilTest, Spec6_RetentionEvictsOldestUntilWithinEveryBound) {
  RetentionBounds none;
  EXPECT_FALSE(RetentionPass::Bounded(none));

  RetentionBounds age;
  age.max_age_ms = 100;
  EXPECT_TRUE(RetentionPass::Bounded(age));
  RetentionPass by_age(age, kNow, 10, 1000);
  EXPECT_TRUE(by_age.Evict(kNow - 100, 1));  // exactly max_age old
  EXPECT_FALSE(by_age.Evict(kNow - 99, 1));

  RetentionBounds count;
  count.max_count = 2;
  RetentionPass by_count(count, kNow, 4, 40);
  EXPECT_TRUE(by_count.Evict(kNow, 10));
  EXPECT_TRUE(by_count.Evict(kNow, 10));
  EXPECT_FALSE(by_count.Evict(kNow, 10)) << "two left: within the bound";

  RetentionBounds bytes;
  bytes.max_bytes = 25;
  RetentionPass by_bytes(bytes, kNow, 3, 30);
  EXPECT_TRUE(by_bytes.Evict(kNow, 10));  // 30 > 25
  EXPECT_FALSE(by_bytes.Evict(kNow, 10));  // 20 ≤ 25
}

TEST(StoreUtilTest, Spec6_RedrivePlan) {
  QueueConfig target = Config();
  target.default_ttl_ms = 60'000;
  std::optional<RedrivePlan> p = PlanRedrive(std::string("g"), target, kNow);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->group_key, "g");
  EXPECT_EQ(p->visible_at, kNow);
  EXPECT_EQ(p->expires_at, kNow + 60'000);

  target.default_ttl_ms = 0;
  target.ordering = Ordering::kStrictFifo;
  p = PlanRedrive(std::nullopt, target, kNow);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->group_key, "") << "strict_fifo: the whole queue is one group";
  EXPECT_EQ(p->expires_at, 0);

  target.ordering = Ordering::kGroupFifo;
  EXPECT_FALSE(PlanRedrive(std::nullopt, target, kNow).has_value())
      << "group_fifo needs a group_id: the dead letter stays";
  EXPECT_TRUE(PlanRedrive(std::string("g"), target, kNow).has_value());
}

// The row changes of the verdicts, as the key-value stores apply them.
TEST(StoreUtilTest, Spec6_RowChangesOfUnlockRenewAndDeadLetter) {
  auto Unlock = [](MessageState to, int64_t visible_at = 0) {
    Verdict v;
    v.action = Action::kUnlock;
    v.to = to;
    v.visible_at = visible_at;
    return v;
  };
  RowState locked;
  static_cast<RowFacts&>(locked) = Locked();
  locked.queue_id = 3;
  locked.is_head = true;
  locked.group_key = "g";

  RowState r = locked;
  ApplyToRow(Unlock(MessageState::kScheduled, kNow + 500), &r);
  EXPECT_EQ(r.state, MessageState::kScheduled);
  EXPECT_TRUE(r.token.empty());
  EXPECT_EQ(r.locked_until, 0);
  EXPECT_EQ(r.visible_at, kNow + 500);
  EXPECT_TRUE(r.is_head) << "unlocking keeps headship";

  r = locked;
  ApplyToRow(Unlock(MessageState::kActive), &r);
  EXPECT_EQ(r.state, MessageState::kActive);
  EXPECT_EQ(r.visible_at, 0) << "only a move to scheduled sets visible_at";

  r = locked;
  Verdict renew;
  renew.action = Action::kRenew;
  renew.locked_until = kNow + 9'000;
  ApplyToRow(renew, &r);
  EXPECT_EQ(r.state, MessageState::kLocked);
  EXPECT_EQ(r.token, Token(7)) << "a renewal keeps the token";
  EXPECT_EQ(r.locked_until, kNow + 9'000);

  for (Action untouched : {Action::kDeliver, Action::kDelete, Action::kDeadLetter}) {
    r = locked;
    Verdict v;
    v.action = untouched;
    v.reason = "x";
    ApplyToRow(v, &r);
    EXPECT_EQ(r.state, MessageState::kLocked);
    EXPECT_EQ(r.token, Token(7));
  }

  r = locked;
  DeadLetterRow("Poison", std::string("bad bytes"), kNow, &r);
  EXPECT_EQ(r.state, MessageState::kDeadLettered);
  EXPECT_TRUE(r.token.empty());
  EXPECT_EQ(r.locked_until, 0);
  EXPECT_EQ(r.dead_lettered_at, kNow);
  EXPECT_EQ(r.dead_letter_reason, "Poison");
  EXPECT_EQ(r.dead_letter_description, "bad bytes");
  EXPECT_FALSE(r.is_head) << "a dead letter is never a group's head";
  EXPECT_EQ(r.group_key, "g") << "it stays a member of its group's history";
}

TEST(StoreUtilTest, ToMessageCarriesEveryField) {
  RowState r;
  static_cast<RowFacts&>(r) = Locked(3, kNow + 7);
  r.priority = 4;
  r.enqueued_at = kNow - 10;
  r.visible_at = kNow - 5;
  r.expires_at = kNow + 1'000;
  r.dead_letter_reason = "R";
  r.dead_letter_description = "D";
  r.dead_lettered_at = kNow - 1;
  RowPayload p;
  p.body = std::string("b\0dy", 4);
  p.message_id = "m";
  p.group_id = "g";
  p.subject = "s";
  p.correlation_id = "c";
  p.content_type = "t";
  p.properties = {{"k", "v"}};
  const Message m = ToMessage(42, "jobs", r, p);
  EXPECT_EQ(m.seq, 42);
  EXPECT_EQ(m.queue, "jobs");
  EXPECT_EQ(m.body, std::string("b\0dy", 4));
  EXPECT_EQ(m.message_id, "m");
  EXPECT_EQ(m.group_id, "g");
  EXPECT_EQ(m.subject, "s");
  EXPECT_EQ(m.correlation_id, "c");
  EXPECT_EQ(m.content_type, "t");
  EXPECT_EQ(m.properties, (std::map<std::string, std::string>{{"k", "v"}}));
  EXPECT_EQ(m.priority, 4);
  EXPECT_EQ(m.enqueued_at, kNow - 10);
  EXPECT_EQ(m.visible_at, kNow - 5);
  EXPECT_EQ(m.expires_at, kNow + 1'000);
  EXPECT_EQ(m.delivery_count, 3);
  EXPECT_EQ(m.state, MessageState::kLocked);
  EXPECT_EQ(m.locked_until, kNow + 7);
  EXPECT_EQ(m.lock_token, Token(7));
  EXPECT_EQ(m.dead_letter_reason, "R");
  EXPECT_EQ(m.dead_letter_description, "D");
  EXPECT_EQ(m.dead_lettered_at, kNow - 1);
}

using Mode = RunGate::Mode;

TEST(RunGateTest, Spec10_WaitGivesUpOnStopHavingDoneNothing) {
  RunGate gate;
  ASSERT_TRUE(gate.Acquire(Mode::kExclusive, RunOptions{}, "the writer").ok());
  std::stop_source stop;
  RunOptions o;
  o.stop = stop.get_token();
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop.request_stop();
  });
  Status s = gate.Acquire(Mode::kExclusive, o, "the writer");
  canceller.join();
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  EXPECT_NE(s.message().find("cancelled while waiting for the writer"), std::string::npos);
  gate.Release(Mode::kExclusive);
  // The cancelled waiter left nothing behind: the gate is free.
  EXPECT_TRUE(gate.Acquire(Mode::kExclusive, RunOptions{}, "the writer").ok());
  gate.Release(Mode::kExclusive);
}

TEST(RunGateTest, Spec10_WaitGivesUpAtTheDeadline) {
  RunGate gate;
  ASSERT_TRUE(gate.Acquire(Mode::kShared, RunOptions{}, "x").ok());
  RunOptions o;
  o.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  Status s = gate.Acquire(Mode::kExclusive, o, "x");
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  EXPECT_NE(s.message().find("deadline passed"), std::string::npos);
  // The abandoned exclusive waiter no longer holds off shared holders.
  EXPECT_TRUE(gate.Acquire(Mode::kShared, RunOptions{}, "x").ok());
  gate.Release(Mode::kShared);
  gate.Release(Mode::kShared);
}

TEST(RunGateTest, SharedHoldersRunTogetherAndAWaitingWriterHoldsOffNewOnes) {
  RunGate gate;
  ASSERT_TRUE(gate.Acquire(Mode::kShared, RunOptions{}, "x").ok());
  ASSERT_TRUE(gate.Acquire(Mode::kShared, RunOptions{}, "x").ok());
  std::atomic<bool> writer_in{false};
  std::thread writer([&] {
    ASSERT_TRUE(gate.Acquire(Mode::kExclusive, RunOptions{}, "x").ok());
    writer_in = true;
    gate.Release(Mode::kExclusive);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(writer_in.load());
  // A new shared holder waits behind the writer (it would starve otherwise).
  RunOptions soon;
  soon.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  EXPECT_EQ(gate.Acquire(Mode::kShared, soon, "x").code(), StatusCode::kCancelled);
  gate.Release(Mode::kShared);
  gate.Release(Mode::kShared);
  writer.join();
  EXPECT_TRUE(writer_in.load());
}

}  // namespace
}  // namespace mqlite
