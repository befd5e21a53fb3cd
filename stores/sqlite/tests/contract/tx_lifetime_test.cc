// SPEC §8 — a TxContext (and the sqlite3* behind SqliteHandle) kept past its
// callback must be refused with InvalidArgument (engine.h: "calls after that
// return InvalidArgument"; sqlite.h: SqliteHandle is "InvalidArgument if ...
// its callback has returned").
//
// These tests live in their own executable: if the implementation lets the
// TxContext die with the callback, using the kept reference is a
// use-after-scope that can crash the process, and that must not take the
// other contract tests down with it when the binary is run directly.
#include <gtest/gtest.h>

#include <string>

#include "contract_util.h"

namespace mqlite::contract {
namespace {

OutgoingMessage Out(std::string body) {
  OutgoingMessage m;
  m.body = std::move(body);
  return m;
}

class TxLifetimeTest : public ContractTest {
 protected:
  void SetUp() override {
    ContractTest::SetUp();
    MQ_ASSERT_OK(CreateQueue("a"));
  }
};

TEST_F(TxLifetimeTest, Spec8_TxContextUsedAfterTheCallbackIsInvalidArgument) {
  // SPEC §8: "using the handle after fn returns" is refused. The header
  // promises InvalidArgument for TxContext calls after the callback.
  TxContext* kept = nullptr;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    kept = &tx;
    return Status::OK();
  }));
  ASSERT_NE(kept, nullptr);
  MQ_EXPECT_CODE(kept->Send("a", Out("late")), kInvalidArgument);
  EXPECT_EQ(Total("a"), 0);
}

TEST_F(TxLifetimeTest, Spec8_SqliteHandleAfterTheCallbackIsInvalidArgument) {
  // SPEC §8
  TxContext* kept = nullptr;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    kept = &tx;
    return Status::OK();
  }));
  ASSERT_NE(kept, nullptr);
  MQ_EXPECT_CODE(SqliteHandle(*kept), kInvalidArgument);
}

}  // namespace
}  // namespace mqlite::contract
