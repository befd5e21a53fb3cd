// Value types of the public API (SPEC §2, §3, §5, §6): names, parsing, lock
// tokens and documented defaults.
#include "mqlite/types.h"

#include <gtest/gtest.h>

#include <ostream>
#include <set>
#include <string>

#include "mqlite/engine.h"

namespace mqlite {
inline void PrintTo(StatusCode code, std::ostream* os) { *os << StatusCodeName(code); }
inline void PrintTo(MessageState s, std::ostream* os) { *os << MessageStateName(s); }
inline void PrintTo(Ordering o, std::ostream* os) { *os << OrderingName(o); }

namespace {

LockToken Sample() {
  LockToken t;
  for (size_t i = 0; i < t.bytes.size(); ++i) t.bytes[i] = static_cast<uint8_t>(i * 17 + 3);
  return t;
}

TEST(LockTokenTest, DefaultIsEmptyAllZero) {
  LockToken t;
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.ToHex(), std::string(32, '0'));
  EXPECT_EQ(t, LockToken{});
}

TEST(LockTokenTest, AnyNonZeroByteIsNotEmpty) {
  for (size_t i = 0; i < 16; ++i) {
    LockToken t;
    t.bytes[i] = 1;
    EXPECT_FALSE(t.empty()) << "byte " << i;
  }
}

TEST(LockTokenTest, ToHexIs32LowercaseDigitsInByteOrder) {
  LockToken t;
  t.bytes = {0x00, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd,
             0xef, 0xff, 0x10, 0x20, 0xa0, 0x0b, 0xfe, 0x7f};
  EXPECT_EQ(t.ToHex(), "000123456789abcdefff1020a00bfe7f");
}

TEST(LockTokenTest, HexRoundTrip) {
  LockToken t = Sample();
  std::string hex = t.ToHex();
  ASSERT_EQ(hex.size(), 32u);
  for (char c : hex) {
    EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << hex;
  }
  Result<LockToken> back = LockToken::FromHex(hex);
  ASSERT_TRUE(back.has_value()) << back.status().ToString();
  EXPECT_EQ(*back, t);
  EXPECT_EQ(back->ToHex(), hex);

  Result<LockToken> zero = LockToken::FromHex(std::string(32, '0'));
  ASSERT_TRUE(zero.has_value());
  EXPECT_TRUE(zero->empty());

  Result<LockToken> ones = LockToken::FromHex(std::string(32, 'f'));
  ASSERT_TRUE(ones.has_value());
  for (uint8_t b : ones->bytes) EXPECT_EQ(b, 0xff);
}

TEST(LockTokenTest, FromHexRejectsWrongLength) {
  for (std::string bad : {std::string(), std::string(31, 'a'), std::string(33, 'a'),
                          std::string(64, 'a'), std::string(16, 'a')}) {
    Result<LockToken> r = LockToken::FromHex(bad);
    ASSERT_FALSE(r.has_value()) << "'" << bad << "'";
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << "'" << bad << "'";
  }
}

TEST(LockTokenTest, FromHexRejectsNonHexDigits) {
  std::string good = Sample().ToHex();
  for (size_t pos : {size_t{0}, size_t{1}, size_t{15}, size_t{31}}) {
    for (char c : {'g', 'z', ' ', '-', 'x', '\0', '/', ':', '@', '`', 'G'}) {
      std::string bad = good;
      bad[pos] = c;
      Result<LockToken> r = LockToken::FromHex(bad);
      ASSERT_FALSE(r.has_value()) << "pos " << pos << " char " << static_cast<int>(c);
      EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    }
  }
  Result<LockToken> prefixed = LockToken::FromHex("0x" + good.substr(2));
  ASSERT_FALSE(prefixed.has_value());
  EXPECT_EQ(prefixed.error().code(), StatusCode::kInvalidArgument);
}

TEST(OrderingTest, NamesMatchSpec) {
  EXPECT_EQ(OrderingName(Ordering::kStandard), "standard");
  EXPECT_EQ(OrderingName(Ordering::kGroupFifo), "group_fifo");
  EXPECT_EQ(OrderingName(Ordering::kStrictFifo), "strict_fifo");
}

TEST(OrderingTest, ParseRoundTrip) {
  for (Ordering o : {Ordering::kStandard, Ordering::kGroupFifo, Ordering::kStrictFifo}) {
    Result<Ordering> r = ParseOrdering(OrderingName(o));
    ASSERT_TRUE(r.has_value()) << OrderingName(o);
    EXPECT_EQ(*r, o);
  }
}

TEST(OrderingTest, ParseRejectsUnknown) {
  for (const char* bad :
       {"", "fifo", "standard ", " standard", "group-fifo", "strict", "unknown"}) {
    Result<Ordering> r = ParseOrdering(bad);
    ASSERT_FALSE(r.has_value()) << "'" << bad << "'";
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << "'" << bad << "'";
  }
  Result<Ordering> nul = ParseOrdering(std::string_view("standard\0", 9));
  ASSERT_FALSE(nul.has_value());
  EXPECT_EQ(nul.error().code(), StatusCode::kInvalidArgument);
}

// SPEC §10: normal, full, and the process-death-only level.
TEST(DurabilityTest, NamesRoundTripAndUnknownIsRefused) {
  EXPECT_EQ(DurabilityName(Durability::kNormal), "normal");
  EXPECT_EQ(DurabilityName(Durability::kFull), "full");
  EXPECT_EQ(DurabilityName(Durability::kProcessOnly), "process_only");
  for (Durability d : {Durability::kNormal, Durability::kFull, Durability::kProcessOnly}) {
    Result<Durability> r = ParseDurability(DurabilityName(d));
    ASSERT_TRUE(r.has_value()) << DurabilityName(d);
    EXPECT_EQ(*r, d);
  }
  EXPECT_EQ(DurabilityName(static_cast<Durability>(7)), "unknown");
  for (const char* bad : {"", "nosync", "off", "Full", "process-only", "unknown"}) {
    Result<Durability> r = ParseDurability(bad);
    ASSERT_FALSE(r.has_value()) << "'" << bad << "'";
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << "'" << bad << "'";
    EXPECT_NE(r.error().message().find("process_only"), std::string::npos) << r.error().message();
  }
}

TEST(MessageStateTest, NamesMatchSpec3) {
  EXPECT_EQ(MessageStateName(MessageState::kActive), "active");
  EXPECT_EQ(MessageStateName(MessageState::kLocked), "locked");
  EXPECT_EQ(MessageStateName(MessageState::kDeferred), "deferred");
  EXPECT_EQ(MessageStateName(MessageState::kScheduled), "scheduled");
  EXPECT_EQ(MessageStateName(MessageState::kDeadLettered), "dead_lettered");
}

TEST(MessageStateTest, ParseRoundTripAndNamesAreDistinct) {
  std::set<std::string> seen;
  for (MessageState s : {MessageState::kActive, MessageState::kLocked, MessageState::kDeferred,
                         MessageState::kScheduled, MessageState::kDeadLettered}) {
    Result<MessageState> r = ParseMessageState(MessageStateName(s));
    ASSERT_TRUE(r.has_value()) << MessageStateName(s);
    EXPECT_EQ(*r, s);
    EXPECT_TRUE(seen.insert(std::string(MessageStateName(s))).second);
  }
}

TEST(MessageStateTest, ParseRejectsUnknown) {
  for (const char* bad : {"", "completed", "deleted", "dead-lettered", "deadlettered", "activ",
                          "actives", "expired"}) {
    Result<MessageState> r = ParseMessageState(bad);
    ASSERT_FALSE(r.has_value()) << "'" << bad << "'";
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << "'" << bad << "'";
  }
}

TEST(ReasonTest, DeadLetterReasonsMatchSpec3) {
  EXPECT_EQ(kReasonMaxDelivery, "MaxDeliveryCountExceeded");
  EXPECT_EQ(kReasonTtlExpired, "TTLExpired");
}

TEST(DefaultsTest, QueueConfigDefaultsMatchSpec2) {
  QueueConfig c;
  EXPECT_EQ(c.lock_duration_ms, 30'000);
  EXPECT_EQ(c.max_delivery_count, 10);
  EXPECT_EQ(c.default_ttl_ms, 0);
  EXPECT_TRUE(c.dead_letter_on_expire);
  EXPECT_EQ(c.dedup_window_ms, 0);
  EXPECT_EQ(c.ordering, Ordering::kStandard);
  EXPECT_EQ(c.dlq_max_age_ms, 0);
  EXPECT_EQ(c.dlq_max_count, 0);
  EXPECT_EQ(c.dlq_max_bytes, 0);
  EXPECT_EQ(c.max_message_bytes, 0);
}

TEST(DefaultsTest, OutgoingAndMessageDefaults) {
  OutgoingMessage m;
  EXPECT_TRUE(m.body.empty());
  EXPECT_FALSE(m.message_id.has_value());
  EXPECT_FALSE(m.group_id.has_value());
  EXPECT_EQ(m.priority, 0);
  EXPECT_EQ(m.schedule_at_ms, 0);
  EXPECT_EQ(m.delay_ms, 0);
  EXPECT_EQ(m.ttl_ms, 0);

  Message got;
  EXPECT_TRUE(got.lock_token.empty());
  EXPECT_EQ(got.locked_until, 0);
  EXPECT_EQ(got.expires_at, 0);
  EXPECT_FALSE(got.dead_letter_reason.has_value());
}

TEST(DefaultsTest, ReceiveAndPeekDefaultsMatchSpec5) {
  ReceiveOptions r;
  EXPECT_EQ(r.max_messages, 1);
  EXPECT_EQ(r.mode, ReceiveMode::kPeekLock);
  EXPECT_EQ(r.wait_ms, 0);
  PeekOptions p;
  EXPECT_FALSE(p.state.has_value());
  EXPECT_EQ(p.from_seq, 0);
}

TEST(DefaultsTest, EngineOptionsDefaults) {
  EngineOptions o;
  EXPECT_EQ(o.clock, nullptr);
  EXPECT_TRUE(o.background_maintenance);
  EXPECT_EQ(o.max_message_bytes, 1 << 20);  // SPEC §2: 1 MiB
}

TEST(DefaultsTest, QueueConfigEqualityIsMemberwise) {
  QueueConfig a{.name = "q"};
  QueueConfig b{.name = "q"};
  EXPECT_EQ(a, b);
  b.lock_duration_ms = 1'000;
  EXPECT_FALSE(a == b);
}

}  // namespace
}  // namespace mqlite
