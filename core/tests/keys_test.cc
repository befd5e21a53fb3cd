// The engine's idempotency keys (core/src/keys.h): a settlement receipt's key
// names the whole request and nothing less (SPEC §7.2), and leads with the
// settled seq so neighbouring settles write neighbouring keys.
#include "keys.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace mqlite::internal {
namespace {

SettleRequest Req(SettleOp op, int64_t seq = 77, uint8_t token_byte = 1) {
  SettleRequest r;
  r.op = op;
  r.seq = seq;
  r.token.bytes.fill(token_byte);
  return r;
}

TEST(ReceiptKey, Spec7_2_FortyBytesLedBySeqBigEndian) {
  for (SettleOp op : {SettleOp::kComplete, SettleOp::kAbandon, SettleOp::kReject,
                      SettleOp::kDefer}) {
    const std::string key = ReceiptKey(5, Req(op, 0x0102030405060708));
    ASSERT_EQ(key.size(), 40u) << SettleOpName(op);
    EXPECT_EQ(key.substr(0, 8), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8))
        << SettleOpName(op);
  }
}

TEST(ReceiptKey, Spec7_2_EveryPartOfTheRequestChangesTheKey) {
  std::vector<std::string> keys;
  for (SettleOp op : {SettleOp::kComplete, SettleOp::kAbandon, SettleOp::kReject,
                      SettleOp::kDefer}) {
    keys.push_back(ReceiptKey(5, Req(op)));
    keys.push_back(ReceiptKey(6, Req(op)));       // another queue
    keys.push_back(ReceiptKey(5, Req(op, 78)));   // another seq
    keys.push_back(ReceiptKey(5, Req(op, 77, 2)));  // another token
  }
  SettleRequest abandon = Req(SettleOp::kAbandon);
  abandon.delay_ms = 1'000;
  keys.push_back(ReceiptKey(5, abandon));
  SettleRequest reject = Req(SettleOp::kReject);
  reject.reason = "Poison";
  keys.push_back(ReceiptKey(5, reject));
  reject.description = "bad payload";
  keys.push_back(ReceiptKey(5, reject));
  reject.reason.clear();
  keys.push_back(ReceiptKey(5, reject));  // the description alone
  EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), keys.size());
  // And the same request always has the same key.
  EXPECT_EQ(ReceiptKey(5, reject), ReceiptKey(5, reject));
  EXPECT_EQ(ReceiptKey(5, Req(SettleOp::kComplete)), ReceiptKey(5, Req(SettleOp::kComplete)));
}

}  // namespace
}  // namespace mqlite::internal
