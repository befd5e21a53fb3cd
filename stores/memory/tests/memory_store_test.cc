// Tests of the memory store itself: exclusivity, reopen, byte-exact fields,
// the undo log (a failed transaction or savepoint leaves every container —
// rows, indexes, counters, records, application tables — exactly as it was),
// the native handle, reader/writer waiting with cancellation, and the SPEC §11
// pins (counted index steps do not grow with the backlog or a blocked group).
// Behaviour shared with every store is the kit's job (tck_memory_test.cc).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "layout.h"
#include "mqlite/engine.h"
#include "mqlite/memory.h"
#include "suite_util.h"  // tck/src: the kit's assertion helpers

namespace mqlite {
namespace {

using memory_internal::Data;

using tck::suite::kT0;

// ---- Helpers -----------------------------------------------------------------

std::unique_ptr<Engine> OpenEngine(const std::shared_ptr<MemoryDatabase>& db, Clock* clock) {
  auto store = OpenMemoryStore(db);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return nullptr;
  EngineOptions eo;
  eo.clock = clock;
  eo.background_maintenance = false;
  auto e = Engine::Open(std::move(*store), eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

std::string Hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}
std::string Opt(const std::optional<std::string>& s) { return s ? "'" + Hex(*s) + "'" : "null"; }

// Every container of the database, one line per entry (the id/seq counters
// and the probe excepted: they are never rolled back).
std::vector<std::string> Snapshot(const Data& d) {
  std::vector<std::string> out;
  auto line = [&](auto&&... parts) {
    std::ostringstream o;
    ((o << parts << ' '), ...);
    out.push_back(o.str());
  };
  for (const auto& [id, q] : d.queues) {
    line("queue", id, q.config.name, q.config.lock_duration_ms, q.config.max_delivery_count,
         q.config.default_ttl_ms, q.config.dead_letter_on_expire, q.config.dedup_window_ms,
         static_cast<int>(q.config.ordering), q.config.dlq_max_age_ms, q.config.dlq_max_count,
         q.config.dlq_max_bytes, q.config.max_message_bytes, q.created_at);
    for (int s = 0; s < memory_internal::kStates; ++s) line("  count", s, q.count[s], q.bytes[s]);
  }
  for (const auto& [name, id] : d.queue_names) line("name", name, id);
  for (const auto& [seq, r] : d.messages) {
    std::string props;
    for (const auto& [k, v] : r.payload->properties) props += Hex(k) + "=" + Hex(v) + ",";
    line("msg", seq, r.queue_id, static_cast<int>(r.state), r.is_head, r.priority, Opt(r.group_key),
         r.enqueued_at, r.visible_at, r.expires_at, r.delivery_count, r.locked_until,
         r.token.ToHex(), r.dead_lettered_at, Opt(r.dead_letter_reason),
         Opt(r.dead_letter_description), Hex(r.payload->body), Opt(r.payload->message_id),
         Opt(r.payload->group_id), Opt(r.payload->subject), Opt(r.payload->correlation_id),
         Opt(r.payload->content_type), props);
  }
  auto key3 = [&](const char* name, const std::set<memory_internal::Key3>& s) {
    for (const auto& [a, b, c] : s) line(name, a, b, c);
  };
  key3("claim", d.claim);
  key3("claim_age", d.claim_age);
  for (const auto& [q, g, s] : d.group) line("group", q, Hex(g), s);
  key3("due", d.due);
  key3("lease", d.lease);
  key3("ttl", d.ttl);
  key3("dlq", d.dlq);
  key3("state", d.by_state);
  for (const auto& [k, r] : d.dedup) {
    line("dedup", k.first, Hex(k.second), r.seq, Hex(r.body_hash), r.expires_at);
  }
  for (const auto& [e, q, k] : d.dedup_expiry) line("dedup_exp", e, q, Hex(k));
  for (const auto& [k, e] : d.receipts) line("receipt", Hex(k), e);
  for (const auto& [e, k] : d.receipt_expiry) line("receipt_exp", e, Hex(k));
  for (const auto& [k, a] : d.attempts) {
    line("attempt", Hex(k), a.queue_id, static_cast<int>(a.mode), Hex(a.payload), a.expires_at);
  }
  for (const auto& [e, k] : d.attempt_expiry) line("attempt_exp", e, Hex(k));
  for (const auto& [k, v] : d.business) line("business", Hex(k.first), Hex(k.second), Hex(v));
  return out;
}

::testing::AssertionResult SameSnapshot(const std::vector<std::string>& want,
                                        const std::vector<std::string>& got) {
  if (want == got) return ::testing::AssertionSuccess();
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    std::string w = i < want.size() ? want[i] : "<none>";
    std::string g = i < got.size() ? got[i] : "<none>";
    if (w != g) {
      return ::testing::AssertionFailure()
             << "first difference at line " << i << ":\n  before: " << w << "\n  after:  " << g;
    }
  }
  return ::testing::AssertionFailure() << "snapshots differ";
}

// Recomputes every index and counter from the rows alone and compares: the
// indexes are a pure function of the rows, and headship is the lowest live
// seq of each group.
::testing::AssertionResult IndexesConsistent(const Data& d) {
  Data fresh;
  std::map<std::pair<int64_t, std::string>, int64_t> first_live;
  for (const auto& [seq, r] : d.messages) {
    if (r.group_key && r.state != MessageState::kDeadLettered) {
      first_live.emplace(std::make_pair(r.queue_id, *r.group_key), seq);
    }
  }
  for (const auto& [seq, r] : d.messages) {
    const bool live = r.state != MessageState::kDeadLettered;
    const bool head =
        live && (!r.group_key || first_live.at(std::make_pair(r.queue_id, *r.group_key)) == seq);
    if (r.is_head != head) {
      return ::testing::AssertionFailure() << "seq " << seq << " is_head " << r.is_head;
    }
    const int st = static_cast<int>(r.state);
    if (r.state == MessageState::kActive && head) {
      fresh.claim.insert({r.queue_id, -r.priority, seq});
      fresh.claim_age.insert({r.queue_id, r.enqueued_at, seq});
    }
    if (r.group_key && live) fresh.group.insert({r.queue_id, *r.group_key, seq});
    if (r.state == MessageState::kScheduled) fresh.due.insert({r.queue_id, r.visible_at, seq});
    if (r.state == MessageState::kLocked) fresh.lease.insert({r.queue_id, r.locked_until, seq});
    if (r.expires_at > 0 &&
        (r.state == MessageState::kActive || r.state == MessageState::kDeferred ||
         r.state == MessageState::kScheduled)) {
      fresh.ttl.insert({r.queue_id, r.expires_at, seq});
    }
    if (!live) fresh.dlq.insert({r.queue_id, r.dead_lettered_at, seq});
    fresh.by_state.insert({r.queue_id, st, seq});
    auto& q = fresh.queues[r.queue_id];
    q.count[st] += 1;
    q.bytes[st] += r.body_size();
  }
  if (fresh.claim != d.claim) return ::testing::AssertionFailure() << "claim index";
  if (fresh.claim_age != d.claim_age) return ::testing::AssertionFailure() << "claim_age index";
  if (fresh.group != d.group) return ::testing::AssertionFailure() << "group index";
  if (fresh.due != d.due) return ::testing::AssertionFailure() << "due index";
  if (fresh.lease != d.lease) return ::testing::AssertionFailure() << "lease index";
  if (fresh.ttl != d.ttl) return ::testing::AssertionFailure() << "ttl index";
  if (fresh.dlq != d.dlq) return ::testing::AssertionFailure() << "dlq index";
  if (fresh.by_state != d.by_state) return ::testing::AssertionFailure() << "state index";
  for (const auto& [id, q] : d.queues) {
    auto it = fresh.queues.find(id);
    std::array<int64_t, memory_internal::kStates> zero{};
    if ((it == fresh.queues.end() ? zero : it->second.count) != q.count ||
        (it == fresh.queues.end() ? zero : it->second.bytes) != q.bytes) {
      return ::testing::AssertionFailure() << "counters of queue " << id;
    }
  }
  for (const auto& [k, r] : d.dedup) {
    if (!d.dedup_expiry.count({r.expires_at, k.first, k.second})) {
      return ::testing::AssertionFailure() << "dedup expiry index";
    }
  }
  if (d.dedup.size() != d.dedup_expiry.size() || d.receipts.size() != d.receipt_expiry.size() ||
      d.attempts.size() != d.attempt_expiry.size()) {
    return ::testing::AssertionFailure() << "record expiry index sizes";
  }
  return ::testing::AssertionSuccess();
}

// Fails every commit while `poison` is set: the body runs to completion, then
// the store must roll all of it back.
class PoisonStore final : public StoreWrapper {
 public:
  explicit PoisonStore(std::unique_ptr<Store> target) : StoreWrapper(std::move(target)) {}
  Status Run(TxnKind kind, const RunOptions& options,
             const std::function<Status(StoreTxn&)>& body) override {
    return StoreWrapper::Run(kind, options, [&](StoreTxn& txn) -> Status {
      Status s = body(txn);
      if (s.ok() && poison && kind == TxnKind::kWrite) return Status::Internal("poisoned commit");
      return s;
    });
  }
  bool poison = false;
};

// ---- Open, exclusivity, capabilities ------------------------------------------

TEST(MemoryStore, CapabilitiesDescribeAnExclusiveStoreWithoutCrashModel) {
  auto store = OpenMemoryStore(NewMemoryDatabase());
  MQ_ASSERT_OK(store);
  StoreCapabilities c = (*store)->Capabilities();
  EXPECT_TRUE(c.exclusive);
  EXPECT_EQ(c.native_handle_type, "mqlite::MemoryTxn");
  EXPECT_EQ(c.crash_model, "none");
  EXPECT_EQ(c.name, "memory");
}

// spec.md §9: the maintenance lock and the engine registry exist only in
// shared mode. Exclusive: Unimplemented, and the engine maintains every queue
// and opens whatever its defaults.
TEST(MemoryStore, MaintenanceLockAndEngineRegistryOnlyInSharedMode) {
  auto db = NewMemoryDatabase();
  {
    auto store = OpenMemoryStore(db);
    MQ_ASSERT_OK(store);
    StoreCapabilities c = (*store)->Capabilities();
    EXPECT_FALSE(c.maintenance_lock);
    EXPECT_FALSE(c.engine_registry);
    MQ_EXPECT_CODE((*store)->TryLockMaintenance(1), kUnimplemented);
    MQ_EXPECT_CODE((*store)->RegisterEngine(EngineDefaults{}), kUnimplemented);
  }
  ManualClock clock(kT0);
  {
    auto e = OpenEngine(db, &clock);
    ASSERT_TRUE(e);
    MQ_ASSERT_OK(e->CreateQueue({.name = "q"}));
    auto pass = e->RunMaintenance();
    MQ_ASSERT_OK(pass);
    EXPECT_EQ(pass->queues_skipped, 0);
  }
  auto shared = OpenMemoryStore(db, {.shared = true});
  MQ_ASSERT_OK(shared);
  EXPECT_TRUE((*shared)->Capabilities().maintenance_lock);
  EXPECT_TRUE((*shared)->Capabilities().engine_registry);
  auto lock = (*shared)->TryLockMaintenance(7);
  MQ_ASSERT_OK(lock);
  ASSERT_NE(*lock, nullptr);
  auto busy = (*shared)->TryLockMaintenance(7);
  MQ_ASSERT_OK(busy);
  EXPECT_EQ(*busy, nullptr) << "the holder's own store must not get it twice either";
  auto other = (*shared)->TryLockMaintenance(8);
  MQ_ASSERT_OK(other);
  EXPECT_NE(*other, nullptr) << "the lock is per queue";
  EngineDefaults a;
  a.dlq_retention.max_age_ms = 1000;
  EngineDefaults b = a;
  b.dlq_retention.max_age_ms = 2000;
  auto reg = (*shared)->RegisterEngine(a);
  MQ_ASSERT_OK(reg);
  auto refused = (*shared)->RegisterEngine(b);
  MQ_EXPECT_CODE(refused, kInvalidArgument);
  // A lock or registration may outlive its store (the database stays alive).
  shared->reset();
  lock->reset();
  reg->reset();
  auto again = OpenMemoryStore(db, {.shared = true});
  MQ_ASSERT_OK(again);
  auto relock = (*again)->TryLockMaintenance(7);
  MQ_ASSERT_OK(relock);
  EXPECT_NE(*relock, nullptr) << "a released maintenance lock stayed taken";
  MQ_ASSERT_OK((*again)->RegisterEngine(b));
}

// A shared store that advertises the maintenance lock and the engine
// registry but answers both with a given error.
class FailingSharedOpsStore final : public StoreWrapper {
 public:
  FailingSharedOpsStore(std::unique_ptr<Store> target, Status lock, Status reg)
      : StoreWrapper(std::move(target)), lock_(std::move(lock)), reg_(std::move(reg)) {}
  Result<std::unique_ptr<MaintenanceLock>> TryLockMaintenance(int64_t) override { return lock_; }
  Result<std::unique_ptr<EngineRegistration>> RegisterEngine(const EngineDefaults&) override {
    return reg_;
  }

 private:
  Status lock_, reg_;
};

// spec.md §9 in the engine: Unimplemented from an advertised maintenance
// lock or registry means "not offered" (maintain anyway, open anyway); any
// other error fails the pass (naming the queue) or the open.
TEST(MemoryStore, EngineTreatsUnimplementedSharedOpsAsAbsentAndFailsOnOtherErrors) {
  auto db = NewMemoryDatabase();
  ManualClock clock(kT0);
  EngineOptions eo;
  eo.clock = &clock;
  eo.background_maintenance = false;
  auto open = [&](Status lock, Status reg) {
    auto store = OpenMemoryStore(db, {.shared = true});
    EXPECT_TRUE(store.ok());
    return Engine::Open(std::make_unique<FailingSharedOpsStore>(std::move(*store), lock, reg), eo);
  };
  auto e = open(Status::Unimplemented("no lock"), Status::Unimplemented("no registry"));
  MQ_ASSERT_OK(e);
  MQ_ASSERT_OK((*e)->CreateQueue({.name = "q"}));
  MQ_ASSERT_OK((*e)->Send("q", {.body = "later", .delay_ms = 1000}));
  clock.Advance(1000);
  auto pass = (*e)->RunMaintenance();
  MQ_ASSERT_OK(pass);
  EXPECT_EQ(pass->promoted, 1);
  EXPECT_EQ(pass->queues_skipped, 0);

  MQ_EXPECT_CODE(open(Status::Unimplemented("none"), Status::Unavailable("registry down")),
                 kUnavailable);
  auto flaky = open(Status::Unavailable("lock service down"), Status::Unimplemented("none"));
  MQ_ASSERT_OK(flaky);
  auto failed = (*flaky)->RunMaintenance();
  MQ_EXPECT_CODE(failed, kUnavailable);
  EXPECT_NE(failed.status().message().find("'q'"), std::string::npos) << failed.status().ToString();
}

// SPEC §9: one store per database at a time; a refused open touches nothing.
TEST(MemoryStore, SecondOpenIsDbLockedUntilTheFirstCloses) {
  auto db = NewMemoryDatabase();
  auto first = OpenMemoryStore(db);
  MQ_ASSERT_OK(first);
  MQ_EXPECT_CODE(OpenMemoryStore(db), kDbLocked);
  // Another database is independent.
  MQ_ASSERT_OK(OpenMemoryStore(NewMemoryDatabase()));
  first->reset();
  MQ_ASSERT_OK(OpenMemoryStore(db));
  MQ_EXPECT_CODE(OpenMemoryStore(nullptr), kInvalidArgument);
}

// SPEC §3 G1: strictly increasing, never reused — across deletion of the
// newest message, a reopen, and a rolled-back transaction.
TEST(MemoryStore, SeqsNeverReusedAcrossDeleteReopenAndRollback) {
  auto db = NewMemoryDatabase();
  ManualClock clock(kT0);
  auto e = OpenEngine(db, &clock);
  ASSERT_TRUE(e);
  MQ_ASSERT_OK(e->CreateQueue({.name = "q"}));
  MQ_ASSERT_OK(e->Send("q", {.body = "a"}));
  auto last = e->Send("q", {.body = "b"});
  MQ_ASSERT_OK(last);
  auto got = e->Receive("q", {.max_messages = 2});
  MQ_ASSERT_OK(got);
  for (const Message& m : *got) MQ_ASSERT_OK(e->Complete("q", m.seq, m.lock_token));
  int64_t rolled_back = 0;
  Status tx = e->Tx([&](TxContext& ctx) -> Status {
    auto s = ctx.Send("q", {.body = "never"});
    if (!s.ok()) return s.status();
    rolled_back = *s;
    return Status::Cancelled("roll it back");
  });
  EXPECT_EQ(tx.code(), StatusCode::kCancelled);
  EXPECT_GT(rolled_back, *last);
  ASSERT_TRUE(e->Close().ok());
  e = OpenEngine(db, &clock);
  ASSERT_TRUE(e);
  auto next = e->Send("q", {.body = "c"});
  MQ_ASSERT_OK(next);
  EXPECT_GT(*next, rolled_back);
  auto all = e->Peek("q");
  MQ_ASSERT_OK(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].body, "c");
}

// SPEC §3: NUL bytes, empty vs absent, properties — through send, peek,
// receive, and a reopen.
TEST(MemoryStore, FieldsRoundTripByteExact) {
  auto db = NewMemoryDatabase();
  ManualClock clock(kT0);
  auto e = OpenEngine(db, &clock);
  ASSERT_TRUE(e);
  MQ_ASSERT_OK(e->CreateQueue({.name = "q"}));
  OutgoingMessage m;
  m.body = std::string("\0a\0\xff", 4);
  m.message_id = "";
  m.group_id = std::string("g\0", 2);
  m.subject = std::string("\0", 1);
  m.content_type = "";
  m.properties = {{"k", std::string("v\0w", 3)}, {"empty", ""}};
  m.priority = 7;
  MQ_ASSERT_OK(e->Send("q", m));
  ASSERT_TRUE(e->Close().ok());
  e = OpenEngine(db, &clock);
  ASSERT_TRUE(e);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Message> got;
    if (pass == 0) {
      auto p = e->Peek("q");
      MQ_ASSERT_OK(p);
      got = *p;
    } else {
      auto r = e->Receive("q");
      MQ_ASSERT_OK(r);
      got = *r;
    }
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].body, m.body);
    EXPECT_EQ(got[0].message_id, std::optional<std::string>(""));
    EXPECT_EQ(got[0].group_id, m.group_id);
    EXPECT_EQ(got[0].subject, m.subject);
    EXPECT_EQ(got[0].correlation_id, std::nullopt);
    EXPECT_EQ(got[0].content_type, std::optional<std::string>(""));
    EXPECT_EQ(got[0].properties, m.properties);
    EXPECT_EQ(got[0].priority, 7);
  }
}

// ---- The undo log -----------------------------------------------------------

// Drives a random workload through the engine. Before each operation a
// poisoned copy of it runs first — the body completes, the commit is refused
// — and the database must be exactly as before; then the operation runs for
// real and every index must agree with the rows.
TEST(MemoryStore, EveryFailedTransactionLeavesNoTrace) {
  auto db = NewMemoryDatabase();
  ManualClock clock(kT0);
  auto opened = OpenMemoryStore(db);
  MQ_ASSERT_OK(opened);
  auto poison_owner = std::make_unique<PoisonStore>(std::move(*opened));
  PoisonStore* poison = poison_owner.get();
  EngineOptions eo;
  eo.clock = &clock;
  eo.background_maintenance = false;
  eo.dlq_max_count = 4;
  auto opened_engine = Engine::Open(std::move(poison_owner), eo);
  MQ_ASSERT_OK(opened_engine);
  std::unique_ptr<Engine> e = std::move(*opened_engine);

  const std::vector<QueueConfig> queues = {
      {.name = "std", .max_delivery_count = 2, .dedup_window_ms = 60'000},
      {.name = "gf",
       .max_delivery_count = 3,
       .default_ttl_ms = 90'000,
       .dead_letter_on_expire = false,
       .ordering = Ordering::kGroupFifo},
      {.name = "sf", .ordering = Ordering::kStrictFifo},
  };
  for (const QueueConfig& c : queues) MQ_ASSERT_OK(e->CreateQueue(c));

  std::mt19937_64 rng(20240611);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  std::vector<std::pair<std::string, Message>> held;  // locked handles
  int poisoned_ops = 0;

  auto op = [&](int kind, uint64_t seed) {
    std::mt19937_64 r(seed);  // the same arguments for the poisoned and the real run
    auto p = [&](int n) { return static_cast<int>(r() % static_cast<uint64_t>(n)); };
    const std::string q = queues[p(3)].name;
    switch (kind) {
      case 0: {  // send a batch
        std::vector<OutgoingMessage> batch(1 + p(3));
        for (auto& m : batch) {
          m.body = "body" + std::to_string(p(4));
          if (q != "std" || p(2)) m.group_id = std::string(1, static_cast<char>('A' + p(2)));
          if (q == "std" && p(2)) m.message_id = "id" + std::to_string(p(3));
          m.priority = p(10);
          if (p(4) == 0) m.delay_ms = 10'000;
          if (p(4) == 0) m.ttl_ms = 20'000;
        }
        (void)e->SendBatch(q, batch);
        break;
      }
      case 1: {  // receive
        ReceiveOptions o;
        o.max_messages = 1 + p(3);
        o.mode = p(4) ? ReceiveMode::kPeekLock : ReceiveMode::kReceiveAndDelete;
        if (p(3) == 0) o.attempt_id = "at" + std::to_string(p(2));
        auto got = e->Receive(q, o);
        if (got.ok() && o.mode == ReceiveMode::kPeekLock && !poison->poison) {
          for (const Message& m : *got) held.emplace_back(q, m);
        }
        break;
      }
      case 2: {  // settle a held message
        if (held.empty()) break;
        const size_t i = static_cast<size_t>(p(static_cast<int>(held.size())));
        const auto& [hq, m] = held[i];
        switch (p(5)) {
          case 0:
            (void)e->Complete(hq, m.seq, m.lock_token);
            break;
          case 1:
            (void)e->Abandon(hq, m.seq, m.lock_token, p(2) ? 0 : 5'000);
            break;
          case 2:
            (void)e->Reject(hq, m.seq, m.lock_token, "bad", "why");
            break;
          case 3:
            (void)e->Defer(hq, m.seq, m.lock_token);
            break;
          case 4:
            (void)e->Renew(hq, m.seq, m.lock_token);
            break;
        }
        break;
      }
      case 3: {  // maintenance after time passes
        if (!poison->poison) clock.Advance(std::vector<int64_t>{1'000, 15'000, 40'000}[p(3)]);
        (void)e->RunMaintenance();
        break;
      }
      case 4: {  // DLQ and deferred
        const std::string target = queues[p(3)].name;
        if (p(2)) {
          (void)e->Redrive(q, {.target_queue = target, .max_messages = p(3)});
        } else {
          (void)e->Purge(q, {.max_messages = p(2)});
        }
        auto deferred = e->Peek(q, {.state = MessageState::kDeferred, .max_messages = 2});
        if (deferred.ok() && !deferred->empty()) {
          std::vector<int64_t> seqs;
          for (const Message& m : *deferred) seqs.push_back(m.seq);
          auto got = e->ReceiveDeferred(q, seqs);
          if (got.ok() && !poison->poison) {
            for (const Message& m : *got) held.emplace_back(q, m);
          }
        }
        break;
      }
      case 5: {  // a Tx mixing business writes, sends and settles
        (void)e->Tx([&](TxContext& ctx) -> Status {
          auto h = MemoryHandle(ctx);
          if (!h.ok()) return h.status();
          MQLITE_RETURN_IF_ERROR((*h)->Put("orders", "o" + std::to_string(p(3)), "v"));
          if (p(2)) MQLITE_RETURN_IF_ERROR((*h)->Delete("orders", "o" + std::to_string(p(3))));
          (void)ctx.Send(q, {.body = "tx", .group_id = std::string("A")});
          if (!held.empty()) {
            const auto& [hq, m] = held[static_cast<size_t>(p(static_cast<int>(held.size())))];
            (void)ctx.Complete(hq, m.seq, m.lock_token);
          }
          return Status::OK();
        });
        break;
      }
      case 6: {  // cancel a scheduled message
        auto sched = e->Peek(q, {.state = MessageState::kScheduled, .max_messages = 1});
        if (sched.ok() && !sched->empty()) (void)e->Cancel(q, (*sched)[0].seq);
        break;
      }
      case 7: {  // delete and recreate a queue (rarely)
        if (p(4) == 0) {
          (void)e->DeleteQueue(q);
          for (const QueueConfig& c : queues) {
            if (c.name == q) (void)e->CreateQueue(c);
          }
        }
        break;
      }
    }
  };

  for (int step = 0; step < 600; ++step) {
    const int kind = pick(8);
    const uint64_t seed = rng();
    const auto before = Snapshot(db->data);
    poison->poison = true;
    op(kind, seed);
    poison->poison = false;
    ASSERT_TRUE(SameSnapshot(before, Snapshot(db->data))) << "step " << step << " op " << kind;
    ++poisoned_ops;
    op(kind, seed);
    ASSERT_TRUE(IndexesConsistent(db->data)) << "step " << step << " op " << kind;
    if (held.size() > 30) held.erase(held.begin(), held.begin() + 10);
  }
  EXPECT_GT(db->data.messages.size() + db->data.business.size(), 0u);
  EXPECT_EQ(poisoned_ops, 600);
}

// A savepoint that fails is undone; the rest of its transaction commits.
TEST(MemoryStore, FailedSavepointIsUndoneAndTheTransactionGoesOn) {
  auto db = NewMemoryDatabase();
  auto store = OpenMemoryStore(db);
  MQ_ASSERT_OK(store);
  QueueRecord q;
  Status s = (*store)->Run(TxnKind::kWrite, {}, [&](StoreTxn& txn) -> Status {
    bool created = false;
    MQLITE_ASSIGN_OR_RETURN(q, txn.UpsertQueue({.name = "q"}, kT0, &created));
    OutgoingMessage m{.body = "kept", .group_id = std::string("g")};
    EnqueueItem item{&m, std::string("g"), kT0, kT0, 0, MessageState::kActive};
    MQLITE_RETURN_IF_ERROR(txn.Enqueue(q, std::span<const EnqueueItem>(&item, 1)).status());
    const auto before = Snapshot(db->data);
    Status inner = txn.Savepoint([&](StoreTxn& t) -> Status {
      OutgoingMessage m2{.body = "undone", .group_id = std::string("g")};
      EnqueueItem item2{&m2, std::string("g"), kT0, kT0, 0, MessageState::kActive};
      MQLITE_RETURN_IF_ERROR(t.Enqueue(q, std::span<const EnqueueItem>(&item2, 1)).status());
      std::vector<LockToken> tokens(1);
      tokens[0].bytes[0] = 1;
      ClaimRequest req{kT0, 1, ReceiveMode::kPeekLock, kT0 + 1000, tokens};
      MQLITE_RETURN_IF_ERROR(t.Claim(q, req).status());
      MQLITE_RETURN_IF_ERROR(t.PutReceipt("r", kT0 + 5));
      MQLITE_RETURN_IF_ERROR(t.PutDedup(q, "d", {1, std::string(32, 'x'), kT0 + 5}));
      return Status::NotFound("inner failure");
    });
    EXPECT_EQ(inner.code(), StatusCode::kNotFound);
    EXPECT_TRUE(SameSnapshot(before, Snapshot(db->data)));
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(db->data.messages.size(), 1u);
  EXPECT_EQ(db->data.messages.begin()->second.payload->body, "kept");
  EXPECT_TRUE(db->data.receipts.empty());
  EXPECT_TRUE(IndexesConsistent(db->data));
}

// An exception thrown through Run rolls back and releases the writer.
TEST(MemoryStore, ExceptionThroughRunRollsBackAndReleases) {
  auto db = NewMemoryDatabase();
  auto store = OpenMemoryStore(db);
  MQ_ASSERT_OK(store);
  EXPECT_THROW((void)(*store)->Run(TxnKind::kWrite, {},
                                   [&](StoreTxn& txn) -> Status {
                                     bool created = false;
                                     (void)txn.UpsertQueue({.name = "q"}, kT0, &created);
                                     throw std::runtime_error("boom");
                                   }),
               std::runtime_error);
  EXPECT_TRUE(db->data.queues.empty());
  EXPECT_TRUE(db->data.queue_names.empty());
  Status s = (*store)->Run(
      TxnKind::kWrite,
      RunOptions{.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5)},
      [](StoreTxn&) { return Status::OK(); });
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// ---- Headship -----------------------------------------------------------------

// Two members of one group expire in one maintenance pass: headship is read
// from the live row, so the third member becomes claimable (the SQLite
// store's stale-copy bug, docs/sqlite-store.md).
TEST(MemoryStore, TwoGroupMembersExpiringInOnePassHandHeadshipOn) {
  auto db = NewMemoryDatabase();
  ManualClock clock(kT0);
  auto e = OpenEngine(db, &clock);
  ASSERT_TRUE(e);
  MQ_ASSERT_OK(e->CreateQueue(
      {.name = "q", .dead_letter_on_expire = false, .ordering = Ordering::kGroupFifo}));
  MQ_ASSERT_OK(e->Send("q", {.body = "a", .group_id = std::string("g"), .ttl_ms = 10'000}));
  MQ_ASSERT_OK(e->Send("q", {.body = "b", .group_id = std::string("g"), .ttl_ms = 10'000}));
  MQ_ASSERT_OK(e->Send("q", {.body = "c", .group_id = std::string("g")}));
  clock.Advance(11'000);
  auto report = e->RunMaintenance();
  MQ_ASSERT_OK(report);
  EXPECT_EQ(report->expired, 2);
  auto got = e->Receive("q");
  MQ_ASSERT_OK(got);
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].body, "c");
  EXPECT_TRUE(IndexesConsistent(db->data));
}

// ---- The native handle (SPEC §8) ---------------------------------------------

TEST(MemoryStore, MemoryHandleTablesCommitAndRollBackWithTheTx) {
  auto db = NewMemoryDatabase();
  ManualClock clock(kT0);
  auto e = OpenEngine(db, &clock);
  ASSERT_TRUE(e);
  MQ_ASSERT_OK(e->CreateQueue({.name = "q"}));
  const std::string key("k\0y", 3);
  MemoryTxn* kept = nullptr;
  Status s = e->Tx([&](TxContext& ctx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MemoryTxn * h, MemoryHandle(ctx));
    kept = h;
    EXPECT_EQ(h->Put("", "k", "v").code(), StatusCode::kInvalidArgument);
    MQLITE_RETURN_IF_ERROR(h->Put("t", key, ""));
    MQLITE_RETURN_IF_ERROR(h->Put("t", "gone", "x"));
    MQLITE_RETURN_IF_ERROR(h->Delete("t", "gone"));
    MQLITE_RETURN_IF_ERROR(h->Delete("t", "never-there"));
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> v, h->Get("t", key));
    EXPECT_EQ(v, std::optional<std::string>(""));  // present and empty, not absent
    return ctx.Send("q", {.body = "with-row"}).status();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  // The handle is refused after its callback, not dangling.
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->Put("t", "late", "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kept->Get("t", key).status().code(), StatusCode::kInvalidArgument);

  // A failing Tx rolls back its table writes together with its send.
  s = e->Tx([&](TxContext& ctx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MemoryTxn * h, MemoryHandle(ctx));
    MQLITE_RETURN_IF_ERROR(h->Put("t", key, "overwritten"));
    MQLITE_RETURN_IF_ERROR(h->Put("t", "new", "x"));
    MQLITE_RETURN_IF_ERROR(ctx.Send("q", {.body = "rolled-back"}).status());
    return Status::Cancelled("no");
  });
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  ASSERT_TRUE(e->Close().ok());
  e = OpenEngine(db, &clock);
  ASSERT_TRUE(e);
  s = e->Tx([&](TxContext& ctx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MemoryTxn * h, MemoryHandle(ctx));
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> v, h->Get("t", key));
    EXPECT_EQ(v, std::optional<std::string>(""));
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> n, h->Get("t", "new"));
    EXPECT_EQ(n, std::nullopt);
    MQLITE_ASSIGN_OR_RETURN(std::optional<std::string> g, h->Get("t", "gone"));
    EXPECT_EQ(g, std::nullopt);
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto all = e->Peek("q");
  MQ_ASSERT_OK(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].body, "with-row");
}

// ---- Concurrency (SPEC §9, §10) ----------------------------------------------

// A caller waiting for the writer gives up promptly with Cancelled, having
// done nothing, on its deadline or its stop token.
TEST(MemoryStore, WaitingForTheWriterHonoursDeadlineAndStopToken) {
  auto db = NewMemoryDatabase();
  auto opened = OpenMemoryStore(db);
  MQ_ASSERT_OK(opened);
  Store* store = opened->get();
  std::promise<void> inside, leave;
  std::shared_future<void> leave_f = leave.get_future().share();
  std::thread holder([&] {
    (void)store->Run(TxnKind::kWrite, {}, [&](StoreTxn&) {
      inside.set_value();
      leave_f.wait();
      return Status::OK();
    });
  });
  inside.get_future().wait();
  std::atomic<bool> ran{false};
  auto body = [&](StoreTxn&) {
    ran = true;
    return Status::OK();
  };
  const auto t0 = std::chrono::steady_clock::now();
  Status s =
      store->Run(TxnKind::kWrite, RunOptions{.deadline = t0 + std::chrono::milliseconds(50)}, body);
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  s = store->Run(TxnKind::kRead, RunOptions{.deadline = t0 + std::chrono::milliseconds(50)}, body);
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    stop.request_stop();
  });
  s = store->Run(TxnKind::kWrite, RunOptions{.stop = stop.get_token()}, body);
  stopper.join();
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_FALSE(ran.load());
  leave.set_value();
  holder.join();
  s = store->Run(TxnKind::kWrite, {}, body);
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(ran.load());
}

// Readers share the store; a read transaction refuses writes.
TEST(MemoryStore, ReadersShareAndCannotWrite) {
  auto db = NewMemoryDatabase();
  auto opened = OpenMemoryStore(db);
  MQ_ASSERT_OK(opened);
  Store* store = opened->get();
  std::promise<void> second_in;
  std::shared_future<void> second_in_f = second_in.get_future().share();
  std::thread first([&] {
    Status s = store->Run(TxnKind::kRead, {}, [&](StoreTxn&) {
      // Waits for a second reader to get in while this one is still inside.
      return second_in_f.wait_for(std::chrono::seconds(10)) == std::future_status::ready
                 ? Status::OK()
                 : Status::Internal("readers did not overlap");
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
  });
  Status s = store->Run(TxnKind::kRead, {}, [&](StoreTxn& txn) -> Status {
    second_in.set_value();
    bool created = false;
    EXPECT_EQ(txn.UpsertQueue({.name = "q"}, kT0, &created).status().code(), StatusCode::kInternal);
    EXPECT_EQ(txn.NativeHandle(), nullptr);
    return txn.ListQueues().status();
  });
  first.join();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(db->data.queues.empty());
}

// ---- SPEC §11 pins: counted index steps --------------------------------------

// SendBatch in chunks of the engine's batch limit (1,000).
void SendMany(Engine& e, const std::string& queue, const OutgoingMessage& m, int n) {
  for (int sent = 0; sent < n;) {
    const int chunk = std::min(1'000, n - sent);
    std::vector<OutgoingMessage> batch(static_cast<size_t>(chunk), m);
    auto r = e.SendBatch(queue, batch);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    sent += chunk;
  }
}

struct Steps {
  int64_t claim = 0;
  int64_t maintenance = 0;
};

// Steps a Receive of `max` takes on a queue holding `backlog` ungrouped
// active messages.
Steps ClaimStepsBehindBacklog(int backlog, int max) {
  auto db = NewMemoryDatabase();
  ManualClock clock(kT0);
  auto e = OpenEngine(db, &clock);
  EXPECT_TRUE(e);
  EXPECT_TRUE(e->CreateQueue({.name = "q"}).ok());
  SendMany(*e, "q", OutgoingMessage{.body = "x"}, backlog);
  db->data.probe = {};
  auto got = e->Receive("q", {.max_messages = max});
  EXPECT_TRUE(got.ok());
  EXPECT_EQ(got->size(), static_cast<size_t>(max));
  return {db->data.probe.claim_steps, db->data.probe.maintenance_steps};
}

// Steps a Receive takes when `blocked` members of a group wait behind a
// locked head, with one ungrouped message claimable.
Steps ClaimStepsBehindBlockedGroup(int blocked, Ordering ordering) {
  auto db = NewMemoryDatabase();
  ManualClock clock(kT0);
  auto e = OpenEngine(db, &clock);
  EXPECT_TRUE(e);
  EXPECT_TRUE(e->CreateQueue({.name = "q", .ordering = ordering}).ok());
  EXPECT_TRUE(e->Send("q", {.body = "head", .group_id = std::string("g")}).ok());
  auto head = e->Receive("q");
  EXPECT_TRUE(head.ok() && head->size() == 1u);
  SendMany(*e, "q", OutgoingMessage{.body = "x", .group_id = std::string("g"), .priority = 9},
           blocked);
  if (ordering == Ordering::kStandard) {
    EXPECT_TRUE(e->Send("q", {.body = "free"}).ok());
  }
  db->data.probe = {};
  auto got = e->Receive("q", {.max_messages = 4});
  EXPECT_TRUE(got.ok());
  EXPECT_EQ(got->size(), ordering == Ordering::kStandard ? 1u : 0u);
  return {db->data.probe.claim_steps, db->data.probe.maintenance_steps};
}

TEST(MemoryStorePin, ClaimStepsDoNotGrowWithTheBacklog) {
  Steps small = ClaimStepsBehindBacklog(50, 10);
  Steps large = ClaimStepsBehindBacklog(20'000, 10);
  EXPECT_EQ(small.claim, large.claim);
  EXPECT_EQ(small.maintenance, large.maintenance);
  EXPECT_LE(large.claim, 10);  // one entry per message claimed
}

TEST(MemoryStorePin, ClaimNeverVisitsABlockedGroup) {
  for (Ordering o : {Ordering::kStandard, Ordering::kStrictFifo}) {
    Steps small = ClaimStepsBehindBlockedGroup(10, o);
    Steps large = ClaimStepsBehindBlockedGroup(20'000, o);
    EXPECT_EQ(small.claim, large.claim) << OrderingName(o);
    EXPECT_EQ(small.maintenance, large.maintenance) << OrderingName(o);
    EXPECT_LE(large.claim, 1) << OrderingName(o);
  }
}

// Maintenance walks only the entries it changes (plus the one that stops it).
TEST(MemoryStorePin, MaintenanceStepsFollowWhatIsDueNotTheBacklog) {
  for (int backlog : {10, 20'000}) {
    auto db = NewMemoryDatabase();
    ManualClock clock(kT0);
    auto e = OpenEngine(db, &clock);
    ASSERT_TRUE(e);
    MQ_ASSERT_OK(e->CreateQueue({.name = "q", .dlq_max_count = 1}));
    SendMany(*e, "q", OutgoingMessage{.body = "x", .delay_ms = 3'600'000, .ttl_ms = 7'200'000},
             backlog);
    MQ_ASSERT_OK(e->Send("q", {.body = "soon", .delay_ms = 1'000}));
    clock.Advance(2'000);
    db->data.probe = {};
    auto r = e->RunMaintenance();
    MQ_ASSERT_OK(r);
    EXPECT_EQ(r->promoted, 1);
    EXPECT_LE(db->data.probe.maintenance_steps, 2) << "backlog " << backlog;
  }
}

}  // namespace
}  // namespace mqlite
