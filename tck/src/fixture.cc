// The kit's base fixture (tck.h).
#include <ostream>
#include <utility>

#include "mqlite/tck.h"

namespace mqlite::tck {

void PrintTo(const Param& p, std::ostream* os) { *os << p.profile.name; }

void TckTest::SetUp() {
  ASSERT_TRUE(profile().make_fixture) << "StoreProfile '" << profile().name
                                      << "' has no make_fixture";
  fixture_ = profile().make_fixture();
  ASSERT_NE(fixture_, nullptr);
  engine_options_ = EngineOptions{};
  engine_options_.clock = &clock_;
  engine_options_.background_maintenance = false;
  auto e = OpenEngine();
  ASSERT_TRUE(e.ok()) << "opening the store under test: " << e.error().ToString();
  engine_ = std::move(*e);
  // The declared profile must match what the store reports (SPEC §12).
  StoreCapabilities caps = engine_->capabilities();
  ASSERT_EQ(caps.exclusive, profile().exclusive)
      << "profile declares exclusive=" << profile().exclusive << " but the store reports "
      << caps.exclusive;
}

void TckTest::TearDown() {
  CloseEngine();
  fixture_.reset();
}

Result<std::unique_ptr<Engine>> TckTest::OpenEngine() {
  auto store = fixture_->Open();
  if (!store.ok()) return store.error();
  std::unique_ptr<Store> s = std::move(*store);
  if (profile().wrap) s = profile().wrap(std::move(s));
  return Engine::Open(std::move(s), engine_options_);
}

void TckTest::CloseEngine() {
  if (engine_) {
    EXPECT_TRUE(engine_->Close().ok());
    engine_.reset();
  }
}

void TckTest::Reopen() {
  CloseEngine();
  auto e = OpenEngine();
  ASSERT_TRUE(e.ok()) << "reopen: " << e.error().ToString();
  engine_ = std::move(*e);
}

QueueConfig TckTest::MakeQueue(const QueueConfig& config) {
  auto r = engine_->CreateQueue(config);
  EXPECT_TRUE(r.ok()) << "CreateQueue " << config.name << ": " << r.error().ToString();
  return r.ok() ? *r : config;
}

QueueConfig TckTest::MakeQueue(std::string name, Ordering ordering) {
  QueueConfig c;
  c.name = std::move(name);
  c.ordering = ordering;
  return MakeQueue(c);
}

int64_t TckTest::SendOk(std::string_view queue, const OutgoingMessage& m) {
  auto r = engine_->Send(queue, m);
  EXPECT_TRUE(r.ok()) << "Send to " << queue << ": " << r.error().ToString();
  return r.ok() ? *r : 0;
}

int64_t TckTest::SendOk(std::string_view queue, std::string body) {
  OutgoingMessage m;
  m.body = std::move(body);
  return SendOk(queue, m);
}

std::vector<Message> TckTest::ReceiveOk(std::string_view queue, int max, ReceiveMode mode) {
  ReceiveOptions o;
  o.max_messages = max;
  o.mode = mode;
  auto r = engine_->Receive(queue, o);
  EXPECT_TRUE(r.ok()) << "Receive from " << queue << ": " << r.error().ToString();
  return r.ok() ? *r : std::vector<Message>{};
}

QueueStats TckTest::StatsOk(std::string_view queue) {
  auto r = engine_->Stats(queue);
  EXPECT_TRUE(r.ok()) << "Stats " << queue << ": " << r.error().ToString();
  return r.ok() ? *r : QueueStats{};
}

std::vector<Message> TckTest::PeekAll(std::string_view queue) {
  std::vector<Message> all;
  PeekOptions o;
  o.max_messages = 1000;
  for (;;) {
    auto page = engine_->Peek(queue, o);
    EXPECT_TRUE(page.ok()) << "Peek " << queue << ": " << page.error().ToString();
    if (!page.ok() || page->empty()) break;
    o.from_seq = page->back().seq;
    for (auto& m : *page) all.push_back(std::move(m));
  }
  return all;
}

namespace {

// Records a skip for the running test without returning from the caller (the
// caller returns right after: `if (SkipUnlessX()) return;`).
void RecordSkip(const char* reason) {
  ::testing::internal::AssertHelper(::testing::TestPartResult::kSkip, __FILE__, __LINE__,
                                    reason) = ::testing::Message();
}

}  // namespace

bool TckTest::SkipUnlessExclusive() {
  if (profile().exclusive) return false;
  RecordSkip("capability: the store is shared (many engines), not exclusive");
  return true;
}

bool TckTest::SkipUnlessShared() {
  if (!profile().exclusive) return false;
  RecordSkip("capability: the store is exclusive (one engine at a time)");
  return true;
}

bool TckTest::SkipUnlessCrashable() {
  if (profile().crash == CrashModel::kProcess) return false;
  RecordSkip("capability: the store's data does not survive its process (crash model none)");
  return true;
}

bool TckTest::SkipUnlessBusinessHooks() {
  if (profile().business) return false;
  RecordSkip("capability: the profile declares no native-handle business hooks");
  return true;
}

}  // namespace mqlite::tck
