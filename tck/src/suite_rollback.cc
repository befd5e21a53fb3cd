// spec.md §1: one Store::Run is one atomic unit — it commits entirely when
// its body returns OK and leaves no trace otherwise. The engine leans on this
// everywhere (a failed group-commit member, a failed Tx, a re-run body), so
// the kit checks it at the store boundary itself: a body that writes through
// every write operation of StoreTxn and then fails must leave the data — every
// queue, every message field, every idempotency record — exactly as it was.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mqlite/tck.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorRollback() { return 0; }

namespace {

using namespace suite;  // NOLINT

// Everything the public API shows of a message, tokens aside (Peek has none).
std::string Describe(const Message& m) {
  std::string s = "seq=" + std::to_string(m.seq) + " state=" +
                  std::string(MessageStateName(m.state)) + " body=" + m.body +
                  " dc=" + std::to_string(m.delivery_count) + " prio=" +
                  std::to_string(m.priority) + " enq=" + std::to_string(m.enqueued_at) +
                  " vis=" + std::to_string(m.visible_at) + " exp=" + std::to_string(m.expires_at) +
                  " until=" + std::to_string(m.locked_until) +
                  " dla=" + std::to_string(m.dead_lettered_at);
  auto opt = [&](const char* k, const std::optional<std::string>& v) {
    s += std::string(" ") + k + "=" + (v ? "'" + *v + "'" : "-");
  };
  opt("id", m.message_id);
  opt("group", m.group_id);
  opt("subject", m.subject);
  opt("corr", m.correlation_id);
  opt("ctype", m.content_type);
  opt("reason", m.dead_letter_reason);
  opt("desc", m.dead_letter_description);
  for (const auto& [k, v] : m.properties) s += " p:" + k + "=" + v;
  return s;
}

constexpr std::string_view kOnPurpose = "tck: this body fails on purpose after its writes";

}  // namespace

MQLITE_TCK_GRADES(TckIntegrity, Spec1_RolledBackRunLeavesNoTrace, "G5");
TEST_P(TckIntegrity, Spec1_RolledBackRunLeavesNoTrace) {
  // A queue "a" (dedup on) with a message in every state, a queue "c" to be
  // deleted, and one record of each idempotency kind, all committed.
  QueueConfig a_cfg = WithDedup(60'000);
  a_cfg.max_delivery_count = 3;
  ASSERT_TRUE(IsOk(CreateQueue(engine(), "a", a_cfg)));
  MakeQueue("c");
  SendOk("c", "in c");
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(IsOk(SendMsg(engine(), "a", "a" + std::to_string(i),
                             i % 2 ? std::optional<std::string>("g") : std::nullopt, i % 3, 0,
                             "id-" + std::to_string(i))));
  }
  ASSERT_TRUE(IsOk(SendMsg(engine(), "a", "later", std::nullopt, 0, 60'000)));
  auto locked = ReceiveMany(engine(), "a", 4);
  ASSERT_TRUE(IsOk(locked));
  ASSERT_EQ(locked->size(), 4u);
  ASSERT_TRUE(IsOk(engine().Defer("a", (*locked)[0].seq, (*locked)[0].lock_token)));
  ASSERT_TRUE(IsOk(engine().Reject("a", (*locked)[1].seq, (*locked)[1].lock_token, "bad", "why")));
  ASSERT_TRUE(IsOk(engine().Complete("a", (*locked)[2].seq, (*locked)[2].lock_token)));
  ReceiveOptions attempt;
  attempt.attempt_id = "attempt-before";
  ASSERT_TRUE(IsOk(engine().Receive("a", attempt)));

  auto snapshot = [&]() -> std::vector<std::string> {
    std::vector<std::string> out;
    auto queues = engine().ListQueues();
    EXPECT_TRUE(IsOk(queues));
    if (!queues.ok()) return out;
    for (const QueueConfig& q : *queues) {
      out.push_back("queue " + q.name + " mdc=" + std::to_string(q.max_delivery_count) +
                    " dedup=" + std::to_string(q.dedup_window_ms));
      for (const Message& m : PeekAll(q.name)) out.push_back(Describe(m));
      out.push_back(StatsString(StatsOk(q.name)));
    }
    return out;
  };
  // Reopen first, so that what recovery at open does (on an exclusive store
  // it releases the leases above) is already in the picture on both sides.
  Reopen();
  const std::vector<std::string> before = snapshot();
  ASSERT_FALSE(HasFailure());
  CloseEngine();

  auto opened = fixture().Open();
  ASSERT_TRUE(IsOk(opened));
  std::unique_ptr<Store> store = std::move(*opened);
  if (profile().wrap) store = profile().wrap(std::move(store));
  const int64_t now = clock().NowMs();
  LockToken tokens[8];
  for (int i = 0; i < 8; ++i) tokens[i] = ForeignToken(static_cast<uint8_t>(0x10 + i));
  std::vector<std::string> done;  // which operations ran, for the failure message
  Status ran = store->Run(TxnKind::kWrite, RunOptions{}, [&](StoreTxn& txn) -> Status {
    done.clear();
    MQLITE_ASSIGN_OR_RETURN(QueueRecord a, txn.GetQueue("a"));
    MQLITE_ASSIGN_OR_RETURN(QueueRecord c, txn.GetQueue("c"));
    bool created = false;
    QueueConfig b_cfg;
    b_cfg.name = "b";
    MQLITE_ASSIGN_OR_RETURN(QueueRecord b, txn.UpsertQueue(b_cfg, now, &created));
    QueueConfig a_changed = a.config;
    a_changed.max_delivery_count = 9;
    MQLITE_RETURN_IF_ERROR(txn.UpsertQueue(a_changed, now, &created).status());
    done.push_back("UpsertQueue");
    // Two ungrouped messages the Claim below is sure to find, one into the
    // busy group "g" behind its locked head.
    OutgoingMessage out = Out("written then rolled back");
    OutgoingMessage grouped = Out("written into g then rolled back");
    grouped.group_id = "g";
    const EnqueueItem loose{&out, std::nullopt, now, now, 0, MessageState::kActive};
    const EnqueueItem items[3] = {
        loose, loose, {&grouped, std::string("g"), now, now, 0, MessageState::kActive}};
    MQLITE_RETURN_IF_ERROR(txn.Enqueue(a, items).status());
    MQLITE_RETURN_IF_ERROR(txn.Enqueue(b, items).status());
    done.push_back("Enqueue");
    ClaimRequest req;
    req.now = now;
    req.max_messages = 4;
    req.locked_until = now + kLock;
    req.tokens = tokens;
    MQLITE_ASSIGN_OR_RETURN(std::vector<Message> claimed, txn.Claim(a, req));
    if (claimed.size() < 3) return Status::Internal("the body's Claim found too little");
    done.push_back("Claim");
    SettleRequest settle;
    settle.seq = claimed[0].seq;
    settle.token = claimed[0].lock_token;
    settle.op = SettleOp::kComplete;
    settle.now = now;
    MQLITE_RETURN_IF_ERROR(txn.Settle(a, settle).status());
    settle.seq = claimed[1].seq;
    settle.token = claimed[1].lock_token;
    settle.op = SettleOp::kAbandon;
    settle.delay_ms = 5'000;
    MQLITE_RETURN_IF_ERROR(txn.Settle(a, settle).status());
    done.push_back("Settle");
    MQLITE_RETURN_IF_ERROR(
        txn.ClaimDeferred(a, (*locked)[0].seq, tokens[7], now, now + kLock).status());
    done.push_back("ClaimDeferred");
    MQLITE_RETURN_IF_ERROR(txn.DeadLetterMessage(a, claimed[2].seq, "operator", "tck", now));
    done.push_back("DeadLetterMessage");
    MQLITE_ASSIGN_OR_RETURN(std::vector<Message> scheduled,
                            txn.Peek(a, PeekOptions{MessageState::kScheduled, 0, 10}));
    for (const Message& m : scheduled) {
      if (m.delivery_count == 0) MQLITE_RETURN_IF_ERROR(txn.CancelScheduled(a, m.seq));
    }
    done.push_back("CancelScheduled");
    MQLITE_RETURN_IF_ERROR(txn.Redrive(a, b, RedriveOptions{}, now).status());
    done.push_back("Redrive");
    MQLITE_RETURN_IF_ERROR(txn.PromoteDue(a, now + 10 * kLock, 100).status());
    MQLITE_RETURN_IF_ERROR(txn.ReclaimLocks(a, now + 10 * kLock, true, 100).status());
    MQLITE_RETURN_IF_ERROR(txn.ExpireMessages(a, now + 10 * kLock, 100).status());
    MQLITE_RETURN_IF_ERROR(txn.EnforceRetention(b, RetentionBounds{1, 0, 0}, now, 100).status());
    done.push_back("maintenance");
    MQLITE_RETURN_IF_ERROR(txn.PurgeDeadLetters(a, PurgeOptions{}, now).status());
    MQLITE_ASSIGN_OR_RETURN(std::vector<Message> all, txn.Peek(a, PeekOptions{{}, 0, 1}));
    if (!all.empty()) MQLITE_RETURN_IF_ERROR(txn.DeleteMessage(a, all[0].seq));
    done.push_back("Purge/DeleteMessage");
    MQLITE_RETURN_IF_ERROR(
        txn.PutDedup(a, "tck-rollback-dedup", DedupRecord{1, std::string(32, 'x'), now + 60'000}));
    MQLITE_RETURN_IF_ERROR(txn.PutReceipt("tck-rollback-receipt", now + 60'000));
    MQLITE_RETURN_IF_ERROR(txn.PutAttempt(
        "tck-rollback-attempt", AttemptRecord{a.id, ReceiveMode::kPeekLock, "x", now + 60'000}));
    MQLITE_RETURN_IF_ERROR(txn.DropExpiredRecords(now + 365LL * 24 * 3600 * 1000, 1000).status());
    done.push_back("records");
    MQLITE_RETURN_IF_ERROR(txn.DeleteQueue(c));
    done.push_back("DeleteQueue");
    return Status::Internal(kOnPurpose);
  });
  std::string trail;
  for (const std::string& d : done) trail += d + " ";
  ASSERT_EQ(ran.code(), StatusCode::kInternal) << ran.ToString() << " after: " << trail;
  ASSERT_EQ(ran.message(), kOnPurpose) << "after: " << trail;

  // The records the body put are not there; the ones committed before are.
  Status read = store->Run(TxnKind::kRead, RunOptions{}, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(QueueRecord a, txn.GetQueue("a"));
    MQLITE_ASSIGN_OR_RETURN(auto dedup, txn.FindDedup(a, "tck-rollback-dedup", now));
    EXPECT_FALSE(dedup.has_value()) << "a rolled-back PutDedup is visible";
    MQLITE_ASSIGN_OR_RETURN(bool receipt, txn.FindReceipt("tck-rollback-receipt", now));
    EXPECT_FALSE(receipt) << "a rolled-back PutReceipt is visible";
    MQLITE_ASSIGN_OR_RETURN(auto att, txn.FindAttempt("tck-rollback-attempt", now));
    EXPECT_FALSE(att.has_value()) << "a rolled-back PutAttempt is visible";
    MQLITE_ASSIGN_OR_RETURN(auto kept, txn.FindAttempt("attempt-before", now));
    EXPECT_TRUE(kept.has_value()) << "a rolled-back DropExpiredRecords took a committed attempt";
    return Status::OK();
  });
  EXPECT_TRUE(IsOk(read));
  store.reset();

  Reopen();
  EXPECT_EQ(snapshot(), before) << "the data changed although the Run failed";
  // The committed dedup records still answer: a resend is a duplicate.
  auto again = SendMsg(engine(), "a", "a0", std::nullopt, 0, 0, "id-0");
  ASSERT_TRUE(IsOk(again));
  EXPECT_EQ(snapshot(), before) << "a resend of a committed message id created a message";
}

}  // namespace mqlite::tck
