// Builds a mixed, realistically shaped backlog through the public API, for the
// plan pins (SPEC §11): tens of thousands of messages in every state, grouped
// and ungrouped, in all three ordering modes, plus dedup records, receipts and
// receive attempts.
#ifndef MQLITE_STORES_SQLITE_TESTS_INTERNAL_BACKLOG_H_
#define MQLITE_STORES_SQLITE_TESTS_INTERNAL_BACKLOG_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mqlite/engine.h"

namespace mqlite::testing {

inline void BuildMixedBacklog(Engine& e, ManualClock& clock, int per_queue) {
  for (auto [name, ordering] : {std::pair{"std", Ordering::kStandard},
                                std::pair{"gf", Ordering::kGroupFifo},
                                std::pair{"sf", Ordering::kStrictFifo}}) {
    QueueConfig c;
    c.name = name;
    c.ordering = ordering;
    c.dedup_window_ms = 600'000;
    ASSERT_TRUE(e.CreateQueue(c).ok());
    int sent = 0;
    while (sent < per_queue) {
      std::vector<OutgoingMessage> batch;
      for (int i = 0; i < 1000 && sent < per_queue; ++i, ++sent) {
        OutgoingMessage m;
        m.body = std::string(name) + "-" + std::to_string(sent);
        m.message_id = m.body;
        m.priority = sent % 10;
        if (ordering != Ordering::kStandard || sent % 2 == 0) {
          m.group_id = "g" + std::to_string(sent % 50);
        }
        if (sent % 7 == 0) m.delay_ms = 3'600'000;  // scheduled
        if (sent % 11 == 0) m.ttl_ms = 7'200'000;
        batch.push_back(std::move(m));
      }
      auto r = e.SendBatch(name, batch);
      ASSERT_TRUE(r.ok()) << r.error().ToString();
    }
    // Lock, defer, dead-letter and complete some of them.
    for (int round = 0; round < 8; ++round) {
      ReceiveOptions o;
      o.max_messages = 256;
      o.attempt_id = std::string(name) + "-attempt-" + std::to_string(round);
      auto got = e.Receive(name, o);
      ASSERT_TRUE(got.ok()) << got.error().ToString();
      for (size_t i = 0; i < got->size(); ++i) {
        const Message& m = (*got)[i];
        Status s;
        switch (i % 4) {
          case 0: s = e.Defer(name, m.seq, m.lock_token); break;
          case 1: s = e.Reject(name, m.seq, m.lock_token, "bad", "pinned"); break;
          case 2: s = e.Complete(name, m.seq, m.lock_token); break;
          default: break;  // stays locked
        }
        ASSERT_TRUE(s.ok()) << s.ToString();
      }
    }
  }
  clock.Advance(1);
}

}  // namespace mqlite::testing

#endif  // MQLITE_STORES_SQLITE_TESTS_INTERNAL_BACKLOG_H_
