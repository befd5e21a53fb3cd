// SPEC §6 / G7 and §11: space reclaim and the store's performance pins.
// Space: freed by deletes is reused, and given back to the filesystem when
// the profile says the store shrinks (StoreProfile::space). Needs the fixture
// to report its on-disk size (StoreFixture::StorageBytes); skipped otherwise.
#include <memory>
#include <string>
#include <vector>

#include "mqlite/tck.h"

namespace mqlite::tck {

int AnchorSpace() { return 0; }

namespace {

// SPEC §6, G7: a large backlog is sent and drained, and maintenance runs
// (Store::ReclaimSpace included). A store that shrinks is then well under
// half of its peak; every store, filled to the same backlog again, stays
// within a tenth of that peak: the freed space was reused, not leaked.
MQLITE_TCK_GRADES(TckLifecycle, Spec6_G7_SpaceIsReclaimedAfterDrainAndMaintenance, "G7");
TEST_P(TckLifecycle, Spec6_G7_SpaceIsReclaimedAfterDrainAndMaintenance) {
  CloseEngine();
  if (!fixture().StorageBytes()) {
    GTEST_SKIP() << "capability: the fixture reports no storage size";
  }
  Reopen();
  MakeQueue("space");
  const std::string body(2048, 'x');
  auto fill = [&] {
    for (int batch = 0; batch < 12; ++batch) {
      std::vector<OutgoingMessage> msgs(250);
      for (auto& m : msgs) m.body = body;
      auto r = engine().SendBatch("space", msgs);
      ASSERT_TRUE(r.ok()) << r.error().ToString();
    }
  };
  auto drain = [&] {
    for (;;) {
      auto got = ReceiveOk("space", 256);
      if (got.empty()) break;
      std::vector<SettleItem> items;
      for (const auto& m : got) items.push_back({m.seq, m.lock_token});
      auto done = engine().CompleteBatch("space", items);
      ASSERT_TRUE(done.ok()) << done.error().ToString();
      for (const auto& s : *done) ASSERT_TRUE(s.ok()) << s.ToString();
    }
    EXPECT_EQ(StatsOk("space").total, 0);
    for (int pass = 0; pass < 100; ++pass) {
      auto r = engine().RunMaintenance();
      ASSERT_TRUE(r.ok()) << r.error().ToString();
      if (!r->more) break;
    }
  };
  ASSERT_NO_FATAL_FAILURE(fill());
  CloseEngine();
  const int64_t peak = *fixture().StorageBytes();
  Reopen();
  ASSERT_NO_FATAL_FAILURE(drain());
  CloseEngine();
  const int64_t after = *fixture().StorageBytes();
  if (profile().space == SpaceMode::kShrinks) {
    EXPECT_LT(after, peak / 2) << "peak " << peak << " bytes, after drain + maintenance "
                               << after << " bytes: space freed by deletes was not reclaimed";
  }
  Reopen();
  ASSERT_NO_FATAL_FAILURE(fill());
  CloseEngine();
  const int64_t refilled = *fixture().StorageBytes();
  EXPECT_LE(refilled, peak + peak / 10)
      << "peak " << peak << " bytes, the same backlog again " << refilled
      << " bytes: space freed by deletes was not reused";
  Reopen();
}

// SPEC §7.2, §7.3, G7: maintenance deletes expired idempotency records to
// reclaim space, however the store finds them (an index on expiry, or a
// sweep of the keys in order). Receipts and attempts are put in no key
// order, half of them expired; repeated DropExpiredRecords calls with a small
// limit must delete every expired one, and no live one, within a bound on
// the calls (enough for one pass over every record plus one per `limit`
// expired ones). Then more expired receipts land below every key seen so
// far — behind any sweep's cursor — and must go the same way.
MQLITE_TCK_GRADES(TckLifecycle, Spec7_2_Spec7_3_ExpiredRecordsAreDroppedWithinBoundedCalls, "G7");
TEST_P(TckLifecycle, Spec7_2_Spec7_3_ExpiredRecordsAreDroppedWithinBoundedCalls) {
  MakeQueue("records");
  CloseEngine();
  auto opened = fixture().Open();
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  std::unique_ptr<Store> store = std::move(*opened);
  if (profile().wrap) store = profile().wrap(std::move(store));
  const int64_t t0 = clock().NowMs();
  constexpr int64_t kLimit = 16;
  // A receipt-like key: 8 bytes of big-endian seq, then 32 bytes of `tag`.
  auto key = [](uint64_t seq, char tag) {
    std::string k(8, '\0');
    for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(seq >> (56 - 8 * i));
    return k + std::string(32, tag);
  };
  struct Put {
    std::string key;
    bool expires;
  };
  std::vector<Put> receipts, attempts;
  for (uint64_t i = 0; i < 300; ++i) {
    const uint64_t seq = 1'000'000 + (i * 7919) % 300;  // every seq once, scattered
    receipts.push_back({key(seq, 'r'), i % 2 == 0});
  }
  for (int i = 0; i < 60; ++i) {
    attempts.push_back({"tck-attempt-" + std::to_string((i * 37) % 60), i % 3 == 0});
  }
  auto put = [&](const std::vector<Put>& rs, const std::vector<Put>& as, int64_t expire_at) {
    Status s = store->Run(TxnKind::kWrite, RunOptions{}, [&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(QueueRecord q, txn.GetQueue("records"));
      for (const Put& r : rs) {
        MQLITE_RETURN_IF_ERROR(txn.PutReceipt(r.key, r.expires ? expire_at : t0 + 3'600'000));
      }
      for (const Put& a : as) {
        MQLITE_RETURN_IF_ERROR(
            txn.PutAttempt(a.key, AttemptRecord{q.id, ReceiveMode::kPeekLock, "x",
                                                a.expires ? expire_at : t0 + 3'600'000}));
      }
      return Status::OK();
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
  };
  // Calls DropExpiredRecords(now, kLimit) until `want` are gone, at most
  // `max_calls` times; then once more, which must find nothing.
  auto drop_all = [&](int64_t now, int64_t want, int64_t max_calls, const char* what) {
    int64_t dropped = 0, calls = 0;
    while (dropped < want && calls < max_calls) {
      ++calls;
      // Counted outside the body: a store may run a body more than once.
      int64_t n = 0;
      Status s = store->Run(TxnKind::kWrite, RunOptions{}, [&](StoreTxn& txn) -> Status {
        MQLITE_ASSIGN_OR_RETURN(n, txn.DropExpiredRecords(now, kLimit));
        return Status::OK();
      });
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_LE(n, 3 * kLimit) << "more than `limit` records of some kind in one call";
      dropped += n;
    }
    EXPECT_EQ(dropped, want) << what << ": " << calls << " calls with limit " << kLimit
                             << " dropped " << dropped << " of the " << want << " expired";
    int64_t again = 0;
    Status s = store->Run(TxnKind::kWrite, RunOptions{}, [&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(again, txn.DropExpiredRecords(now, kLimit));
      return Status::OK();
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(again, 0) << what << ": a record dropped twice, or a live one";
  };
  auto live_kept = [&](int64_t now, const char* what) {
    Status s = store->Run(TxnKind::kRead, RunOptions{}, [&](StoreTxn& txn) -> Status {
      for (const Put& r : receipts) {
        if (r.expires) continue;
        MQLITE_ASSIGN_OR_RETURN(bool found, txn.FindReceipt(r.key, now));
        EXPECT_TRUE(found) << what << ": a live receipt was dropped";
      }
      for (const Put& a : attempts) {
        if (a.expires) continue;
        MQLITE_ASSIGN_OR_RETURN(auto found, txn.FindAttempt(a.key, now));
        EXPECT_TRUE(found.has_value()) << what << ": a live attempt was dropped";
      }
      return Status::OK();
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
  };
  auto expired = [](const std::vector<Put>& v) {
    int64_t n = 0;
    for (const Put& p : v) n += p.expires ? 1 : 0;
    return n;
  };
  // One pass over all 360 records at kLimit a call, plus one call per
  // kLimit expired receipts (the largest kind), plus slack for a wrap.
  const int64_t bound = 2 * (360 / kLimit + 1) + 2;
  ASSERT_NO_FATAL_FAILURE(put(receipts, attempts, t0 + 10));
  ASSERT_NO_FATAL_FAILURE(
      drop_all(t0 + 20, expired(receipts) + expired(attempts), bound, "first round"));
  ASSERT_NO_FATAL_FAILURE(live_kept(t0 + 20, "first round"));

  std::vector<Put> behind;
  for (uint64_t i = 0; i < 40; ++i) behind.push_back({key(10 + (i * 13) % 40, 'b'), true});
  ASSERT_NO_FATAL_FAILURE(put(behind, {}, t0 + 30));
  ASSERT_NO_FATAL_FAILURE(drop_all(t0 + 40, 40, bound, "records behind the cursor"));
  ASSERT_NO_FATAL_FAILURE(live_kept(t0 + 40, "records behind the cursor"));
  store.reset();
  Reopen();
}

// SPEC §11: the store's own performance pins, declared by its profile.
MQLITE_TCK_GRADES(TckLifecycle, Spec11_PerformancePinsHold, "PIN", "G3");
TEST_P(TckLifecycle, Spec11_PerformancePinsHold) {
  if (profile().pins.empty()) {
    GTEST_SKIP() << "capability: the profile declares no performance pins";
  }
  CloseEngine();
  for (const PerfPin& pin : profile().pins) {
    auto fresh = profile().make_fixture();
    Status s = pin.check(*fresh);
    EXPECT_TRUE(s.ok()) << pin.name << ": " << s.ToString();
  }
  Reopen();
}

}  // namespace
}  // namespace mqlite::tck
