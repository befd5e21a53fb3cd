// TckTransactions — SPEC §8: Tx runs the callback in one store transaction;
// the application's own writes (through the native handle, here via the
// profile's BusinessHooks) and the TxContext queue operations commit or roll
// back together; misuse is refused with InvalidArgument; a stop requested
// inside a Tx refuses the next operation and rolls everything back (§10).
//
// Tests that need a business write skip without BusinessHooks; every other
// test runs for every store. Every test starts with empty queues "a" and "b".
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"
#include "suite_util.h"

namespace mqlite::tck {

int AnchorTransactions() { return 0; }

namespace {

using namespace ::mqlite::tck::suite;  // NOLINT(build/namespaces)

void MakeQueues(Engine& e) {
  MQ_ASSERT_OK(CreateQueue(e, "a"));
  MQ_ASSERT_OK(CreateQueue(e, "b"));
}

// The hooks' one-time setup, in its own Tx.
Status PrepareBusiness(Engine& e, const BusinessHooks& b) {
  return e.Tx([&](TxContext& tx) { return b.prepare(tx.native_handle()); });
}

// Reads `key` through the hooks in a separate Tx (nullopt: absent).
Result<std::optional<std::string>> GetBusiness(Engine& e, const BusinessHooks& b,
                                               std::string_view key) {
  std::optional<std::string> out;
  Status s = e.Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(out, b.get(tx.native_handle(), key));
    return Status::OK();
  });
  if (!s.ok()) return s;
  return out;
}

// CallOptions that observe `src`.
CallOptions StopOnRequest(std::stop_source& src) {
  CallOptions call;
  call.stop_token = src.get_token();
  return call;
}

// ---- the native handle (SPEC §8) -----------------------------------------------------

MQLITE_TCK_GRADES(TckTransactions, Spec8_NativeHandleMatchesTheCapabilities, "G5");
TEST_P(TckTransactions, Spec8_NativeHandleMatchesTheCapabilities) {
  const StoreCapabilities caps = engine().capabilities();
  std::string type = "<not run>";
  void* handle = &type;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    type = tx.native_handle_type();
    handle = tx.native_handle();
    return Status::OK();
  }));
  EXPECT_EQ(type, caps.native_handle_type);
  if (caps.native_handle_type.empty()) {
    EXPECT_EQ(handle, nullptr) << "a store without a native handle type exposes no handle";
  } else {
    EXPECT_NE(handle, nullptr) << "the store names a native handle type '"
                               << caps.native_handle_type << "' but Tx exposes none";
  }
  if (profile().business) {
    EXPECT_NE(handle, nullptr) << "the profile declares business hooks but Tx has no handle";
  }
}

MQLITE_TCK_GRADES(TckTransactions, Spec8_BusinessWriteIsReadBackInALaterTx, "G5");
TEST_P(TckTransactions, Spec8_BusinessWriteIsReadBackInALaterTx) {
  if (SkipUnlessBusinessHooks()) return;
  const BusinessHooks& b = *profile().business;
  MQ_ASSERT_OK(PrepareBusiness(engine(), b));
  MQ_ASSERT_OK_AND_ASSIGN(std::optional<std::string> none, GetBusiness(engine(), b, "k"));
  EXPECT_FALSE(none.has_value());
  const std::string value = "value";
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) { return b.put(tx.native_handle(), "k", value); }));
  MQ_ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, GetBusiness(engine(), b, "k"));
  EXPECT_EQ(got, std::optional<std::string>(value));
  // A reopen keeps the committed business write.
  ASSERT_NO_FATAL_FAILURE(Reopen());
  MQ_ASSERT_OK_AND_ASSIGN(std::optional<std::string> after, GetBusiness(engine(), b, "k"));
  EXPECT_EQ(after, std::optional<std::string>(value));
}

// ---- commit together (SPEC §8: the outbox) -------------------------------------------

MQLITE_TCK_GRADES(TckTransactions, Spec8_OkCommitsBusinessWriteAndMessageTogether, "G5");
TEST_P(TckTransactions, Spec8_OkCommitsBusinessWriteAndMessageTogether) {
  if (SkipUnlessBusinessHooks()) return;
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  const BusinessHooks& b = *profile().business;
  MQ_ASSERT_OK(PrepareBusiness(engine(), b));
  int64_t seq = 0;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(b.put(tx.native_handle(), "order-1", "placed"));
    MQLITE_ASSIGN_OR_RETURN(seq, tx.Send("b", Out("order-1 placed")));
    return Status::OK();
  }));
  EXPECT_GT(seq, 0);
  MQ_ASSERT_OK_AND_ASSIGN(std::optional<std::string> row, GetBusiness(engine(), b, "order-1"));
  EXPECT_EQ(row, std::optional<std::string>("placed"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "b"));
  EXPECT_EQ(m.seq, seq);
  EXPECT_EQ(m.body, "order-1 placed");
}

MQLITE_TCK_GRADES(TckTransactions, Spec8_ReceiveSeesAMessageSentInACommittedTx, "G2", "G5");
TEST_P(TckTransactions, Spec8_ReceiveSeesAMessageSentInACommittedTx) {
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  std::vector<int64_t> seqs;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    std::vector<OutgoingMessage> batch = {Out("x"), Out("y")};
    MQLITE_ASSIGN_OR_RETURN(seqs, SendBatchSeqs(tx, "a", batch));
    return Status::OK();
  }));
  ASSERT_EQ(seqs.size(), 2u);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "a", 10));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].seq, seqs[0]);
  EXPECT_EQ(got[1].seq, seqs[1]);
}

// ---- roll back together (SPEC §8) -----------------------------------------------------

MQLITE_TCK_GRADES(TckTransactions, Spec8_ErrorFromCallbackRollsBackQueueOperations, "G5");
TEST_P(TckTransactions, Spec8_ErrorFromCallbackRollsBackQueueOperations) {
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  Status s = engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(tx.Send("b", Out("doomed")).status());
    return Status::NotFound("business rule says no");
  });
  MQ_EXPECT_CODE(s, kNotFound);
  EXPECT_EQ(Total(engine(), "b"), 0);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany(engine(), "b", 10));
  EXPECT_TRUE(none.empty());
}

MQLITE_TCK_GRADES(TckTransactions, Spec8_ErrorFromCallbackRollsBackBusinessWriteAndMessage, "G5");
TEST_P(TckTransactions, Spec8_ErrorFromCallbackRollsBackBusinessWriteAndMessage) {
  if (SkipUnlessBusinessHooks()) return;
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  const BusinessHooks& b = *profile().business;
  MQ_ASSERT_OK(PrepareBusiness(engine(), b));
  Status s = engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(b.put(tx.native_handle(), "doomed", "row"));
    MQLITE_RETURN_IF_ERROR(tx.Send("b", Out("doomed")).status());
    return Status::NotFound("business rule says no");
  });
  MQ_EXPECT_CODE(s, kNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(std::optional<std::string> row, GetBusiness(engine(), b, "doomed"));
  EXPECT_FALSE(row.has_value());
  EXPECT_EQ(Total(engine(), "b"), 0);
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> none, ReceiveMany(engine(), "b", 10));
  EXPECT_TRUE(none.empty());
}

MQLITE_TCK_GRADES(TckTransactions, Spec8_ExceptionRollsBackQueueOperationsAndPropagates, "G5");
TEST_P(TckTransactions, Spec8_ExceptionRollsBackQueueOperationsAndPropagates) {
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  EXPECT_THROW(
      {
        (void)engine().Tx([&](TxContext& tx) -> Status {
          MQLITE_RETURN_IF_ERROR(tx.Send("b", Out("thrown")).status());
          throw std::runtime_error("boom");
        });
      },
      std::runtime_error);
  EXPECT_EQ(Total(engine(), "b"), 0);
  // The engine is usable afterwards.
  MQ_EXPECT_OK(SendBody(engine(), "b", "after"));
  EXPECT_EQ(Total(engine(), "b"), 1);
}

MQLITE_TCK_GRADES(TckTransactions, Spec8_ExceptionRollsBackBusinessWriteAndMessageAndPropagates,
                  "G5");
TEST_P(TckTransactions, Spec8_ExceptionRollsBackBusinessWriteAndMessageAndPropagates) {
  if (SkipUnlessBusinessHooks()) return;
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  const BusinessHooks& b = *profile().business;
  MQ_ASSERT_OK(PrepareBusiness(engine(), b));
  EXPECT_THROW(
      {
        (void)engine().Tx([&](TxContext& tx) -> Status {
          MQLITE_RETURN_IF_ERROR(b.put(tx.native_handle(), "thrown", "row"));
          MQLITE_RETURN_IF_ERROR(tx.Send("b", Out("thrown")).status());
          throw std::runtime_error("boom");
        });
      },
      std::runtime_error);
  MQ_ASSERT_OK_AND_ASSIGN(std::optional<std::string> row, GetBusiness(engine(), b, "thrown"));
  EXPECT_FALSE(row.has_value());
  EXPECT_EQ(Total(engine(), "b"), 0);
  // The engine is usable afterwards.
  MQ_EXPECT_OK(SendBody(engine(), "b", "after"));
  EXPECT_EQ(Total(engine(), "b"), 1);
}

// ---- consume-transform-produce (SPEC §8: exactly-once within one store) ------------------

MQLITE_TCK_GRADES(TckTransactions, Spec8_ConsumeTransformProduceCommitsAll, "G5");
TEST_P(TckTransactions, Spec8_ConsumeTransformProduceCommitsAll) {
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  MQ_ASSERT_OK(SendBody(engine(), "a", "input"));
  MQ_ASSERT_OK_AND_ASSIGN(Message in, ReceiveOne(engine(), "a"));
  int64_t out_seq = 0;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(out_seq, tx.Send("b", Out(in.body + "-out")));
    return tx.Complete("a", in.seq, in.lock_token);
  }));
  EXPECT_EQ(Total(engine(), "a"), 0);
  MQ_ASSERT_OK_AND_ASSIGN(Message out, ReceiveOne(engine(), "b"));
  EXPECT_EQ(out.seq, out_seq);
  EXPECT_EQ(out.body, "input-out");
  // The Complete inside the Tx wrote its receipt in the same commit (§7.2).
  MQ_EXPECT_OK(engine().Complete("a", in.seq, in.lock_token));
}

MQLITE_TCK_GRADES(TckTransactions, Spec8_ConsumeTransformProduceWithBusinessWriteCommitsAll, "G5");
TEST_P(TckTransactions, Spec8_ConsumeTransformProduceWithBusinessWriteCommitsAll) {
  if (SkipUnlessBusinessHooks()) return;
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  const BusinessHooks& b = *profile().business;
  MQ_ASSERT_OK(PrepareBusiness(engine(), b));
  MQ_ASSERT_OK(SendBody(engine(), "a", "input"));
  MQ_ASSERT_OK_AND_ASSIGN(Message in, ReceiveOne(engine(), "a"));
  int64_t out_seq = 0;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(b.put(tx.native_handle(), "transformed", in.body));
    MQLITE_ASSIGN_OR_RETURN(out_seq, tx.Send("b", Out(in.body + "-out")));
    return tx.Complete("a", in.seq, in.lock_token);
  }));
  EXPECT_EQ(Total(engine(), "a"), 0);
  MQ_ASSERT_OK_AND_ASSIGN(std::optional<std::string> row, GetBusiness(engine(), b, "transformed"));
  EXPECT_EQ(row, std::optional<std::string>("input"));
  MQ_ASSERT_OK_AND_ASSIGN(Message out, ReceiveOne(engine(), "b"));
  EXPECT_EQ(out.seq, out_seq);
  EXPECT_EQ(out.body, "input-out");
  // The Complete inside the Tx wrote its receipt in the same commit (§7.2).
  MQ_EXPECT_OK(engine().Complete("a", in.seq, in.lock_token));
}

MQLITE_TCK_GRADES(TckTransactions, Spec8_ConsumeTransformProduceWithErrorRollsBackAll, "G5");
TEST_P(TckTransactions, Spec8_ConsumeTransformProduceWithErrorRollsBackAll) {
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  MQ_ASSERT_OK(SendBody(engine(), "a", "input"));
  MQ_ASSERT_OK_AND_ASSIGN(Message in, ReceiveOne(engine(), "a"));
  Status s = engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(tx.Send("b", Out("out")).status());
    MQLITE_RETURN_IF_ERROR(tx.Complete("a", in.seq, in.lock_token));
    return Status::Unavailable("downstream said retry");
  });
  MQ_EXPECT_CODE(s, kUnavailable);

  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "a", in.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  EXPECT_EQ(still.locked_until, in.locked_until);  // same lease (Peek shows no token)
  EXPECT_EQ(still.delivery_count, 1);
  EXPECT_EQ(Total(engine(), "b"), 0);
  // The lease is intact: the same token completes now.
  MQ_EXPECT_OK(engine().Complete("a", in.seq, in.lock_token));
  EXPECT_EQ(Total(engine(), "a"), 0);
}

MQLITE_TCK_GRADES(TckTransactions,
                  Spec8_ConsumeTransformProduceWithBusinessWriteAndErrorRollsBackAll, "G5");
TEST_P(TckTransactions, Spec8_ConsumeTransformProduceWithBusinessWriteAndErrorRollsBackAll) {
  if (SkipUnlessBusinessHooks()) return;
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  const BusinessHooks& b = *profile().business;
  MQ_ASSERT_OK(PrepareBusiness(engine(), b));
  MQ_ASSERT_OK(SendBody(engine(), "a", "input"));
  MQ_ASSERT_OK_AND_ASSIGN(Message in, ReceiveOne(engine(), "a"));
  Status s = engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(b.put(tx.native_handle(), "transformed", in.body));
    MQLITE_RETURN_IF_ERROR(tx.Send("b", Out("out")).status());
    MQLITE_RETURN_IF_ERROR(tx.Complete("a", in.seq, in.lock_token));
    return Status::Unavailable("downstream said retry");
  });
  MQ_EXPECT_CODE(s, kUnavailable);

  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "a", in.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  EXPECT_EQ(still.locked_until, in.locked_until);  // same lease (Peek shows no token)
  EXPECT_EQ(still.delivery_count, 1);
  EXPECT_EQ(Total(engine(), "b"), 0);
  MQ_ASSERT_OK_AND_ASSIGN(std::optional<std::string> row, GetBusiness(engine(), b, "transformed"));
  EXPECT_FALSE(row.has_value());
  // The lease is intact: the same token completes now.
  MQ_EXPECT_OK(engine().Complete("a", in.seq, in.lock_token));
  EXPECT_EQ(Total(engine(), "a"), 0);
}

MQLITE_TCK_GRADES(TckTransactions, Spec8_AbandonRejectDeferInsideTxCommit, "G5");
TEST_P(TckTransactions, Spec8_AbandonRejectDeferInsideTxCommit) {
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s1, SendBody(engine(), "a", "1"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s2, SendBody(engine(), "a", "2"));
  MQ_ASSERT_OK_AND_ASSIGN(int64_t s3, SendBody(engine(), "a", "3"));
  MQ_ASSERT_OK_AND_ASSIGN(std::vector<Message> got, ReceiveMany(engine(), "a", 3));
  ASSERT_EQ(got.size(), 3u);
  // First a rolled-back attempt: nothing changes.
  MQ_EXPECT_CODE(engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(tx.Abandon("a", got[0].seq, got[0].lock_token));
    MQLITE_RETURN_IF_ERROR(tx.Reject("a", got[1].seq, got[1].lock_token, "Bad", "desc"));
    MQLITE_RETURN_IF_ERROR(tx.Defer("a", got[2].seq, got[2].lock_token));
    return Status::Internal("roll back");
  }),
                 kInternal);
  MQ_ASSERT_OK_AND_ASSIGN(QueueStats st0, StatsOf(engine(), "a"));
  EXPECT_EQ(st0.locked, 3);

  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(tx.Abandon("a", got[0].seq, got[0].lock_token));
    MQLITE_RETURN_IF_ERROR(tx.Reject("a", got[1].seq, got[1].lock_token, "Bad", "desc"));
    return tx.Defer("a", got[2].seq, got[2].lock_token);
  }));
  MQ_ASSERT_OK_AND_ASSIGN(Message m1, Find(engine(), "a", s1));
  MQ_ASSERT_OK_AND_ASSIGN(Message m2, Find(engine(), "a", s2));
  MQ_ASSERT_OK_AND_ASSIGN(Message m3, Find(engine(), "a", s3));
  EXPECT_EQ(m1.state, MessageState::kActive);
  EXPECT_EQ(m2.state, MessageState::kDeadLettered);
  EXPECT_EQ(m2.dead_letter_reason, "Bad");
  EXPECT_EQ(m3.state, MessageState::kDeferred);
}

// ---- misuse (SPEC §8) ---------------------------------------------------------------------

MQLITE_TCK_GRADES(TckTransactions, Spec8_NestedTxIsInvalidArgument, "G5");
TEST_P(TckTransactions, Spec8_NestedTxIsInvalidArgument) {
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  Status inner = Status::OK();
  bool inner_ran = false;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    inner = engine().Tx([&](TxContext&) -> Status {
      inner_ran = true;
      return Status::OK();
    });
    return tx.Send("a", Out("outer")).status();
  }));
  MQ_EXPECT_CODE(inner, kInvalidArgument);
  EXPECT_FALSE(inner_ran);
  EXPECT_EQ(Total(engine(), "a"), 1);
}

MQLITE_TCK_GRADES(TckTransactions, Spec8_EngineMethodsInsideTheCallbackAreInvalidArgument, "G5");
TEST_P(TckTransactions, Spec8_EngineMethodsInsideTheCallbackAreInvalidArgument) {
  // Use the TxContext, not the engine, inside the callback.
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  MQ_ASSERT_OK(SendBody(engine(), "a", "pre"));
  MQ_ASSERT_OK_AND_ASSIGN(Message locked, ReceiveOne(engine(), "a"));
  MQ_ASSERT_OK(engine().Tx([&](TxContext&) -> Status {
    MQ_EXPECT_CODE(SendBody(engine(), "b", "inside"), kInvalidArgument);
    std::vector<OutgoingMessage> batch = {Out("x")};
    MQ_EXPECT_CODE(engine().SendBatch("b", batch), kInvalidArgument);
    MQ_EXPECT_CODE(ReceiveMany(engine(), "a", 1), kInvalidArgument);
    MQ_EXPECT_CODE(engine().Complete("a", locked.seq, locked.lock_token), kInvalidArgument);
    MQ_EXPECT_CODE(engine().Renew("a", locked.seq, locked.lock_token), kInvalidArgument);
    MQ_EXPECT_CODE(engine().Stats("a"), kInvalidArgument);
    MQ_EXPECT_CODE(engine().Peek("a"), kInvalidArgument);
    QueueConfig c;
    c.name = "c";
    MQ_EXPECT_CODE(engine().CreateQueue(c), kInvalidArgument);
    MQ_EXPECT_CODE(engine().RunMaintenance(), kInvalidArgument);
    MQ_EXPECT_CODE(engine().Close(), kInvalidArgument);
    return Status::OK();
  }));
  EXPECT_EQ(Total(engine(), "b"), 0);
  MQ_EXPECT_CODE(engine().GetQueue("c"), kQueueNotFound);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "a", locked.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  // The engine was not closed by the refused Close.
  MQ_EXPECT_OK(engine().Complete("a", locked.seq, locked.lock_token));
}

MQLITE_TCK_GRADES(TckTransactions, Spec8_Spec9_TxContextFromAnotherThreadIsInvalidArgument, "G5");
TEST_P(TckTransactions, Spec8_Spec9_TxContextFromAnotherThreadIsInvalidArgument) {
  // A TxContext is valid only on the callback's thread.
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  Status from_thread = Status::OK();
  void* handle_from_thread = &from_thread;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    std::thread t([&] {
      from_thread = tx.Send("a", Out("other thread")).status();
      handle_from_thread = tx.native_handle();
    });
    t.join();
    return Status::OK();
  }));
  MQ_EXPECT_CODE(from_thread, kInvalidArgument);
  EXPECT_EQ(handle_from_thread, nullptr);
  EXPECT_EQ(Total(engine(), "a"), 0);
}

MQLITE_TCK_GRADES(TckTransactions, Spec8_TxContextUsedAfterTheCallbackIsInvalidArgument, "G5");
TEST_P(TckTransactions, Spec8_TxContextUsedAfterTheCallbackIsInvalidArgument) {
  // "using the handle after fn returns" is refused: TxContext calls after the
  // callback return InvalidArgument, and the native handle is gone.
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  TxContext* kept = nullptr;
  MQ_ASSERT_OK(engine().Tx([&](TxContext& tx) -> Status {
    kept = &tx;
    return Status::OK();
  }));
  ASSERT_NE(kept, nullptr);
  MQ_EXPECT_CODE(kept->Send("a", Out("late")), kInvalidArgument);
  EXPECT_EQ(kept->native_handle(), nullptr);
  EXPECT_EQ(Total(engine(), "a"), 0);
}

// ---- cancellation inside a Tx (SPEC §10, §8) ------------------------------------------------

MQLITE_TCK_GRADES(TckTransactions, Spec10_Spec8_StopDuringTxRefusesNextOperationAndRollsBack, "G5");
TEST_P(TckTransactions, Spec10_Spec8_StopDuringTxRefusesNextOperationAndRollsBack) {
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  std::stop_source src;
  Status second = Status::OK();
  Status first = Status::Internal("not run");
  Status tx = engine().Tx(
      [&](TxContext& t) -> Status {
        first = t.Send("a", Out("before stop")).status();
        src.request_stop();
        second = t.Send("a", Out("after stop")).status();
        return Status::OK();  // the callback ignores the failure
      },
      StopOnRequest(src));
  MQ_EXPECT_OK(first);
  MQ_EXPECT_CODE(second, kCancelled);
  MQ_EXPECT_CODE(tx, kCancelled);
  // Everything rolled back: neither message.
  EXPECT_EQ(Total(engine(), "a"), 0);
}

MQLITE_TCK_GRADES(TckTransactions, Spec10_Spec8_StopDuringTxRollsBackTheBusinessWrite, "G5");
TEST_P(TckTransactions, Spec10_Spec8_StopDuringTxRollsBackTheBusinessWrite) {
  if (SkipUnlessBusinessHooks()) return;
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  const BusinessHooks& b = *profile().business;
  MQ_ASSERT_OK(PrepareBusiness(engine(), b));
  std::stop_source src;
  Status second = Status::OK();
  Status first = Status::Internal("not run");
  Status put = Status::Internal("not run");
  Status tx = engine().Tx(
      [&](TxContext& t) -> Status {
        put = b.put(t.native_handle(), "row", "v");
        first = t.Send("a", Out("before stop")).status();
        src.request_stop();
        second = t.Send("a", Out("after stop")).status();
        return Status::OK();  // the callback ignores the failure
      },
      StopOnRequest(src));
  MQ_EXPECT_OK(put);
  MQ_EXPECT_OK(first);
  MQ_EXPECT_CODE(second, kCancelled);
  MQ_EXPECT_CODE(tx, kCancelled);
  // Everything rolled back: neither message, nor the business write.
  EXPECT_EQ(Total(engine(), "a"), 0);
  MQ_ASSERT_OK_AND_ASSIGN(std::optional<std::string> row, GetBusiness(engine(), b, "row"));
  EXPECT_FALSE(row.has_value());
}

MQLITE_TCK_GRADES(TckTransactions, Spec10_Spec8_StopDuringTxRefusesSettleInside, "G2", "G5");
TEST_P(TckTransactions, Spec10_Spec8_StopDuringTxRefusesSettleInside) {
  // A settle after the stop is refused; the lease is untouched.
  ASSERT_NO_FATAL_FAILURE(MakeQueues(engine()));
  MQ_ASSERT_OK(SendBody(engine(), "a", "m"));
  MQ_ASSERT_OK_AND_ASSIGN(Message m, ReceiveOne(engine(), "a"));
  std::stop_source src;
  Status inner = Status::OK();
  Status tx = engine().Tx(
      [&](TxContext& t) -> Status {
        src.request_stop();
        inner = t.Complete("a", m.seq, m.lock_token);
        return Status::OK();
      },
      StopOnRequest(src));
  MQ_EXPECT_CODE(inner, kCancelled);
  MQ_EXPECT_CODE(tx, kCancelled);
  MQ_ASSERT_OK_AND_ASSIGN(Message still, Find(engine(), "a", m.seq));
  EXPECT_EQ(still.state, MessageState::kLocked);
  MQ_EXPECT_OK(engine().Complete("a", m.seq, m.lock_token));
}

}  // namespace
}  // namespace mqlite::tck
