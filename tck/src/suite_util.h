// Helpers shared by the kit's suites (tck/src/suite_*.cc): exact-status
// assertions and thin wrappers over the public Engine API. Kit-internal: not
// installed, not part of the porter's interface (that is mqlite/tck.h).
//
// Every helper takes the Engine explicitly (TckTest::engine() changes on
// Reopen(), so nothing here keeps a reference).
#ifndef MQLITE_TCK_SRC_SUITE_UTIL_H_
#define MQLITE_TCK_SRC_SUITE_UTIL_H_

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/status.h"
#include "mqlite/types.h"

namespace mqlite {

// Readable gtest output for the values the suites compare. `static`: each
// suite translation unit gets its own copy, so they cannot collide with a
// porter's own PrintTo overloads at link time.
static inline void PrintTo(StatusCode code, std::ostream* os) { *os << StatusCodeName(code); }
static inline void PrintTo(MessageState s, std::ostream* os) { *os << MessageStateName(s); }
static inline void PrintTo(const Status& s, std::ostream* os) { *os << s.ToString(); }
static inline void PrintTo(const LockToken& t, std::ostream* os) { *os << t.ToHex(); }

namespace tck::suite {

// TckTest's ManualClock starts at ManualClock's default epoch.
inline constexpr int64_t kT0 = 1'700'000'000'000;
// The default lock_duration (SPEC §2).
inline constexpr int64_t kLock = 30'000;

inline ::testing::AssertionResult IsOk(const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected OK, got " << s.ToString();
}
template <typename T>
::testing::AssertionResult IsOk(const Result<T>& r) {
  return IsOk(r.status());
}

// An exact StatusCode, never "any error".
inline ::testing::AssertionResult HasCode(const Status& s, StatusCode want) {
  if (s.code() == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected " << StatusCodeName(want) << ", got " << s.ToString();
}
template <typename T>
::testing::AssertionResult HasCode(const Result<T>& r, StatusCode want) {
  return HasCode(r.status(), want);
}

// The Status's message contains `part` (SPEC §10: an error names what it is
// about); a failure prints the whole Status.
inline ::testing::AssertionResult MessageHas(const Status& s, std::string_view part) {
  if (s.message().find(part) != std::string_view::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "the message of " << s.ToString() << " does not contain '" << part << "'";
}

// Predicate-formatters behind the MQ_* macros: a failure names the checked
// expression as written in the test and the Status it returned,
//
//   Expression: engine().Complete("jobs", m.seq, wrong)
//     Expected: LockLost
//          Got: OK
//
// `text` is the macro's #expr (the formatter's own argument texts are
// ignored: for MQ_ASSERT_OK_AND_ASSIGN they would name a temporary).
inline ::testing::AssertionResult OkFormat(const char*, const char*, const char* text,
                                           const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "Expression: " << text << "\n  Expected: OK"
                                       << "\n       Got: " << s.ToString();
}
template <typename T>
::testing::AssertionResult OkFormat(const char* a, const char* b, const char* text,
                                    const Result<T>& r) {
  return OkFormat(a, b, text, r.status());
}
inline ::testing::AssertionResult CodeFormat(const char*, const char*, const char*,
                                             const char* text, const Status& s, StatusCode want) {
  if (s.code() == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "Expression: " << text << "\n  Expected: " << StatusCodeName(want)
         << "\n       Got: " << s.ToString();
}
template <typename T>
::testing::AssertionResult CodeFormat(const char* a, const char* b, const char* c, const char* text,
                                      const Result<T>& r, StatusCode want) {
  return CodeFormat(a, b, c, text, r.status(), want);
}

// `expr` is a Status or a Result<T>; `code` a StatusCode enumerator (kLockLost).
// Each may be followed by `<< "context"` like any gtest assertion.
#define MQ_ASSERT_OK(expr) ASSERT_PRED_FORMAT2(::mqlite::tck::suite::OkFormat, #expr, (expr))
#define MQ_EXPECT_OK(expr) EXPECT_PRED_FORMAT2(::mqlite::tck::suite::OkFormat, #expr, (expr))
#define MQ_EXPECT_CODE(expr, code) \
  EXPECT_PRED_FORMAT3(::mqlite::tck::suite::CodeFormat, #expr, (expr), ::mqlite::StatusCode::code)
#define MQ_ASSERT_CODE(expr, code) \
  ASSERT_PRED_FORMAT3(::mqlite::tck::suite::CodeFormat, #expr, (expr), ::mqlite::StatusCode::code)

// `lhs = value of expr`, or a fatal failure naming `expr` and its Status.
#define MQ_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  MQ_ASSERT_OK_AND_ASSIGN_IMPL_(MQLITE_CONCAT_(mq_result_, __LINE__), lhs, expr, #expr)
#define MQ_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr, text)       \
  auto tmp = (expr);                                              \
  ASSERT_PRED_FORMAT2(::mqlite::tck::suite::OkFormat, text, tmp); \
  lhs = std::move(tmp).value()

inline std::string StatsString(const QueueStats& s) {
  std::ostringstream os;
  os << "{active=" << s.active << " locked=" << s.locked << " deferred=" << s.deferred
     << " scheduled=" << s.scheduled << " dead_lettered=" << s.dead_lettered << " total=" << s.total
     << " body_bytes=" << s.body_bytes << " oldest_claimable_age_ms=" << s.oldest_claimable_age_ms
     << "}";
  return os.str();
}

inline ::testing::AssertionResult StatsEq(const QueueStats& a, const QueueStats& b) {
  if (a.active == b.active && a.locked == b.locked && a.deferred == b.deferred &&
      a.scheduled == b.scheduled && a.dead_lettered == b.dead_lettered && a.total == b.total &&
      a.body_bytes == b.body_bytes && a.oldest_claimable_age_ms == b.oldest_claimable_age_ms) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << StatsString(a) << " != " << StatsString(b);
}

// The seq of each SendBatch slot (0 for a slot that failed, e.g. a dedup
// conflict).
inline std::vector<int64_t> SeqsOf(const std::vector<SendOutcome>& outcomes) {
  std::vector<int64_t> out;
  for (const SendOutcome& o : outcomes) out.push_back(o.seq);
  return out;
}
template <typename Sender>
Result<std::vector<int64_t>> SendBatchSeqs(Sender& e, std::string_view queue,
                                           std::span<const OutgoingMessage> batch) {
  Result<std::vector<SendOutcome>> r = e.SendBatch(queue, batch);
  if (!r.has_value()) return std::move(r).error();
  return SeqsOf(*r);
}

inline std::vector<int64_t> Seqs(const std::vector<Message>& ms) {
  std::vector<int64_t> out;
  for (const Message& m : ms) out.push_back(m.seq);
  return out;
}

// A token that differs from `t` in one byte.
inline LockToken Tampered(LockToken t) {
  t.bytes[7] ^= 0x5a;
  return t;
}

// A well-formed (non-empty) token that no claim ever issued.
inline LockToken ForeignToken(uint8_t fill = 0x5a) {
  LockToken t;
  t.bytes.fill(fill);
  return t;
}

// QueueConfig builders (`name` is filled in by CreateQueue).
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
inline QueueConfig WithMaxDeliveries(int32_t max_delivery_count) {
  QueueConfig c;
  c.max_delivery_count = max_delivery_count;
  return c;
}

// A message with `body` and, optionally, a message id (SPEC §4 dedup key).
inline OutgoingMessage Out(std::string body,
                           std::optional<std::string> message_id = std::nullopt) {
  OutgoingMessage m;
  m.body = std::move(body);
  m.message_id = std::move(message_id);
  return m;
}

// Creates queue `name` from `config` (its name overwritten).
inline Result<QueueConfig> CreateQueue(Engine& e, std::string_view name, QueueConfig config = {}) {
  config.name = std::string(name);
  return e.CreateQueue(config);
}

inline Result<int64_t> SendBody(Engine& e, std::string_view queue, std::string body) {
  return e.Send(queue, Out(std::move(body)));
}

// Sends one message; group / priority / delay / message id optional.
inline Result<int64_t> SendMsg(Engine& e, std::string_view queue, std::string body,
                               std::optional<std::string> group = std::nullopt, int priority = 0,
                               int64_t delay_ms = 0,
                               std::optional<std::string> message_id = std::nullopt) {
  OutgoingMessage m;
  m.body = std::move(body);
  m.group_id = std::move(group);
  m.priority = priority;
  m.delay_ms = delay_ms;
  m.message_id = std::move(message_id);
  return e.Send(queue, m);
}

// Receives up to `max` messages in one call.
inline Result<std::vector<Message>> ReceiveIn(Engine& e, std::string_view queue, int max,
                                              ReceiveMode mode) {
  ReceiveOptions o;
  o.max_messages = max;
  o.mode = mode;
  return e.Receive(queue, o);
}

// Receives (Peek-Lock) up to `max` messages in one call.
inline Result<std::vector<Message>> ReceiveMany(Engine& e, std::string_view queue, int max) {
  return ReceiveIn(e, queue, max, ReceiveMode::kPeekLock);
}

// Receives exactly one message (NotFound if nothing was eligible).
inline Result<Message> ReceiveOne(Engine& e, std::string_view queue,
                                  ReceiveMode mode = ReceiveMode::kPeekLock) {
  Result<std::vector<Message>> got = ReceiveIn(e, queue, 1, mode);
  if (!got.has_value()) return std::move(got).error();
  if (got->size() != 1) {
    return Status::NotFound("ReceiveOne got " + std::to_string(got->size()) + " messages");
  }
  return std::move((*got)[0]);
}

// Sends `body` to `queue`, receives it (Peek-Lock) and returns the locked
// message; Internal if Receive hands out another seq than the one sent.
inline Result<Message> SendAndReceive(Engine& e, std::string body,
                                      std::string_view queue = "jobs") {
  Result<int64_t> seq = SendBody(e, queue, std::move(body));
  if (!seq.has_value()) return seq.status();
  Result<Message> m = ReceiveOne(e, queue);
  if (m.has_value() && m->seq != *seq) {
    return Status::Internal("received seq " + std::to_string(m->seq) + ", sent " +
                            std::to_string(*seq));
  }
  return m;
}

// Dead-letters one fresh message of `queue` with Reject (reason "Test",
// description "made by the test"); returns its seq.
inline Result<int64_t> MakeDeadLetter(Engine& e, std::string body,
                                      std::string_view queue = "jobs") {
  Result<Message> m = SendAndReceive(e, std::move(body), queue);
  if (!m.has_value()) return m.status();
  Status s = e.Reject(queue, m->seq, m->lock_token, "Test", "made by the test");
  if (!s.ok()) return s;
  return m->seq;
}

inline Result<std::vector<Message>> ReceiveAttempt(Engine& e, std::string_view queue, int max,
                                                   std::string attempt_id,
                                                   ReceiveMode mode = ReceiveMode::kPeekLock) {
  ReceiveOptions o;
  o.max_messages = max;
  o.mode = mode;
  o.attempt_id = std::move(attempt_id);
  return e.Receive(queue, o);
}

// The message `seq` of `queue` as Peek sees it (NotFound if absent).
inline Result<Message> Find(Engine& e, std::string_view queue, int64_t seq) {
  PeekOptions o;
  o.from_seq = seq - 1;
  o.max_messages = 1;
  Result<std::vector<Message>> got = e.Peek(queue, o);
  if (!got.has_value()) return std::move(got).error();
  if (got->empty() || (*got)[0].seq != seq) {
    return Status::NotFound("seq " + std::to_string(seq) + " not in queue " + std::string(queue));
  }
  return std::move((*got)[0]);
}

// Every message of `queue` (optionally of one state), in seq order, paging
// through Peek.
inline Result<std::vector<Message>> PeekAllOf(Engine& e, std::string_view queue,
                                              std::optional<MessageState> state = std::nullopt) {
  std::vector<Message> all;
  PeekOptions o;
  o.state = state;
  o.max_messages = 1000;
  for (;;) {
    Result<std::vector<Message>> page = e.Peek(queue, o);
    if (!page.has_value()) return std::move(page).error();
    if (page->empty()) break;
    o.from_seq = page->back().seq;
    for (Message& m : *page) all.push_back(std::move(m));
  }
  return all;
}

inline Result<QueueStats> StatsOf(Engine& e, std::string_view queue) { return e.Stats(queue); }

// Stats(queue).total, or -1 (with a recorded failure) on error.
inline int64_t Total(Engine& e, std::string_view queue) {
  Result<QueueStats> s = e.Stats(queue);
  EXPECT_TRUE(IsOk(s));
  return s.has_value() ? s->total : -1;
}

// ---- content hashes for the integrity and crash suites (SPEC §7.5) -----------------------

// The splitmix64 finalizer: a bijective 64-bit avalanche mix.
inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// A 64-bit content hash of `body` (every byte, NULs included, and the length),
// kept OUTSIDE the engine so a delivered body can be checked against what was
// sent. Not cryptographic; strong enough to catch any corruption, truncation or
// mix-up between bodies.
inline uint64_t BodyHash(std::string_view body) {
  uint64_t h = Mix64(0x6d716c6974650001ULL ^ static_cast<uint64_t>(body.size()));
  size_t i = 0;
  auto step = [&h](uint64_t w) {
    h ^= Mix64(w + 0x9e3779b97f4a7c15ULL);
    h = ((h << 27) | (h >> 37)) * 0x9e3779b97f4a7c15ULL + 0x52dce729ULL;
  };
  for (; i + 8 <= body.size(); i += 8) {
    uint64_t w = 0;
    for (int b = 0; b < 8; ++b) {
      w |= static_cast<uint64_t>(static_cast<uint8_t>(body[i + b])) << (8 * b);
    }
    step(w);
  }
  uint64_t tail = static_cast<uint64_t>(body.size() - i) << 56;
  for (int b = 0; i + b < body.size(); ++b) {
    tail |= static_cast<uint64_t>(static_cast<uint8_t>(body[i + b])) << (8 * b);
  }
  step(tail);
  return Mix64(h);
}

// A random binary body of 0..max_len bytes from `next` (a 64-bit generator):
// sometimes empty, sometimes NUL-heavy, always binary.
template <typename Rng>
std::string RandomBody(Rng& next, size_t max_len = 4096) {
  const uint64_t shape = next() % 10;
  size_t len = shape == 0 ? 0 : static_cast<size_t>(next() % (max_len + 1));
  std::string body(len, '\0');
  for (size_t i = 0; i < len; ++i) {
    const uint64_t r = next();
    // shape 1: about half the bytes are NUL; otherwise uniform bytes.
    body[i] = (shape == 1 && (r & 0x100) != 0) ? '\0' : static_cast<char>(r & 0xff);
  }
  return body;
}

// Turns a hang into a failure in the multi-threaded suites; far above what a
// run needs, even under ASan or TSan. Not a performance budget.
inline constexpr auto kHangBound = std::chrono::seconds(120);

// Yields until `done()` holds or `bound` has passed; returns done(). For the
// hand-offs between threads (a worker has started, a waiter is parked); the
// caller asserts the result, so a hang is a failure, not a stuck test.
template <typename Done>
bool SpinUntil(Done done, std::chrono::steady_clock::duration bound = kHangBound) {
  const auto give_up = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= give_up) return done();
    std::this_thread::yield();
  }
  return true;
}

// Thread-safe collection of failures seen on worker threads, reported on the
// main thread (the first 20 kept, all counted).
class Errors {
 public:
  void Add(const std::string& e) {
    std::lock_guard<std::mutex> l(mu_);
    if (errors_.size() < 20) errors_.push_back(e);
    ++count_;
    any_.store(true);
  }
  // Lets workers stop early instead of running into the hang bound.
  bool any() const { return any_.load(); }
  // "N error(s); first:" and the kept ones, one per line.
  std::string Summary() {
    std::lock_guard<std::mutex> l(mu_);
    std::string out = std::to_string(count_) + " error(s); first:\n";
    for (const std::string& e : errors_) out += "  " + e + "\n";
    return out;
  }
  void ExpectNone() {
    const bool none = !any();
    EXPECT_TRUE(none) << Summary();
  }

 private:
  std::mutex mu_;
  std::vector<std::string> errors_;
  int count_ = 0;
  std::atomic<bool> any_{false};
};

}  // namespace tck::suite
}  // namespace mqlite

#endif  // MQLITE_TCK_SRC_SUITE_UTIL_H_
