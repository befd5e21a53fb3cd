// Typed messages: a queue of T over the engine, through a codec
// (docs/processor.md § Typed messages).
//
//   struct Order { std::string id; int qty; };       // + to_json/from_json
//   mqlite::TypedQueue<Order, mqlite::JsonCodec<Order>> orders(*engine, "orders");
//   orders.Send({"A-1", 3});
//   for (auto& got : *orders.Receive({.max_messages = 16})) {
//     Ship(got.value);
//     (void)orders.Complete(got);
//   }
//
// A codec is any type with
//   Result<std::string> Encode(const T&) const;
//   Result<T> Decode(std::string_view body) const;
// and optionally `std::string_view content_type() const`, which Send puts in
// OutgoingMessage::content_type unless the envelope sets one. JsonCodec<T>
// (mqlite/json_codec.h) is one; write your own for protobuf, msgpack, etc.
//
// A message whose body the codec cannot decode is never handed to your code
// and never crashes the consumer: it is dead-lettered with reason
// kReasonInvalidPayload and the codec's error as the description (SPEC §6),
// where an operator can read, fix and redrive it.
#ifndef MQLITE_TYPED_QUEUE_H_
#define MQLITE_TYPED_QUEUE_H_

#include <atomic>
#include <concepts>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/processor.h"
#include "mqlite/status.h"
#include "mqlite/types.h"

namespace mqlite {

template <typename C, typename T>
concept MessageCodec = requires(const C& c, const T& value, std::string_view body) {
  { c.Encode(value) } -> std::convertible_to<Result<std::string>>;
  { c.Decode(body) } -> std::convertible_to<Result<T>>;
};

// The dead_letter_reason of a message whose body did not decode.
inline constexpr std::string_view kReasonInvalidPayload = "InvalidPayload";

// A received message and its decoded value. `message` is the stored message
// (body still encoded; seq and lock_token for settling).
template <typename T>
struct Typed {
  T value;
  Message message;
};

namespace typed_internal {
// The description limit of Reject (≤ 1024 bytes), cut at a UTF-8 boundary.
std::string DeadLetterDescription(const Status& decode_error);

// The verdict for a body that did not decode.
inline HandlerVerdict InvalidPayload(const Status& decode_error) {
  return HandlerVerdict::Reject(std::string(kReasonInvalidPayload),
                                DeadLetterDescription(decode_error));
}

template <typename C>
void SetContentType(const C& codec, OutgoingMessage& m) {
  if constexpr (requires { { codec.content_type() } -> std::convertible_to<std::string_view>; }) {
    if (!m.content_type) m.content_type = std::string(codec.content_type());
  }
}
}  // namespace typed_internal

// The Processor handler for typed messages: decodes each body and calls
// `fn(value, message, ctx)`; a body that does not decode gets
// HandlerVerdict::Reject(kReasonInvalidPayload, the codec's error) without calling
// `fn` (counted in ProcessorStats::dead_lettered).
template <typename T, typename C>
  requires MessageCodec<C, T>
Handler TypedHandler(C codec,
                     std::function<Result<HandlerVerdict>(const T&, const Message&, const HandlerContext&)> fn) {
  return [codec = std::move(codec), fn = std::move(fn)](const Message& m,
                                                        const HandlerContext& ctx) -> Result<HandlerVerdict> {
    Result<T> v = codec.Decode(m.body);
    if (!v.ok()) return typed_internal::InvalidPayload(v.status());
    return fn(*v, m, ctx);
  };
}

// The same for Processor::StartTx.
template <typename T, typename C>
  requires MessageCodec<C, T>
TxHandler TypedTxHandler(
    C codec,
    std::function<Result<HandlerVerdict>(const T&, const Message&, TxContext&, const HandlerContext&)> fn) {
  return [codec = std::move(codec), fn = std::move(fn)](const Message& m, TxContext& tx,
                                                        const HandlerContext& ctx) -> Result<HandlerVerdict> {
    Result<T> v = codec.Decode(m.body);
    if (!v.ok()) return typed_internal::InvalidPayload(v.status());
    return fn(*v, m, tx, ctx);
  };
}

// A queue of T. Holds a reference to `engine` (which must outlive it) and the
// queue's name; thread-safe as the engine is (SPEC §9).
template <typename T, typename C>
  requires MessageCodec<C, T>
class TypedQueue {
 public:
  TypedQueue(Engine& engine, std::string queue, C codec = C{})
      : engine_(engine), queue_(std::move(queue)), codec_(std::move(codec)) {}

  const std::string& name() const { return queue_; }
  const C& codec() const { return codec_; }

  // Encodes `value` into `envelope.body` (the envelope's other fields —
  // group_id, delay, properties, ... — are sent as given). An encode error
  // is returned as is and nothing is sent.
  Result<int64_t> Send(const T& value, OutgoingMessage envelope = {},
                       const CallOptions& call = {}) const {
    MQLITE_RETURN_IF_ERROR(Fill(value, envelope));
    return engine_.Send(queue_, envelope, call);
  }
  // Inside Engine::Tx: commits with the transaction (SPEC §8).
  Result<int64_t> Send(TxContext& tx, const T& value, OutgoingMessage envelope = {}) const {
    MQLITE_RETURN_IF_ERROR(Fill(value, envelope));
    return tx.Send(queue_, envelope);
  }
  // One commit; every value is encoded first, so an encode error sends nothing.
  Result<std::vector<SendOutcome>> SendBatch(std::span<const T> values,
                                             const CallOptions& call = {}) const {
    std::vector<OutgoingMessage> out(values.size());
    for (size_t i = 0; i < values.size(); ++i) MQLITE_RETURN_IF_ERROR(Fill(values[i], out[i]));
    return engine_.SendBatch(queue_, out, call);
  }

  // Receive (PeekLock only: an undecodable message must stay to be
  // dead-lettered, so ReceiveAndDelete is InvalidArgument). Messages that do
  // not decode are dead-lettered (reason kReasonInvalidPayload) and left out
  // of the result, which may therefore hold fewer than were claimed — even
  // none.
  Result<std::vector<Typed<T>>> Receive(const ReceiveOptions& options = {},
                                        const CallOptions& call = {}) {
    if (options.mode != ReceiveMode::kPeekLock) {
      return Status::InvalidArgument("queue '" + queue_ +
                                     "': a typed receive needs PeekLock, so a message that does "
                                     "not decode can be dead-lettered instead of lost");
    }
    MQLITE_ASSIGN_OR_RETURN(std::vector<Message> got, engine_.Receive(queue_, options, call));
    std::vector<Typed<T>> out;
    out.reserve(got.size());
    for (Message& m : got) {
      Result<T> v = codec_.Decode(m.body);
      if (v.ok()) {
        out.push_back(Typed<T>{std::move(*v), std::move(m)});
        continue;
      }
      // A failed Reject (e.g. LockLost) leaves it to be delivered again.
      const HandlerVerdict dead = typed_internal::InvalidPayload(v.status());
      if (engine_.Reject(queue_, m.seq, m.lock_token, dead.reason, dead.description, call).ok()) {
        invalid_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    return out;
  }

  Status Complete(const Typed<T>& m, const CallOptions& call = {}) const {
    return engine_.Complete(queue_, m.message.seq, m.message.lock_token, call);
  }
  Status Abandon(const Typed<T>& m, int64_t delay_ms = 0, const CallOptions& call = {}) const {
    return engine_.Abandon(queue_, m.message.seq, m.message.lock_token, delay_ms, call);
  }
  Status Reject(const Typed<T>& m, std::string_view reason, std::string_view description = {},
                const CallOptions& call = {}) const {
    return engine_.Reject(queue_, m.message.seq, m.message.lock_token, reason, description, call);
  }
  Status Defer(const Typed<T>& m, const CallOptions& call = {}) const {
    return engine_.Defer(queue_, m.message.seq, m.message.lock_token, call);
  }

  // Messages this object's Receive dead-lettered because they did not decode.
  int64_t invalid_dead_lettered() const { return invalid_.load(std::memory_order_relaxed); }

  // A Processor handler for this queue's codec (TypedHandler).
  Handler Handle(
      std::function<Result<HandlerVerdict>(const T&, const Message&, const HandlerContext&)> fn) const {
    return TypedHandler<T>(codec_, std::move(fn));
  }
  TxHandler HandleTx(std::function<Result<HandlerVerdict>(const T&, const Message&, TxContext&,
                                                   const HandlerContext&)> fn) const {
    return TypedTxHandler<T>(codec_, std::move(fn));
  }

 private:
  Status Fill(const T& value, OutgoingMessage& m) const {
    Result<std::string> body = codec_.Encode(value);
    if (!body.ok()) return body.status();
    m.body = std::move(*body);
    typed_internal::SetContentType(codec_, m);
    return Status::OK();
  }

  Engine& engine_;
  std::string queue_;
  C codec_;
  std::atomic<int64_t> invalid_{0};
};

}  // namespace mqlite

#endif  // MQLITE_TYPED_QUEUE_H_
