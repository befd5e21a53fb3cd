// Status and Result<T> (SPEC §10: errors are values with a code and a message).
#include "mqlite/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace mqlite {
inline void PrintTo(StatusCode code, std::ostream* os) { *os << StatusCodeName(code); }

namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_TRUE(s.message().empty());
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_TRUE(Status::OK().ok());
  EXPECT_EQ(Status::OK(), Status());
}

TEST(StatusTest, OkCodeWithMessageIsStillOk) {
  Status s(StatusCode::kOk, "ignored");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_TRUE(s.message().empty());
}

TEST(StatusTest, CodeAndMessage) {
  Status s(StatusCode::kLockLost, "queue 'jobs': seq 42");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kLockLost);
  EXPECT_EQ(s.message(), "queue 'jobs': seq 42");
  EXPECT_EQ(s.ToString(), "LockLost: queue 'jobs': seq 42");
}

TEST(StatusTest, ErrorWithEmptyMessagePrintsOnlyTheCode) {
  Status s(StatusCode::kClosed, "");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.ToString(), "Closed");
}

TEST(StatusTest, MessageIsBinarySafe) {
  std::string m("a\0b", 3);
  Status s(StatusCode::kInternal, m);
  EXPECT_EQ(s.message(), m);
}

struct FactoryCase {
  Status status;
  StatusCode code;
  const char* name;
};

TEST(StatusTest, FactoriesAndNamesMatchSpec10) {
  std::vector<FactoryCase> cases = {
      {Status::InvalidArgument("m"), StatusCode::kInvalidArgument, "InvalidArgument"},
      {Status::GroupRequired("m"), StatusCode::kGroupRequired, "GroupRequired"},
      {Status::MessageTooLarge("m"), StatusCode::kMessageTooLarge, "MessageTooLarge"},
      {Status::QueueNotFound("m"), StatusCode::kQueueNotFound, "QueueNotFound"},
      {Status::NotFound("m"), StatusCode::kNotFound, "NotFound"},
      {Status::LockLost("m"), StatusCode::kLockLost, "LockLost"},
      {Status::DedupConflict("m"), StatusCode::kDedupConflict, "DedupConflict"},
      {Status::DbLocked("m"), StatusCode::kDbLocked, "DbLocked"},
      {Status::SchemaVersionMismatch("m"), StatusCode::kSchemaVersionMismatch,
       "SchemaVersionMismatch"},
      {Status::StoreFull("m"), StatusCode::kStoreFull, "StoreFull"},
      {Status::Unavailable("m"), StatusCode::kUnavailable, "Unavailable"},
      {Status::OutcomeUnknown("m"), StatusCode::kOutcomeUnknown, "OutcomeUnknown"},
      {Status::Closed("m"), StatusCode::kClosed, "Closed"},
      {Status::Cancelled("m"), StatusCode::kCancelled, "Cancelled"},
      {Status::Corruption("m"), StatusCode::kCorruption, "Corruption"},
      {Status::Internal("m"), StatusCode::kInternal, "Internal"},
      {Status::Unimplemented("m"), StatusCode::kUnimplemented, "Unimplemented"},
  };
  for (const FactoryCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_FALSE(c.status.ok());
    EXPECT_EQ(c.status.code(), c.code);
    EXPECT_EQ(c.status.message(), "m");
    EXPECT_EQ(StatusCodeName(c.code), c.name);
    EXPECT_EQ(c.status.ToString(), std::string(c.name) + ": m");
  }
  EXPECT_EQ(StatusCodeName(StatusCode::kOk), "OK");
}

TEST(StatusTest, CodeValuesAreStable) {
  // The numeric values are part of the ABI that other stores and tools may record.
  EXPECT_EQ(static_cast<int>(StatusCode::kOk), 0);
  EXPECT_EQ(static_cast<int>(StatusCode::kInvalidArgument), 1);
  EXPECT_EQ(static_cast<int>(StatusCode::kLockLost), 6);
  EXPECT_EQ(static_cast<int>(StatusCode::kDbLocked), 8);
  EXPECT_EQ(static_cast<int>(StatusCode::kClosed), 13);
  EXPECT_EQ(static_cast<int>(StatusCode::kUnimplemented), 17);
}

TEST(StatusTest, CopyIsDeepAndIndependent) {
  Status a = Status::NotFound("seq 7");
  Status b = a;
  EXPECT_EQ(a, b);
  EXPECT_EQ(b.code(), StatusCode::kNotFound);
  EXPECT_EQ(b.message(), "seq 7");
  b = Status::OK();
  EXPECT_TRUE(b.ok());
  EXPECT_EQ(a.code(), StatusCode::kNotFound);
  EXPECT_EQ(a.message(), "seq 7");

  Status c;
  c = a;
  EXPECT_EQ(c, a);
  c = c;  // self-assignment keeps the value
  EXPECT_EQ(c.code(), StatusCode::kNotFound);
  EXPECT_EQ(c.message(), "seq 7");
}

TEST(StatusTest, Move) {
  Status a = Status::Closed("engine is closed");
  Status b = std::move(a);
  EXPECT_EQ(b.code(), StatusCode::kClosed);
  EXPECT_EQ(b.message(), "engine is closed");
  Status c;
  c = std::move(b);
  EXPECT_EQ(c.code(), StatusCode::kClosed);
}

TEST(StatusTest, EqualityComparesCodeAndMessage) {
  EXPECT_EQ(Status::LockLost("x"), Status::LockLost("x"));
  EXPECT_FALSE(Status::LockLost("x") == Status::LockLost("y"));
  EXPECT_FALSE(Status::LockLost("x") == Status::NotFound("x"));
  EXPECT_FALSE(Status::LockLost("") == Status::OK());
}

TEST(StatusTest, WithContextPrefixesTheMessage) {
  Status s = Status::NotFound("seq 9").WithContext("queue 'jobs'");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "queue 'jobs': seq 9");
  EXPECT_TRUE(Status::OK().WithContext("anything").ok());
}

TEST(ResultTest, HoldsValue) {
  Result<int> r = 42;
  EXPECT_TRUE(r.has_value());
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r.value(), 42);
  EXPECT_EQ(*r, 42);
  EXPECT_TRUE(r.status().ok());
  *r = 7;
  EXPECT_EQ(r.value(), 7);
  EXPECT_EQ(r.value_or(3), 7);
}

TEST(ResultTest, HoldsError) {
  Result<int> r = Status::QueueNotFound("queue 'x'");
  EXPECT_FALSE(r.has_value());
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(r.error().code(), StatusCode::kQueueNotFound);
  EXPECT_EQ(r.error().message(), "queue 'x'");
  EXPECT_EQ(r.status().code(), StatusCode::kQueueNotFound);
  EXPECT_EQ(r.value_or(3), 3);
}

TEST(ResultTest, FromOkStatusIsInternalError) {
  Result<int> r = Status::OK();
  EXPECT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInternal);
}

TEST(ResultTest, ArrowAndMoveOnlyValues) {
  Result<std::string> s = std::string("hello");
  EXPECT_EQ(s->size(), 5u);
  Result<std::unique_ptr<int>> p = std::make_unique<int>(5);
  ASSERT_TRUE(p.has_value());
  std::unique_ptr<int> taken = std::move(p).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 5);
}

TEST(ResultTest, ConvertingConstruction) {
  Result<std::string> r = "literal";  // const char* → std::string
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, "literal");
  Result<std::vector<int>> v = std::vector<int>{1, 2, 3};
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->size(), 3u);
}

// Issue 9: `for (auto& m : *engine.Receive(...))` must iterate a live vector.
// Before the fix operator* on an rvalue Result returned T&& into the
// temporary Result, which died at the end of the range-init expression, so
// the loop read freed memory (ASan: heap-use-after-free). The type check
// pins the contract at compile time; the loop proves it at run time under
// the sanitizer build.
Result<std::vector<std::string>> MakeBodies() {
  return std::vector<std::string>{std::string(64, 'a'), std::string(64, 'b'), std::string(64, 'c')};
}

TEST(ResultTest, RvalueAccessorsReturnTheValueSoARangeForOverACallIsSafe) {
  static_assert(std::is_same_v<decltype(*MakeBodies()), std::vector<std::string>>);
  static_assert(std::is_same_v<decltype(MakeBodies().value()), std::vector<std::string>>);
  std::string seen;
  for (const std::string& b : *MakeBodies()) seen += b.substr(0, 1) + std::to_string(b.size());
  EXPECT_EQ(seen, "a64b64c64");
  // A move-only value still moves out of an rvalue Result.
  Result<std::unique_ptr<int>> p = std::make_unique<int>(7);
  std::unique_ptr<int> taken = *std::move(p);
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 7);
}

TEST(ResultTest, ErrorCanBeMovedOut) {
  Result<int> r = Status::Unavailable("busy");
  Status s = std::move(r).error();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "busy");
}

Status Fails() { return Status::LockLost("stale"); }
Status Succeeds() { return Status::OK(); }

Status UsesReturnIfError(bool fail, int* reached) {
  MQLITE_RETURN_IF_ERROR(Succeeds());
  *reached = 1;
  if (fail) MQLITE_RETURN_IF_ERROR(Fails());
  *reached = 2;
  return Status::OK();
}

TEST(StatusMacrosTest, ReturnIfError) {
  int reached = 0;
  Status s = UsesReturnIfError(true, &reached);
  EXPECT_EQ(s.code(), StatusCode::kLockLost);
  EXPECT_EQ(reached, 1);
  reached = 0;
  EXPECT_TRUE(UsesReturnIfError(false, &reached).ok());
  EXPECT_EQ(reached, 2);
}

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  MQLITE_ASSIGN_OR_RETURN(int h, Half(x));
  MQLITE_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusMacrosTest, AssignOrReturn) {
  Result<int> ok = Quarter(8);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok, 2);
  Result<int> bad = Quarter(6);  // 6 → 3 → odd
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message(), "odd");
}

}  // namespace
}  // namespace mqlite
