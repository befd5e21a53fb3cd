// SPEC §6 / G7 and §11: space reclaim and the store's performance pins.
// Space: freed by deletes is reused, and given back to the filesystem when
// the profile says the store shrinks (StoreProfile::space). Needs the fixture
// to report its on-disk size (StoreFixture::StorageBytes); skipped otherwise.
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
