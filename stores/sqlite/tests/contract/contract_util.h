// Small helpers shared by the contract tests in this directory, on top of the
// SqliteEngineTest fixture of ../test_util.h (fresh file, ManualClock,
// background maintenance off).
#ifndef MQLITE_STORES_SQLITE_TESTS_CONTRACT_CONTRACT_UTIL_H_
#define MQLITE_STORES_SQLITE_TESTS_CONTRACT_CONTRACT_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "test_util.h"

namespace mqlite::contract {

using mqlite::testing::kT0;

class ContractTest : public mqlite::testing::SqliteEngineTest {
 protected:
  // Sends one message; group/priority/delay/id optional.
  Result<int64_t> SendMsg(std::string_view queue, std::string body,
                          std::optional<std::string> group = std::nullopt, int priority = 0,
                          int64_t delay_ms = 0,
                          std::optional<std::string> message_id = std::nullopt) {
    OutgoingMessage m;
    m.body = std::move(body);
    m.group_id = std::move(group);
    m.priority = priority;
    m.delay_ms = delay_ms;
    m.message_id = std::move(message_id);
    return engine_->Send(queue, m);
  }

  Result<std::vector<Message>> ReceiveIn(std::string_view queue, int max, mqlite::ReceiveMode mode) {
    ReceiveOptions o;
    o.max_messages = max;
    o.mode = mode;
    return engine_->Receive(queue, o);
  }

  Result<std::vector<Message>> ReceiveAttempt(std::string_view queue, int max,
                                              std::string attempt_id,
                                              mqlite::ReceiveMode mode = mqlite::ReceiveMode::kPeekLock) {
    ReceiveOptions o;
    o.max_messages = max;
    o.mode = mode;
    o.attempt_id = std::move(attempt_id);
    return engine_->Receive(queue, o);
  }

  int64_t Total(std::string_view queue) {
    Result<QueueStats> s = engine_->Stats(queue);
    EXPECT_TRUE(mqlite::testing::IsOk(s));
    return s.has_value() ? s->total : -1;
  }
};

// QueueConfig builders (designated initializers would warn about `name`,
// which CreateQueue fills in).
inline QueueConfig WithOrdering(Ordering o) {
  QueueConfig c;
  c.ordering = o;
  return c;
}
inline QueueConfig WithDedup(int64_t window_ms) {
  QueueConfig c;
  c.dedup_window_ms = window_ms;
  return c;
}
inline QueueConfig WithLock(int64_t lock_duration_ms) {
  QueueConfig c;
  c.lock_duration_ms = lock_duration_ms;
  return c;
}

// A well-formed (non-empty) token that no claim ever issued.
inline LockToken ForeignToken(uint8_t fill = 0x5a) {
  LockToken t;
  t.bytes.fill(fill);
  return t;
}

inline std::vector<int64_t> Seqs(const std::vector<Message>& ms) {
  std::vector<int64_t> out;
  for (const Message& m : ms) out.push_back(m.seq);
  return out;
}

}  // namespace mqlite::contract

#endif  // MQLITE_STORES_SQLITE_TESTS_CONTRACT_CONTRACT_UTIL_H_
