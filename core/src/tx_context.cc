// Engine::Tx and TxContext (SPEC §8): the application's callback inside one
// store transaction, queue operations through a pooled TxContext.
//
// Owns: the pool of TxContexts (Engine::Impl::tx_contexts / tx_free), reused
// so a context kept past its callback is refused instead of dangling.
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine_impl.h"
#include "mqlite/engine.h"

namespace mqlite {

using internal::CheckCancelled;
using internal::QueueLabel;
using internal::ToRunOptions;

// ---- TxContext --------------------------------------------------------------------

struct TxContext::State {
  Engine::Impl* impl = nullptr;
  StoreTxn* txn = nullptr;
  const CallOptions* call = nullptr;
  std::thread::id thread;
  bool active = false;
  bool wrote = false;

  // Every TxContext operation: valid context, not cancelled, then run `op` in
  // a savepoint so a failed operation leaves no trace even if the callback
  // carries on.
  Status Run(std::string_view what, const std::function<Status(StoreTxn&)>& op) {
    if (!active || txn == nullptr || std::this_thread::get_id() != thread) {
      return Status::InvalidArgument(std::string(what) +
                                     ": TxContext used outside its Tx callback");
    }
    MQLITE_RETURN_IF_ERROR(CheckCancelled(*call, what));
    return txn->Savepoint(op);
  }

  Status Settle(std::string_view what, std::string_view queue, const SettleRequest& req) {
    return Run(what, [&](StoreTxn& t) -> Status {
      Status s = impl->SettleInTxn(t, queue, req).status();
      wrote |= s.ok();
      return s;
    });
  }
};

TxContext::TxContext(std::unique_ptr<State> state) : state_(std::move(state)) {}
TxContext::~TxContext() = default;

void* TxContext::native_handle() const {
  if (!state_->active || !state_->txn || std::this_thread::get_id() != state_->thread) {
    return nullptr;
  }
  return state_->txn->NativeHandle();
}

const std::string& TxContext::native_handle_type() const {
  return state_->impl->caps.native_handle_type;
}

Result<std::vector<SendOutcome>> TxContext::SendBatch(std::string_view queue,
                                                      std::span<const OutgoingMessage> messages) {
  std::vector<SendOutcome> seqs;
  MQLITE_RETURN_IF_ERROR(state_->Run("Tx Send", [&](StoreTxn& txn) -> Status {
    bool wrote = false;
    Status s = state_->impl->DoSend(txn, queue, messages, /*single=*/false, &seqs, &wrote);
    state_->wrote |= s.ok() && wrote;
    return s;
  }));
  return seqs;
}

Result<int64_t> TxContext::Send(std::string_view queue, const OutgoingMessage& message) {
  std::vector<SendOutcome> seqs;
  MQLITE_RETURN_IF_ERROR(state_->Run("Tx Send", [&](StoreTxn& txn) -> Status {
    bool wrote = false;
    Status s = state_->impl->DoSend(txn, queue, std::span<const OutgoingMessage>(&message, 1),
                                    /*single=*/true, &seqs, &wrote);
    state_->wrote |= s.ok() && wrote;
    return s;
  }));
  return seqs.at(0).seq;
}

Status TxContext::Complete(std::string_view queue, int64_t seq, const LockToken& token) {
  SettleRequest r = internal::MakeSettle(SettleOp::kComplete, seq, token);
  return state_->Settle("Tx Complete", queue, r);
}

Status TxContext::Abandon(std::string_view queue, int64_t seq, const LockToken& token,
                          int64_t delay_ms) {
  MQLITE_RETURN_IF_ERROR(internal::ValidateAbandonDelay(queue, seq, delay_ms));
  SettleRequest r = internal::MakeSettle(SettleOp::kAbandon, seq, token);
  r.delay_ms = delay_ms;
  return state_->Settle("Tx Abandon", queue, r);
}

Status TxContext::Reject(std::string_view queue, int64_t seq, const LockToken& token,
                         std::string_view reason, std::string_view description) {
  MQLITE_RETURN_IF_ERROR(internal::ValidateDeadLetterReason(queue, seq, reason, description));
  SettleRequest r = internal::MakeSettle(SettleOp::kReject, seq, token);
  r.reason = std::string(reason);
  r.description = std::string(description);
  return state_->Settle("Tx Reject", queue, r);
}

Status TxContext::Defer(std::string_view queue, int64_t seq, const LockToken& token) {
  SettleRequest r = internal::MakeSettle(SettleOp::kDefer, seq, token);
  return state_->Settle("Tx Defer", queue, r);
}

// ---- Tx ---------------------------------------------------------------------------------------

Status Engine::Tx(const std::function<Status(TxContext&)>& fn, const CallOptions& call) {
  Impl::Call guard(impl_.get(), call, "Tx");
  MQLITE_RETURN_IF_ERROR(guard.status());
  if (!fn) return Status::InvalidArgument("Tx: callback is empty");
  std::exception_ptr thrown;
  bool wrote = false;
  TxContext* ctx = nullptr;
  {
    std::lock_guard<std::mutex> l(impl_->tx_mu);
    if (impl_->tx_free.empty()) {
      auto state = std::make_unique<TxContext::State>();
      state->impl = impl_.get();
      impl_->tx_contexts.push_back(std::unique_ptr<TxContext>(new TxContext(std::move(state))));
      impl_->tx_free.push_back(impl_->tx_contexts.back().get());
    }
    ctx = impl_->tx_free.back();
    impl_->tx_free.pop_back();
  }
  TxContext::State& state = *ctx->state_;
  Status s = impl_->store->Run(
      TxnKind::kWrite, ToRunOptions(call, /*rerunnable=*/false), [&](StoreTxn& txn) -> Status {
        state.txn = &txn;
        state.call = &call;
        state.thread = std::this_thread::get_id();
        state.wrote = false;
        state.active = true;
        internal::tl_tx_engine = impl_.get();
        Status r;
        try {
          r = fn(*ctx);
        } catch (...) {
          thrown = std::current_exception();
          r = Status::Internal("Tx: the callback threw; everything it did was rolled back");
        }
        internal::tl_tx_engine = nullptr;
        state.active = false;
        state.txn = nullptr;
        state.call = nullptr;
        if (r.ok()) r = txn.CheckNativeTxnOpen();
        // SPEC §10: cancellation observed before commit rolls everything back.
        if (r.ok()) r = CheckCancelled(call, "Tx");
        wrote = state.wrote;
        return r;
      });
  {
    std::lock_guard<std::mutex> l(impl_->tx_mu);
    impl_->tx_free.push_back(ctx);
  }
  if (thrown) std::rethrow_exception(thrown);
  if (s.ok() && wrote) impl_->Wake();
  return s;
}

}  // namespace mqlite
