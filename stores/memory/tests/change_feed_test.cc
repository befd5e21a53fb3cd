// Unit tests of the change feed building blocks (mqlite/change_feed.h,
// spec.md §9) and of the in-memory store's feed in shared mode: who gets
// called, for which queues, and when not.
#include "mqlite/change_feed.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mqlite/memory.h"
#include "mqlite/store.h"

namespace mqlite {
namespace {

// Collects the queue ids a subscription was called with.
struct Seen {
  std::mutex mu;
  std::vector<int64_t> ids;
  ChangeCallback Callback() {
    return [this](int64_t id) {
      std::lock_guard<std::mutex> l(mu);
      ids.push_back(id);
    };
  }
  std::vector<int64_t> Take() {
    std::lock_guard<std::mutex> l(mu);
    return std::exchange(ids, {});
  }
};

TEST(ChangeHubTest, Spec9_EverySubscriberHearsEveryIdUntilItsSubscriptionGoes) {
  auto hub = ChangeHub::Create();
  EXPECT_TRUE(hub->empty());
  Seen a, b;
  auto sa = hub->Subscribe(a.Callback());
  auto sb = hub->Subscribe(b.Callback());
  EXPECT_FALSE(hub->empty());
  const int64_t ids[] = {3, 7};
  hub->Publish(ids);
  EXPECT_EQ(a.Take(), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(b.Take(), (std::vector<int64_t>{3, 7}));
  sa.reset();
  hub->Publish(ids);
  EXPECT_TRUE(a.Take().empty()) << "a destroyed subscription was still called";
  EXPECT_EQ(b.Take(), (std::vector<int64_t>{3, 7}));
  sb.reset();
  EXPECT_TRUE(hub->empty());
}

class SharedFeedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = NewMemoryDatabase();
    for (auto* s : {&first_, &second_}) {
      auto opened = OpenMemoryStore(db_, MemoryStoreOptions{.shared = true});
      ASSERT_TRUE(opened.ok()) << opened.error().ToString();
      *s = std::move(*opened);
    }
    ASSERT_TRUE(first_->Capabilities().change_feed);
    ASSERT_FALSE(first_->Capabilities().exclusive);
    a_ = Upsert("a");
    b_ = Upsert("b");
  }

  QueueRecord Upsert(const std::string& name) {
    QueueRecord out;
    Status s = first_->Run(TxnKind::kWrite, {}, [&](StoreTxn& txn) -> Status {
      QueueConfig c;
      c.name = name;
      bool created = false;
      MQLITE_ASSIGN_OR_RETURN(out, txn.UpsertQueue(c, 0, &created));
      return Status::OK();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  Status Send(Store& store, const QueueRecord& q) {
    return store.Run(TxnKind::kWrite, {}, [&](StoreTxn& txn) -> Status {
      OutgoingMessage m;
      m.body = "x";
      const EnqueueItem item{&m, std::nullopt, 1, 1, 0, MessageState::kActive};
      return txn.Enqueue(q, std::span<const EnqueueItem>(&item, 1)).status();
    });
  }

  std::shared_ptr<MemoryDatabase> db_;
  std::unique_ptr<Store> first_, second_;
  QueueRecord a_, b_;
};

// A commit through one store object is heard by a subscriber of another
// store object on the same database, for exactly the queue it touched.
TEST_F(SharedFeedTest, Spec9_ACommitInOneStoreIsHeardInAnotherForItsQueueOnly) {
  Seen seen;
  auto sub = second_->Subscribe(seen.Callback());
  ASSERT_TRUE(sub.ok()) << sub.error().ToString();
  ASSERT_TRUE(Send(*first_, a_).ok());
  EXPECT_EQ(seen.Take(), (std::vector<int64_t>{a_.id}));
  ASSERT_TRUE(Send(*first_, b_).ok());
  EXPECT_EQ(seen.Take(), (std::vector<int64_t>{b_.id}));
}

// Rolled-back bodies, read transactions and claims that take nothing
// publish nothing (an empty claim would wake its own long-poll for ever).
TEST_F(SharedFeedTest, Spec9_NothingCommittedNothingPublished) {
  Seen seen;
  auto sub = second_->Subscribe(seen.Callback());
  ASSERT_TRUE(sub.ok());
  Status failed = first_->Run(TxnKind::kWrite, {}, [&](StoreTxn& txn) -> Status {
    OutgoingMessage m;
    m.body = "x";
    const EnqueueItem item{&m, std::nullopt, 1, 1, 0, MessageState::kActive};
    MQLITE_RETURN_IF_ERROR(txn.Enqueue(a_, std::span<const EnqueueItem>(&item, 1)).status());
    return Status::Internal("rolled back on purpose");
  });
  EXPECT_EQ(failed.code(), StatusCode::kInternal);
  Status read = first_->Run(TxnKind::kRead, {}, [&](StoreTxn& txn) -> Status {
    return txn.Stats(a_, 1).status();
  });
  EXPECT_TRUE(read.ok()) << read.ToString();
  LockToken token;
  token.bytes[0] = 1;
  Status empty_claim = first_->Run(TxnKind::kWrite, {}, [&](StoreTxn& txn) -> Status {
    ClaimRequest r;
    r.now = 1;
    r.locked_until = 1000;
    r.tokens = std::span<const LockToken>(&token, 1);
    MQLITE_ASSIGN_OR_RETURN(std::vector<Message> got, txn.Claim(a_, r));
    EXPECT_TRUE(got.empty());
    return Status::OK();
  });
  EXPECT_TRUE(empty_claim.ok()) << empty_claim.ToString();
  EXPECT_TRUE(seen.Take().empty());
}

TEST(ChangeFeedTest, Spec9_AStoreWithoutAFeedAnswersUnimplemented) {
  auto db = NewMemoryDatabase();
  auto store = OpenMemoryStore(db);
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE((*store)->Capabilities().exclusive);
  // The base Store has no feed: Unimplemented, which the engine answers with
  // its poll_interval_ms re-check.
  class NoFeed final : public StoreWrapper {
   public:
    using StoreWrapper::StoreWrapper;
    Result<std::unique_ptr<ChangeSubscription>> Subscribe(ChangeCallback cb) override {
      return Store::Subscribe(std::move(cb));
    }
  };
  NoFeed wrapped(std::move(*store));
  auto sub = wrapped.Subscribe([](int64_t) {});
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.error().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace mqlite
